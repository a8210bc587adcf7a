"""The newer-syntax patterns of _syntax.py read any line in one pass (no catastrophic backtracking).

Each was rewritten with possessive and atomic pieces; the old spelling is kept here as the
oracle: on short generated lines the new pattern finds a match exactly where the old one did.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._syntax import _NEWER

# The patterns before the rewrite, in _NEWER's order (the t-string one was never rewritten).
_OLD = (
    r"^\s*type\s+[A-Za-z_]\w*\s*(\[[^\]]*\])?\s*=",
    r"^\s*(async\s+def|def|class)\s+[A-Za-z_]\w*\s*\[",
    r"""(?<![\w'"])[rRbB]?[fF][rR]?(?P<q>["'])[^"'\n]*\{[^}\n]*(?P=q)""",
    r"""(?<![\w'"])[rR]?[fF][rR]?["'][^"'\n]*\{[^}\n]*\\""",
    r"""(?<![\w'"])[rR]?[tT][rR]?["']""",
    r"^\s*except\*?\s+[^():\n]+,[^:\n]*:",
)
_NEW = tuple(pattern for pattern, _, _ in _NEWER)

# Lines that would each take minutes (quadratic or worse) under the old patterns. Still
# quadratic, left out: many `f'{` starts on one line without `}` (the backslash pattern scans
# to the line's end from each; a quote may come before its backslash, so no stopper is safe).
_N = 200_000
_PATHOLOGICAL = (
    "type x" + " " * _N + "y",
    "def f" + " " * _N + "(",
    "f'" + "{" * _N,
    'f"' + "{" * _N + "'",
    "except " + "," * _N,
    "except a" + "," * _N + "\n:",
)


def test_every_newer_pattern_reads_a_pathological_line_in_one_pass() -> None:
    for line in _PATHOLOGICAL:
        for pattern in _NEW:
            pattern.search(line)  # returns at once; the old patterns hung here


def test_the_rewritten_patterns_still_find_what_they_are_for() -> None:
    found = [bool(p.search(line)) for p, line in zip(_NEW, _EXAMPLES, strict=True)]
    assert found == [True] * len(_NEW)


_EXAMPLES = (
    "type Vec[T] = list[T]",
    "def first[T](xs: list[T]) -> T:",
    """f"{d["key"]}" """,
    r"""f"{'\n'.join(xs)}" """,
    't"hello {name}"',
    "except ValueError, TypeError:",
)

_LINE = st.text(alphabet="typedefclasxsync f'\"{}[]\\=,:*( \n\tT1_", max_size=24)


@settings(max_examples=600, deadline=None)
@given(_LINE)
def test_each_new_pattern_matches_where_the_old_one_did(line: str) -> None:
    for old, new in zip(_OLD, _NEW, strict=True):
        assert bool(re.search(old, line)) == bool(new.search(line)), (old, line)
        old_start = re.search(old, line)
        new_start = new.search(line)
        if old_start and new_start:
            assert old_start.start() == new_start.start()
