"""``ast.parse`` of a large file a few top-level statements at a time: the same tree, less memory.

CPython's parser holds its C arena (tokens, the C tree) beside the Python tree it
builds from it, so parsing a whole file peaks near twice the tree (about 230 bytes per
byte of source on a dense file, where the tree alone is about 120). Parsing the file in
pieces of a few dozen KiB, each cut before a top-level statement, bounds the arena to
one piece: the peak is the tree plus one piece's arena.

A piece starts at a line that begins, at column 0, with something that can start a
statement (not a comment, not a continuation keyword: ``else``, ``elif``, ``except``,
``finally``; not right after a decorator). Such a line may still lie inside a string,
brackets or a backslash continuation: then the piece before it ends open, which never
parses, and the next cut is taken instead (a few failures, and the whole file is
parsed at once). Each piece is parsed behind as many newlines as lines come before it,
so every position is the file's own; the tree is the bodies joined in one
:class:`ast.Module`. On any error the whole file is parsed, so a syntax error is the one
``ast.parse`` raises. Files under :data:`CHUNKED_FROM` bytes are parsed whole.
"""

from __future__ import annotations

import ast
import re

__all__ = ["CHUNKED_FROM", "PIECE", "parse_in_pieces"]

CHUNKED_FROM = 512 * 1024  # smaller files: one parse (the arena is small beside the process)
PIECE = 64 * 1024  # the text parsed at once, about
_TRIES = 4  # pieces that did not parse on their own, before the whole file is parsed
# A line that may start a top-level statement: code at column 0, not a continuation.
_START = re.compile(r"^(?![ \t\f\r\n#]|(?:else|elif|except|finally)\b)", re.M)
_DECORATOR = re.compile(r"@")


def parse_in_pieces(
    source: str,
    filename: str = "<unknown>",
    *,
    chunked_from: int = CHUNKED_FROM,
    piece: int = PIECE,
) -> ast.Module:
    """``ast.parse(source, filename)``, parsed a piece at a time when ``source`` is large.

    The tree is equal to ``ast.parse``'s, positions included; errors are its errors.
    """
    if len(source) < chunked_from or "\r" in source or "barry_as_FLUFL" in source:
        return ast.parse(source, filename=filename)  # (lone `\r` ends lines too; `<>`)
    try:
        body = _pieces(source, filename, piece)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        body = None
    if body is None:
        return ast.parse(source, filename=filename)  # its tree, or its error
    return ast.Module(body=body, type_ignores=[])


def _pieces(source: str, filename: str, piece: int) -> list[ast.stmt] | None:
    """The statements of every piece, or None when the cuts found do not hold."""
    cuts = [m.start() for m in _START.finditer(source) if m.start() > 0]
    cuts = [c for c in cuts if not _after_a_decorator(source, c)]
    body: list[ast.stmt] = []
    start = 0
    line = 0  # the lines before `start`
    failures = 0
    i = 0
    while start < len(source):
        end = len(source)
        while i < len(cuts) and cuts[i] - start < piece:
            i += 1
        if i < len(cuts):
            end = cuts[i]
        text = source[start:end]
        try:
            tree = ast.parse("\n" * line + text, filename=filename)
        except SyntaxError:
            if end == len(source):
                return None
            failures += 1
            if failures > _TRIES:
                return None
            i += 1  # the cut is inside a string, brackets or a block: take the next one
            continue
        body.extend(tree.body)
        line += text.count("\n")
        start = end
    return body


def _after_a_decorator(source: str, cut: int) -> bool:
    """Whether the line before ``cut`` is a decorator's (the statement goes on past it)."""
    before = source.rfind("\n", 0, cut - 1) + 1
    return _DECORATOR.match(source, before) is not None
