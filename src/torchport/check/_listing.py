"""A span of work during which the checked tree's folders hold still.

Inside :func:`listed_once` (a chunk of checked files: a check writes nothing while it
reads) what is worked out from folder listings may be kept for the whole span instead
of one file's question: :func:`held` gives the span's store (None outside one). The
port's module lookups keep their folder listings and answers there
(``check/port/_module_files.py``), so a chunk reads each folder once, not once per file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["held", "listed_once"]

# Inside listed_once: one store for the outermost span; else empty.
_SPAN: list[dict[str, Any]] = []


@contextmanager
def listed_once() -> Iterator[None]:
    """Within: folder listings (and answers built on them) are read once, then reused.

    A file made meanwhile may not be seen until the span ends. Spans nest; the
    outermost one's store serves them all.
    """
    if _SPAN:
        yield
        return
    _SPAN.append({})
    try:
        yield
    finally:
        _SPAN.clear()


def held() -> dict[str, Any] | None:
    """The current span's store (None outside :func:`listed_once`)."""
    return _SPAN[0] if _SPAN else None
