"""Which findings the source itself asks to silence with ``# noqa`` comments.

Forms (case-insensitive, as in Ruff/flake8):

* ``# noqa`` silences every finding it applies to;
* ``# noqa: TP101,TP2`` silences the listed codes; a code is also a prefix
  (``TP2`` covers ``TP201``). Other tools' codes (``E501``) are ignored, so
  ``# noqa: E501`` silences nothing of ours;
* ``# torchport: noqa`` on a line of its own silences the whole file, and
  ``# torchport: noqa: TP101`` silences those codes in the whole file.

Which lines a comment covers: a ``# noqa`` on line L silences a finding when L
lies within the finding's own span (``line`` to ``end_line``), or when the
finding sits inside a *simple* statement (an assignment, a call, a
``return`` ...) that spans line L. So a call split over several lines can carry
its comment on its closing line. Compound statements (``for``, ``if``, ``def``
...) do not count as "the statement", otherwise one comment in a loop body
would silence the loop header.

Only real comments count: the source is tokenized (once, and only when the text
``noqa`` appears in it at all), so ``"# noqa"`` inside a string does nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

__all__ = ["NoqaMap", "parse_noqa"]

_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_FILE_NOQA = re.compile(
    r"^#\s*torchport\s*:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"[\s,]+")
_ANY = re.compile("noqa", re.IGNORECASE)


def _codes(text: str | None) -> frozenset[str] | None:
    """``None`` means "every code" (a blanket noqa)."""
    if text is None:
        return None
    return frozenset(code.upper() for code in _SPLIT.split(text.strip()) if code)


def _matches(codes: frozenset[str] | None, code: str) -> bool:
    if codes is None:
        return True
    return any(code.startswith(prefix) for prefix in codes)


@dataclass(slots=True)
class NoqaMap:
    """The ``# noqa`` comments of one file: line number -> codes (``None``: all codes)."""

    lines: dict[int, frozenset[str] | None] = field(default_factory=dict)
    file_codes: frozenset[str] | None = frozenset()  # file-wide; empty set: none

    def __bool__(self) -> bool:
        return bool(self.lines) or self.file_codes is None or bool(self.file_codes)

    def silences(self, code: str, first: int, last: int) -> bool:
        """Whether ``code`` is silenced by a comment on any line from ``first`` to ``last``."""
        if self.file_codes is None or _matches(self.file_codes, code):
            return True
        lines = self.lines
        if last - first > len(lines):
            return any(first <= n <= last and _matches(c, code) for n, c in lines.items())
        return any(n in lines and _matches(lines[n], code) for n in range(first, last + 1))


def _comments(source: str) -> list[tuple[int, str, bool]]:
    """(line, comment text, whether the comment is alone on its line) for every comment."""
    out: list[tuple[int, str, bool]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                alone = not tok.line[: tok.start[1]].strip()
                out.append((tok.start[0], tok.string, alone))
    except (tokenize.TokenError, SyntaxError):
        # The file parsed with ast but tokenize disagrees (rare edge cases): fall
        # back to a line scan, which may treat a '#' inside a string as a comment.
        out = []
        for number, line in enumerate(source.splitlines(), start=1):
            hash_at = line.find("#")
            if hash_at >= 0:
                out.append((number, line[hash_at:], not line[:hash_at].strip()))
    return out


def parse_noqa(source: str) -> NoqaMap:
    """Collect the ``# noqa`` comments of ``source`` (which must already parse)."""
    noqa = NoqaMap()
    if _ANY.search(source) is None:
        return noqa
    file_codes: set[str] = set()
    for line, text, alone in _comments(source):
        if alone:
            file_match = _FILE_NOQA.match(text)
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
    noqa.file_codes = frozenset(file_codes)
    return noqa
