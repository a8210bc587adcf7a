"""Where a finding in fixed text lies in the text on disk: for runs that write nothing.

``fix --diff`` and ``port --diff``/``--check`` report what would be left after
the fixes, but the fixed text exists only in the diff: a position in it
(``t.py:7`` in a file of four lines) points nowhere a reader can look. A
finding on a line the fixes leave as it is maps to that same line on disk (its
columns too, the line being identical); one on a line the fixes write has no
place on disk, and is counted instead (the diff shows that line).

Lines are counted as Python counts them (``\\n``, ``\\r\\n`` and ``\\r``), the
way finding positions are, not as :meth:`str.splitlines` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchport.check._patterns import lazy_pattern
from torchport.check._records import replace
from torchport.check._rule import Finding

__all__ = ["to_original"]

_LINE_END = lazy_pattern(r"\r\n|\r|\n")


def _lines(text: str) -> list[str]:
    lines = _LINE_END.split(text)
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # what follows the last line end is not a line
    return lines


def _line_map(fixed: str, original: str) -> dict[int, int]:
    """1-based line of ``fixed`` -> 1-based line of ``original``, for lines the fix left alone."""
    import difflib  # here: only a fix (a dry run) maps lines back: `check` never loads it

    new, old = _lines(fixed), _lines(original)
    matcher = difflib.SequenceMatcher(None, new, old, autojunk=False)
    mapping: dict[int, int] = {}
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                mapping[i1 + k + 1] = j1 + k + 1
    return mapping


def to_original(
    findings: Sequence[Finding], fixed: str, original: str
) -> tuple[list[Finding], int]:
    """``findings`` in ``fixed`` moved to their lines in ``original``; and how many have none.

    A finding keeps its place only when every line it spans is one the fixes did
    not change (so its text, and each column, is the same on disk).
    """
    if fixed == original or not findings:
        return list(findings), 0
    mapping = _line_map(fixed, original)
    placed: list[Finding] = []
    unplaced = 0
    for f in findings:
        lines = [mapping.get(n) for n in range(f.line, f.end_line + 1)]
        first = lines[0]
        # Consecutive on disk too: no line of the span was inserted or removed.
        if first is None or lines != list(range(first, first + len(lines))):
            unplaced += 1
            continue
        placed.append(replace(f, line=first, end_line=first + len(lines) - 1))
    return placed, unplaced
