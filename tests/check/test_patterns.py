"""Patterns compiled on first use (``check/_patterns.py``) behave as ``re.compile``'s.

The oracle is ``re`` itself: every method and attribute of a lazy pattern, before
and after its first use, against the compiled pattern on generated texts; and every
lazy pattern the package holds compiles (an error must not wait for a user's file).
"""

from __future__ import annotations

import importlib
import pkgutil
import re

from hypothesis import given
from hypothesis import strategies as st

import torchport.check
from torchport.check._patterns import _ATTRIBUTES, _LazyPattern, found_naming, lazy_pattern
from torchport.check.rules._cuda_projects import _CALLED_IMPORT, _CALLED_PACKAGES

PATTERNS = [
    (r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE),
    (r"(?<=\n)|(?<=\r)(?!\n)", 0),
    (r"^\s*(\d+)\.(\d+)(?:\.\d+)?\s*$", re.MULTILINE),
    (r"[\s,]+", 0),
]
TEXT = st.text(alphabet="# noqa:TP101,\n\r 2.4.0x", max_size=40)


def _calls(pattern: re.Pattern[str], text: str) -> list[object]:
    """What each method of ``pattern`` gives on ``text``, as comparable values."""

    def span(m: re.Match[str] | None) -> object:
        return None if m is None else (m.span(), m.groups(), m.groupdict())

    return [
        span(pattern.match(text)),
        span(pattern.search(text)),
        span(pattern.fullmatch(text)),
        [span(m) for m in pattern.finditer(text)],
        pattern.findall(text),
        pattern.sub("<>", text),
        pattern.subn(lambda m: m.group(0)[::-1], text),
        pattern.split(text),
        span(pattern.search(text, 1, 5)),
        (pattern.pattern, pattern.flags, pattern.groups, dict(pattern.groupindex)),
    ]


@given(st.sampled_from(PATTERNS), TEXT, st.booleans())
def test_a_lazy_pattern_answers_as_the_compiled_one(
    source: tuple[str, int], text: str, attribute_first: bool
) -> None:
    compiled = re.compile(*source)
    lazy = lazy_pattern(*source)
    if attribute_first:  # the first use is an attribute, not a method
        assert lazy.groups == compiled.groups
    assert _calls(lazy, text) == _calls(compiled, text)
    assert _calls(lazy, text) == _calls(compiled, text)  # and after it is compiled


def test_a_lazy_pattern_with_an_error_raises_re_error_at_first_use() -> None:
    lazy = lazy_pattern(r"(unclosed")
    for _ in range(2):
        try:
            lazy.match("x")
        except re.error:
            pass
        else:
            raise AssertionError("a broken pattern matched")


def test_a_name_re_pattern_lacks_is_an_attribute_error() -> None:
    lazy = lazy_pattern("a")
    for name in ("nope", "__deepcopy__", "__len__"):
        assert not hasattr(lazy, name)
    assert lazy.match("a") is not None
    assert not hasattr(lazy, "nope")


def test_every_lazy_pattern_of_the_package_compiles() -> None:
    found = 0
    for info in pkgutil.walk_packages(torchport.check.__path__, "torchport.check."):
        if ".port" in info.name:
            continue  # loads nothing lazily here; keeps the test quick
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            candidates = value if isinstance(value, tuple) else (value,)
            for item in candidates:
                parts = item if isinstance(item, tuple) else (item,)
                for part in parts:
                    if isinstance(part, _LazyPattern):
                        compiled = part.compiled()
                        assert all(getattr(part, n) == getattr(compiled, n) for n in _ATTRIBUTES)
                        found += 1
    assert found >= 25, found  # 27 when written: the test sees them


# Texts of import lines, the package names and pieces of them (`ap`, `amp`), word and
# non-word neighbours (`_`, `.`, `é`), for a pattern each of whose matches holds a name.
_PIECES = st.sampled_from(
    ["import ", "from ", "\n", " ", "\t", "x", "_", ".", ",", "é", "ap", "amp", "cut", "C",
     *_CALLED_PACKAGES]
)  # fmt: skip
_IMPORT_TEXT = st.lists(_PIECES, max_size=12).map("".join)


@given(_IMPORT_TEXT, st.sampled_from([_CALLED_PACKAGES, ("apex", "amp_C"), ("cutlass",)]))
def test_found_naming_answers_as_the_search_and_compiles_only_for_a_name(
    text: str, names: tuple[str, ...]
) -> None:
    # the oracle: the pattern searched with `re` alone (CUDA packages' import lines as
    # rules/_cuda_projects.py looks for them, on its own names and on fewer)
    source = r"\n[ \t]*(?:import|from)[ \t][^\n]*\b(?:" + "|".join(names) + r")\b"
    lazy = lazy_pattern(source)
    assert found_naming(lazy, text, names) == (re.search(source, text) is not None)
    assert ("search" in vars(lazy)) == any(name in text for name in names)  # compiled
    shipped = _CALLED_IMPORT._source[0]  # type: ignore[attr-defined]
    expected = re.search(shipped, text) is not None
    assert found_naming(_CALLED_IMPORT, text, _CALLED_PACKAGES) == expected
