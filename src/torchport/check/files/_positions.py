"""Where a finding in the fixed text lies in the text on disk (``fix --diff`` writes nothing).

``fix --diff`` checks the fixed text for what is left, but the file keeps its old text:
a position in the fixed text (line 8 of a 5-line file) names nothing the reader can open.
Lines the fix kept map to where they stand on disk; a finding in a line the fix rewrote
points at the disk line it most resembles among those the fix replaced (or at the first of
them; for inserted lines, the line they come before) and says so.
"""

from __future__ import annotations

import difflib
from dataclasses import replace

from torchport.check._rule import Finding

__all__ = ["on_disk"]


def on_disk(findings: list[Finding], fixed: str, original: str) -> list[Finding]:
    """``findings`` (positions in ``fixed``) moved to their positions in ``original``."""
    if not findings or fixed == original:
        return findings
    old, new = original.splitlines(), fixed.splitlines()
    blocks = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()

    def where(line: int) -> tuple[int, tuple[int, int] | None]:
        """(line on disk, the disk lines replaced when ``line`` is text the fix wrote)."""
        at = line - 1
        for tag, i1, i2, j1, j2 in blocks:
            if j1 <= at < j2:
                if tag == "equal":
                    return i1 + (at - j1) + 1, None
                first = min(i1 + 1, max(len(old), 1))
                like = _most_like(new[at], old[i1:i2])
                if like is not None:
                    return i1 + like + 1, (i1 + like + 1, i1 + like + 1)
                return first, (first, max(i2, first))
        return max(len(old), 1), (max(len(old), 1), max(len(old), 1))

    out = []
    for f in findings:
        line, written = where(f.line)
        if written is None:
            end, end_written = where(f.end_line)
            if end_written is not None or end < line:
                end = line
            out.append(replace(f, line=line, end_line=end))
            continue
        lo, hi = written
        lines = f"line {lo}" if lo == hi else f"lines {lo}-{hi}"
        out.append(
            replace(
                f,
                line=line,
                col=1,
                end_line=line,
                end_col=1,
                message=f"{f.message} (in the text the fix writes for {lines})",
            )
        )
    return out


def _most_like(line: str, candidates: list[str]) -> int | None:
    """The index of the candidate ``line`` was rewritten from (similar enough), if any."""
    best, score = None, 0.6
    for i, old in enumerate(candidates):
        ratio = difflib.SequenceMatcher(None, old.strip(), line.strip(), autojunk=False).ratio()
        if ratio > score:
            best, score = i, ratio
    return best
