"""Regular expressions compiled on first use, not at import.

Compiling a pattern costs tens of microseconds, and the checker's modules hold
dozens that a check of one small file never reaches (notebook magics, requirement
specifiers, version strings): compiled at import they were a visible part of
``torchport check``'s start-up. :func:`lazy_pattern` returns a stand-in that
compiles on its first use and then holds the compiled pattern's methods and
attributes as its own, so every later use costs what a module-level
``re.compile`` costs (one attribute lookup). A pattern with an error still raises
``re.error``, at its first use instead of at import; tests/check/test_patterns.py
compiles every one of the package's patterns eagerly, so none waits for a user.
"""

from __future__ import annotations

import re

__all__ = ["MAY_GIVE_METHODS", "found_naming", "lazy_pattern", "may_give_methods", "whole_word"]

# What a compiled pattern offers (``re.Pattern``'s public methods and attributes).
_ATTRIBUTES = (
    "match", "search", "fullmatch", "finditer", "findall", "sub", "subn", "split",
    "scanner", "pattern", "flags", "groups", "groupindex",
)  # fmt: skip


class _LazyPattern:
    """A pattern compiled when one of ``re.Pattern``'s names is first read."""

    def __init__(self, pattern: str, flags: int) -> None:
        self._source = (pattern, flags)

    def compiled(self) -> re.Pattern[str]:
        """The pattern, compiled now if it was not yet (each name then read directly)."""
        compiled = re.compile(*self._source)
        for name in _ATTRIBUTES:
            setattr(self, name, getattr(compiled, name))
        self.compiled = lambda: compiled  # type: ignore[method-assign]
        return compiled

    def __getattr__(self, name: str) -> Any:
        # reached only before the first compile, or for a name re.Pattern lacks
        if name.startswith("__") or name not in _ATTRIBUTES:
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"lazy_pattern({self._source[0]!r}, {self._source[1]!r})"


TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

    def lazy_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
        """``re.compile(pattern, flags)``, done on first use."""

else:

    def lazy_pattern(pattern, flags=0):
        """``re.compile(pattern, flags)``, done on first use."""
        return _LazyPattern(pattern, int(flags))


def whole_word(text: str) -> re.Pattern[bytes]:
    """``text`` as a word of a file's bytes (no word character on either side)."""
    return re.compile(rb"(?<![\w])" + re.escape(text.encode()) + rb"(?![\w])")


def found_naming(pattern: re.Pattern[str], text: str, names: tuple[str, ...]) -> bool:
    """Whether ``pattern`` finds a match in ``text``, for a pattern each of whose matches
    holds one of ``names``: searched (and a lazy pattern compiled) only where the text holds
    one of them at all, each a plain look for a substring."""
    return any(name in text for name in names) and pattern.search(text) is not None


# A text that may give a class or object a device method at run time
# (``semantic/_dynamic_methods.py``): a device method's name stored rather than called
# (``Box.cuda = f``, ``(Box.to, x) = ...``, ``for o.cuda in ...``), a ``setattr``, or a
# ``type(...)`` call, a line continuation allowed between tokens. Every form that module reads
# holds one (a superset: it gates the walk, never decides); ``x.cuda()`` alone does not.
MAY_GIVE_METHODS = lazy_pattern(
    r"\bsetattr\b|\btype(?:\s|\\(?:\r\n?|\n))*\(|\.(?:\s|\\(?:\r\n?|\n))*"
    r"(?:to|cuda|cpu|half|bfloat16|to_empty|xpu|mps|new_zeros|new_ones|new_empty|new_full|"
    r"new_tensor|pin_memory|share_memory_|contiguous)\b(?!\s*\()"
)

# Its three alternatives apart: the first two searched only in a text holding their word, the
# third starting with a literal dot, which the engine skips to (the alternation, with no
# literal to skip to, tried all three at every character: 2.5x the time on real trees).
_SETATTR = lazy_pattern(r"\bsetattr\b")
_TYPE_CALL = lazy_pattern(r"\btype(?:\s|\\(?:\r\n?|\n))*\(")
_DOT_METHOD = lazy_pattern(
    r"\.(?:\s|\\(?:\r\n?|\n))*"
    r"(?:to|cuda|cpu|half|bfloat16|to_empty|xpu|mps|new_zeros|new_ones|new_empty|new_full|"
    r"new_tensor|pin_memory|share_memory_|contiguous)\b(?!\s*\()"
)


def may_give_methods(text: str) -> bool:
    """Whether :data:`MAY_GIVE_METHODS` finds a match in ``text`` (its alternatives apart)."""
    return (
        ("setattr" in text and _SETATTR.search(text) is not None)
        or ("type" in text and _TYPE_CALL.search(text) is not None)
        or _DOT_METHOD.search(text) is not None
    )
