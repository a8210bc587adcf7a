"""Paths as reports print them: never a raw control character.

A file name may hold a newline, a carriage return, an ANSI escape or a bidi
override; printed raw, a pull request can forge lines in a CI log (a fake
``::error`` command, a fake "All checks passed") or make a terminal show
something else. Every human-read report (text, concise, grouped, github,
junit, stderr errors, the fix and port reports, diff headers) prints a path
through :func:`quoted`, which leaves ordinary paths alone and writes one that
holds such characters the way git does (``core.quotePath``): in double quotes,
with C escapes (``"a\\nb.py"``), so it stays one line and reads back
unambiguously. Machine formats (JSON, SARIF, GitLab) keep the real path: their
own escaping already makes it safe.
"""

from __future__ import annotations

__all__ = ["is_plain", "quoted"]

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f", "\v": "\\v",
            "\a": "\\a", "\\": "\\\\", '"': '\\"'}  # fmt: skip


def _special(char: str) -> bool:
    # Cc: C0/C1 controls (newline, escape ...); Cf: format characters (bidi overrides,
    # zero-width joiners); Zl/Zp: Unicode's own line and paragraph separators; Cs: the
    # surrogates an undecodable file name's bytes become (no encoder writes them).
    import unicodedata  # here: plain text (the common case) never asks it (start-up)

    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs")


def is_plain(text: str) -> bool:
    """Whether ``text`` holds nothing that :func:`quoted` would escape."""
    return text.isprintable() or not any(_special(c) for c in text)


def quoted(text: str) -> str:
    """``text`` itself when plain, else git-style quoted with every special character escaped."""
    if is_plain(text):
        return text
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif _special(char):
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
