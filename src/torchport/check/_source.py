"""Positions and text edits in one file's source, for rules that report and fix.

``ast`` gives 1-based lines and UTF-8 *byte* columns; findings and edits use
*character* offsets into the decoded text, so the two meet here. Line starts are
found once per file, and pure-ASCII files skip the byte-to-character step.
"""

from __future__ import annotations

import ast
import re

from torchport.check._rule import Edit

__all__ = ["SourceText"]

_NEWLINE = re.compile(r"\r\n?|\n")


class SourceText:
    """One file's text, with ``ast`` positions turned into character offsets and edits."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._ascii = source.isascii()
        self._starts: list[int] | None = None
        self._mentions: dict[str, bool] = {}
        first_nl = source.find("\n")
        self.newline = "\r\n" if first_nl > 0 and source[first_nl - 1] == "\r" else "\n"

    def _line_starts(self) -> list[int]:
        starts = self._starts
        if starts is None:
            # Index 0 unused so that starts[lineno] is the offset of line `lineno`.
            starts = [0, 0]
            starts.extend(m.end() for m in _NEWLINE.finditer(self.source))
            self._starts = starts
        return starts

    def offset(self, lineno: int, col_offset: int) -> int:
        """Character offset of an ``ast`` position (whose ``col_offset`` counts UTF-8 bytes)."""
        starts = self._line_starts()
        start = starts[lineno] if lineno < len(starts) else len(self.source)
        if self._ascii or not col_offset:
            return start + col_offset
        end = starts[lineno + 1] if lineno + 1 < len(starts) else len(self.source)
        line = self.source[start:end]
        if line.isascii():
            return start + col_offset
        return start + len(line.encode("utf-8")[:col_offset].decode("utf-8", "replace"))

    def start(self, node: ast.AST) -> int:
        """Character offset where ``node`` starts."""
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        """Character offset just after ``node``."""
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def segment(self, node: ast.AST) -> str:
        """The source text of ``node``."""
        return self.source[self.start(node) : self.end(node)]

    def replace(self, node: ast.AST, text: str) -> Edit:
        """An edit replacing ``node``'s text with ``text``."""
        return Edit(self.start(node), self.end(node), text)

    def indent_of(self, node: ast.AST) -> str:
        """The whitespace that opens the line on which ``node`` starts."""
        at = self._line_starts()[node.lineno]  # type: ignore[attr-defined]
        end = self.source.find("\n", at)
        line = self.source[at : end if end >= 0 else len(self.source)]
        return line[: len(line) - len(line.lstrip(" \t"))]

    def mentions(self, text: str) -> bool:
        """Whether the source contains ``text`` anywhere (searched once per file and text)."""
        found = self._mentions.get(text)
        if found is None:
            found = self._mentions[text] = text in self.source
        return found

    def owns_lines(self, stmt: ast.stmt) -> bool:
        """Whether ``stmt`` alone fills its lines (nothing before it, only a comment after)."""
        start, end = self.start(stmt), self.end(stmt)
        if self.source[self._line_starts()[stmt.lineno] : start].strip(" \t"):
            return False
        rest_end = self.source.find("\n", end)
        rest = self.source[end : rest_end if rest_end >= 0 else len(self.source)].strip()
        return not rest or rest.startswith("#")
