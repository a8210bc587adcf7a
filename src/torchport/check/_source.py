"""Positions and text edits in one file's source, for rules that report and fix.

``ast`` gives 1-based lines and UTF-8 *byte* columns; findings and edits use
*character* offsets into the decoded text, so the two meet here. Line starts are
found once per file, and pure-ASCII files skip the byte-to-character step.

An expression's ``ast`` span leaves out the parentheses around it: in
``(x + 1).numpy()`` the receiver spans ``x + 1``. An edit that goes after a
receiver or an argument goes after those parentheses
(:meth:`SourceText.receiver_end`, :meth:`SourceText.after_parens`), and an edit
that appends a method call to an expression wraps the whole expression
(:meth:`SourceText.append_call`), so that it never applies to one operand.
"""

from __future__ import annotations

import ast
from itertools import accumulate

from torchport.check._patterns import lazy_pattern
from torchport.check._rule import Edit

__all__ = ["SourceText"]

_NEWLINE = lazy_pattern(r"\r\n?|\n")
_PLUS_ONE = (1).__add__
# Expressions that bind tighter than an attribute access: `.m()` after one applies to all of it.
_PRIMARY = (
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Call,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.JoinedStr,
)


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
            source = self.source
            if "\r" in source:
                starts.extend(m.end() for m in _NEWLINE.finditer(source))
            else:  # each line's length plus its "\n", summed at C speed
                pieces = source.split("\n")
                pieces.pop()  # what follows the last line end starts no further line
                starts.extend(accumulate(map(_PLUS_ONE, map(len, pieces))))
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

    def after_parens(self, at: int, limit: int | None = None) -> int:
        """Offset after the closing parentheses that follow ``at``, up to ``limit``.

        Skips spaces, comments and line continuations between them; stops at any
        other character, or at ``limit`` (a call's own closing parenthesis).
        """
        source = self.source
        end = len(source) if limit is None else limit
        found = i = at
        while i < end:
            c = source[i]
            if c == ")":
                i += 1
                found = i
            elif c in " \t\r\n\\\f":
                i += 1
            elif c == "#":
                newline = source.find("\n", i)
                i = end if newline < 0 else newline
            else:
                break
        return found

    def receiver_end(self, attribute: ast.Attribute) -> int:
        """Offset just after the receiver of ``recv.attr``, after the parentheses around it.

        In ``(x + 1).numpy()`` that is after ``)``: text inserted there applies to
        the whole receiver, not to its last operand.
        """
        return self.after_parens(self.end(attribute.value))

    def argument_end(self, call: ast.Call, arg: ast.AST) -> int:
        """Offset just after argument ``arg`` of ``call``, after the parentheses around it."""
        return self.after_parens(self.end(arg), self.end(call) - 1)

    def argument_start(self, call: ast.Call, index: int) -> int:
        """Offset where positional argument ``index`` of ``call`` begins, before its parentheses.

        Just after the call's ``(`` for the first, else after the comma that ends
        the one before it (and the spaces after that comma).
        """
        source = self.source
        if index == 0:
            at = source.index("(", self.after_parens(self.end(call.func)))
        else:
            at = source.index(",", self.argument_end(call, call.args[index - 1]))
        at += 1
        while at < len(source) and source[at] in " \t":
            at += 1
        return at

    def append_call(self, expr: ast.expr, text: str) -> tuple[Edit, ...]:
        """Edits appending ``text`` (``".to(device)"``) to the whole of ``expr``.

        A primary expression (a name, call, subscript ...) takes it as it is; any
        other (``a + b``, ``-x``, ``a if c else b``) is wrapped in parentheses first.
        """
        if isinstance(expr, _PRIMARY) or (
            isinstance(expr, ast.Constant) and isinstance(expr.value, str | bytes)
        ):
            at = self.end(expr)
            return (Edit(at, at, text),)
        start, end = self.start(expr), self.end(expr)
        return (Edit(start, start, "("), Edit(end, end, ")" + text))
