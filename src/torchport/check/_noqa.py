"""Which findings the source itself asks to silence with ``# noqa`` comments.

Forms (case-insensitive, as in Ruff/flake8):

* ``# noqa`` silences every finding it applies to;
* ``# noqa: TP101,TP2`` silences the listed codes; a code is also a prefix
  (``TP2`` covers ``TP201``). Other tools' codes (``E501``) are ignored, so
  ``# noqa: E501`` silences nothing of ours;
* ``# torchport: noqa`` on a line of its own silences the whole file, and
  ``# torchport: noqa: TP101`` silences those codes in the whole file;
* other tools' file-wide forms count too (a generated file carries one, not
  ours): ``# ruff: noqa`` silences the whole file and ``# ruff: noqa: TP101``
  those codes (Ruff reads the same line; its own codes there are ignored here);
  ``# flake8: noqa`` silences the whole file (flake8 ignores the form with
  codes, and so does torchport). The setting ``respect-foreign-noqa = false``
  (``parse_noqa(foreign=False)``) turns these off, keeping only ``torchport:``.

A ``TP`` code that names no rule (``# noqa: TP999``, a typo or a removed rule)
silences nothing, so :func:`unknown_codes` finds them and the checker reports
each as an error naming the line (exit 2), as it does for unknown codes in
``--select`` or the config. Ruff reports them as a finding of its own rule
(RUF102) because its ``noqa`` comments are shared with dozens of flake8
plugins whose codes it cannot know; ours are checked only inside our own
``TP`` prefix, so an unknown one is always a mistake, and the same mistake in
the config is already an error.

Which lines a comment covers: a ``# noqa`` on line L silences a finding when L
lies within the finding's own span (``line`` to ``end_line``), or when the
finding sits inside a *simple* statement (an assignment, a call, a
``return`` ...) that spans line L. So a call split over several lines can carry
its comment on its closing line. Compound statements (``for``, ``if``, ``def``
...) do not count as "the statement", otherwise one comment in a loop body
would silence the loop header.

Only real comments count: one regex pass that skips string literals (run only
when the text ``noqa`` appears in the file at all), so ``"# noqa"`` inside a
string does nothing.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from torchport.check._patterns import lazy_pattern
from torchport.check._records import field, record

__all__ = ["NoqaMap", "add_noqa_comments", "parse_noqa", "unknown_codes"]

_NOQA = lazy_pattern(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_FILE_NOQA = lazy_pattern(
    r"^#\s*(?P<tool>torchport|ruff|flake8)\s*:\s*noqa"
    r"(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_SPLIT = lazy_pattern(r"[\s,]+")
_TYPE_COMMENT = lazy_pattern(r"#\s*type:")  # PEP 484: read only where a comment starts
_ANY = lazy_pattern("noqa", re.IGNORECASE)
# Each literal as one "unrolled" loop (a run of plain characters, then one escape or
# lone quote, and again), which the regex engine takes in long strides.
_STRING = (
    r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"  # '''...'''
    r'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'  # """..."""
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"  # '...'
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'  # "..."
)
_STRINGS_OR_COMMENTS = lazy_pattern(f"(?:{_STRING})|(?P<comment>#[^\\r\\n]*)", re.DOTALL)


def _codes(text: str | None) -> frozenset[str] | None:
    """``None`` means "every code" (a blanket noqa)."""
    if text is None:
        return None
    return frozenset(code.upper() for code in _SPLIT.split(text.strip()) if code)


def _matches(codes: frozenset[str] | None, code: str) -> bool:
    if codes is None:
        return True
    return any(code.startswith(prefix) for prefix in codes)


@record()
class NoqaMap:
    """The ``# noqa`` comments of one file: line number -> codes (``None``: all codes).

    ``used`` records, as :meth:`silences` answers, which (line, code of the
    comment) silenced something, so :meth:`unused` can name the codes that no
    longer do; ``columns`` holds where each comment starts, for that report.
    """

    lines: dict[int, frozenset[str] | None] = field(default_factory=dict)
    file_codes: frozenset[str] | None = frozenset()  # file-wide; empty set: none
    columns: dict[int, int] = field(default_factory=dict)
    used: set[tuple[int, str | None]] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.lines) or self.file_codes is None or bool(self.file_codes)

    def silences(self, code: str, first: int, last: int) -> bool:
        """Whether ``code`` is silenced by a comment on any line from ``first`` to ``last``."""
        if self.file_codes is None or _matches(self.file_codes, code):
            return True
        lines = self.lines
        if last - first > len(lines):
            candidates: Iterable[int] = sorted(n for n in lines if first <= n <= last)
        else:
            candidates = (n for n in range(first, last + 1) if n in lines)
        for n in candidates:
            codes = lines[n]
            if codes is None:
                self.used.add((n, None))
                return True
            for prefix in codes:
                if code.startswith(prefix):
                    self.used.add((n, prefix))
                    return True
        return False

    def unused(self, ran: Collection[str]) -> list[tuple[int, int, str]]:
        """``(line, column, code)`` of each ``TP`` code in a line's comment that silenced nothing.

        Only codes that some rule in ``ran`` (the codes of the rules that ran on
        this file) matches are judged: a comment for a rule that did not run may
        well be needed when it does. Blanket comments (``# noqa``) and file-wide
        ones are not judged (other tools read them too; a file-wide code's rule
        does not run at all).
        """
        out = []
        for line, codes in self.lines.items():
            for code in sorted(codes or ()):
                judged = code.startswith("TP") and any(r.startswith(code) for r in ran)
                if judged and (line, code) not in self.used:
                    out.append((line, self.columns.get(line, 1), code))
        return sorted(out)


def _comments(source: str) -> list[tuple[int, str, bool, int]]:
    """(line, text, alone on its line, 1-based column) of every comment that mentions noqa.

    One C-level regex pass that skips string literals (triple-quoted ones
    included), far cheaper than :mod:`tokenize` on the large files where
    ``noqa`` shows up; it stops at the line of the last ``noqa``. (Python 3.12
    f-strings that nest the same quote can fool it; a ``#`` inside one would then
    count as a comment.) The last answer is kept: checking a file asks twice,
    for unknown codes and for what the comments silence.
    """
    global _last
    kept = _last  # read once: another thread may replace it meanwhile
    if kept is not None and kept[0] is source:
        return kept[1]
    found: list[tuple[int, str, bool, int]] = []
    last = _last_noqa(source)
    if last >= 0:
        line, at = 1, 0
        for match in _STRINGS_OR_COMMENTS.finditer(source):
            if match.start() > last:
                break  # (a literal that runs past `last` still matched whole: no false comment)
            text = match["comment"]
            if text is None or _ANY.search(text) is None:
                continue
            start = match.start()
            line += _line_ends(source, at, start)
            at = start
            line_start = max(source.rfind("\n", 0, start), source.rfind("\r", 0, start)) + 1
            found.append((line, text, not source[line_start:start].strip(), start - line_start + 1))
    _last = (source, found)
    return found


_last: tuple[str, list[tuple[int, str, bool, int]]] | None = None


def _line_ends(source: str, start: int, end: int) -> int:
    """Line ends in ``source[start:end]`` as Python counts them: ``\r\n``, ``\r``, ``\n``."""
    newlines = source.count("\n", start, end)
    returns = source.count("\r", start, end)
    if not returns:
        return newlines
    return newlines + returns - source.count("\r\n", start, end)


_KEEP_ENDS = lazy_pattern(r"(?<=\n)|(?<=\r)(?!\n)")


def _last_noqa(source: str) -> int:
    """Offset of the last ``noqa`` in any case, -1 when there is none."""
    if source.isascii():  # lowering keeps every offset: two C passes
        return source.lower().rfind("noqa")
    last = -1
    for hit in _ANY.finditer(source):
        last = hit.start()
    return last


def parse_noqa(source: str, *, foreign: bool = True) -> NoqaMap:
    """Collect the ``# noqa`` comments of ``source`` (which must already parse).

    ``foreign``: whether ``# ruff: noqa`` and ``# flake8: noqa`` exempt the file too.
    """
    noqa = NoqaMap()
    file_codes: set[str] = set()
    for line, text, alone, column in _comments(source):
        if alone:
            file_match = _FILE_NOQA.match(text)
            tool = None if file_match is None else file_match["tool"].lower()
            if file_match is not None and tool != "torchport" and not foreign:
                continue  # another tool's file exemption, not honoured: not a line noqa either
            if file_match is not None and tool == "flake8" and file_match["codes"] is not None:
                continue  # flake8 ignores a file exemption listing codes (it warns); so do we
            if file_match is not None:
                codes = _codes(file_match["codes"])
                if codes is None:
                    noqa.file_codes = None
                    return noqa
                file_codes |= codes
                continue
        match = _NOQA.search(text)
        if match is not None:
            noqa.lines[line] = _codes(match["codes"])
            noqa.columns[line] = column + match.start()
    noqa.file_codes = frozenset(file_codes)
    return noqa


def unknown_codes(source: str, known: Collection[str]) -> list[tuple[int, str]]:
    """(line, code) of every ``TP`` code in a ``# noqa`` comment that matches no rule in ``known``.

    A code counts as known when it is a prefix of a known code (``TP2``), as it
    is when silencing. Codes of other tools (``E501``) are not ours to judge.
    """
    found: list[tuple[int, str]] = []
    for line, text, alone, _ in _comments(source):
        match = (_FILE_NOQA.match(text) if alone else None) or _NOQA.search(text)
        if match is None or match["codes"] is None:
            continue
        for code in sorted(_codes(match["codes"]) or ()):
            if code.startswith("TP") and not any(k.startswith(code) for k in known):
                found.append((line, code))
    return found


def _commentable_lines(source: str) -> tuple[set[int], dict[int, tuple[int, int, str]]]:
    """Lines whose end is outside any string and continuation, and their comments.

    Returns the lines after which ``  # noqa: ...`` may be written (a line ending
    inside a triple-quoted string or after a backslash may not), and for lines
    that already hold a comment, its (start, end) offsets within the line and text.
    """
    import io
    import tokenize

    ends: set[int] = set()
    comments: dict[int, tuple[int, int, str]] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.NEWLINE, tokenize.NL):
            ends.add(token.start[0])
        elif token.type == tokenize.COMMENT:
            comments[token.start[0]] = (token.start[1], token.end[1], token.string)
    return ends, comments


def add_noqa_comments(source: str, codes_by_line: dict[int, set[str]]) -> tuple[str, set[int]]:
    """``source`` with ``# noqa: CODES`` on each line of ``codes_by_line``; lines it could not mark.

    A line that already has a ``# noqa: ...`` comment gets the codes added to it
    (``# noqa: E501, TP101``); another comment keeps its text after the new one
    (``x  # noqa: TP101  # note``), except a PEP 484 type comment (``# type: int``,
    ``# type: ignore[...]``), which type checkers read only where a comment
    starts: the new one follows it (``x  # type: ignore  # noqa: TP101``). A line
    whose end lies inside a string or after a backslash continuation cannot hold
    a comment and is returned, untouched.

    Raises:
        SyntaxError: ``source`` cannot be tokenized.
    """
    ends, comments = _commentable_lines(source)
    lines = _KEEP_ENDS.split(source)  # the lines Python counts, each with its ending
    refused: set[int] = set()
    for number, codes in sorted(codes_by_line.items()):
        if number not in ends or not 0 < number <= len(lines):
            refused.add(number)
            continue
        raw = lines[number - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body) :]
        comment = comments.get(number)
        wanted = ", ".join(sorted(codes))
        if comment is None:
            body = f"{body.rstrip()}  # noqa: {wanted}"
        else:
            start, _, text = comment
            match = _NOQA.search(text)
            if match is not None and match["codes"] is None:
                continue  # a blanket noqa silences everything already
            if match is not None:
                at = start + match.end("codes")
                body = f"{body[:at]}, {wanted}{body[at:]}"
            elif _TYPE_COMMENT.match(text):
                body = f"{body.rstrip()}  # noqa: {wanted}"
            else:
                body = f"{body[:start]}# noqa: {wanted}  {body[start:]}"
        lines[number - 1] = body + ending
    return "".join(lines), refused
