"""The requirement patterns read any line in one pass, and find what the old spellings found.

Each of ``_requirements``' patterns that could backtrack on a long run (quadratic, one of them
cubic) was rewritten with possessive pieces, or told to try a run from its start only. The old
spellings are kept here as the oracle: on short generated texts the new pattern gives the same
split, substitution or items as the old one did.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check.files import _requirements as requirements

_OLD_PEP508 = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<rest>[^;#]*)"
    r"(?P<marker>;[^#]*)?(?:#.*)?$"
)
_OLD_SEPARATOR = re.compile(r"[,\s]+(?=[<>=!~^\dv*])")
_OLD_BUILD = re.compile(r"\s+[A-Za-z_*]\S*$")
_OLD_YAML_ITEM = re.compile(r"^\s*-\s+([^#\n]*?)\s*(?:#.*)?$", re.MULTILINE)

# Texts that took seconds to minutes under the old patterns (20,000 characters: 7 s for the
# items, 3 s for the split; the PEP 508 line with a newline did not end in 200 s).
_N = 200_000
_SLOW = (
    (requirements._PEP508.match, "a" + " " * _N + "#\nx"),
    (requirements._SEPARATOR.split, "," * _N + "x"),
    (requirements._BUILD.search, " " * _N + "x y"),
    (requirements._YAML_ITEM.findall, "- a" + " " * _N + "b\nx"),
)


def test_each_pattern_reads_a_pathological_text_in_one_pass() -> None:
    for read, text in _SLOW:
        read(text)  # returns at once; the old patterns hung here


def test_they_still_read_real_requirements() -> None:
    assert requirements.requirement_floor(["torch >= 2.4, <3  # pinned", "numpy"]) == (2, 4)
    assert requirements._conda_floor(["pytorch>=2.5 cuda*"]) == (2, 5)
    found = requirements._YAML_ITEM.findall(
        "deps:\n  - pytorch=2.6  # gpu\n  - pip:\n    - torch>=2.7\n"
    )
    assert [item.strip() for item in found] == ["pytorch=2.6", "pip:", "torch>=2.7"]


_TEXT = st.text(alphabet="torch-_.[]; #,<>=!~^2v*x \t\n", max_size=30)


@settings(max_examples=800, deadline=None)
@given(_TEXT)
def test_the_pep508_line_matches_as_before(line: str) -> None:
    old, new = _OLD_PEP508.match(line), requirements._PEP508.match(line)
    assert (old is None) == (new is None), line
    if old is not None and new is not None:
        assert old.groupdict() == new.groupdict(), line


@settings(max_examples=800, deadline=None)
@given(_TEXT)
def test_the_separator_splits_as_before(text: str) -> None:
    assert _OLD_SEPARATOR.split(text) == requirements._SEPARATOR.split(text), text


@settings(max_examples=800, deadline=None)
@given(_TEXT)
def test_the_build_string_goes_as_before(text: str) -> None:
    assert _OLD_BUILD.sub("", text) == requirements._BUILD.sub("", text), text


@settings(max_examples=800, deadline=None)
@given(st.text(alphabet="-ab #:\t\n'\"", max_size=30))
def test_the_yaml_items_are_found_as_before(text: str) -> None:
    old = [item.strip() for item in _OLD_YAML_ITEM.findall(text)]
    new = [item.strip() for item in requirements._YAML_ITEM.findall(text)]
    assert old == new, text
