"""Folder listings, read again when a folder changes, or held still for a while.

:func:`files_in` answers which regular files a folder holds: one ``stat`` of the
folder per question (its listing is read again only when the folder's modification
time changes). Inside :func:`listed_once` each folder is read once and the answers
built on listings may be kept (:func:`snapshot_answers`): for work that takes the tree
as it is, such as checking a chunk of files, which writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["files_in", "listed_once", "snapshot_answers"]

_LISTINGS: dict[str, tuple[int, frozenset[str]]] = {}
# Inside listed_once: (folder -> its names as first read there, answers kept); else empty.
_SNAPSHOT: list[tuple[dict[str, frozenset[str]], dict[Any, Any]]] = []


@contextmanager
def listed_once() -> Iterator[None]:
    """Within: each folder's listing is read (its ``stat`` included) once, then reused.

    A file made meanwhile may not be seen until the block ends. Blocks nest; the
    outermost one's snapshot serves them all.
    """
    if _SNAPSHOT:
        yield
        return
    _SNAPSHOT.append(({}, {}))
    try:
        yield
    finally:
        _SNAPSHOT.clear()


def snapshot_answers() -> dict[Any, Any] | None:
    """A dict for answers worked out from listings, kept while the snapshot lasts (None: none)."""
    return _SNAPSHOT[0][1] if _SNAPSHOT else None


def files_in(folder: str) -> frozenset[str]:
    """The names of the regular files in ``folder`` (empty when it cannot be read)."""
    if _SNAPSHOT:
        listings = _SNAPSHOT[0][0]
        seen = listings.get(folder)
        if seen is None:
            seen = listings[folder] = _read_listing(folder)
        return seen
    return _read_listing(folder)


def _read_listing(folder: str) -> frozenset[str]:
    try:
        version = os.stat(folder).st_mtime_ns
    except OSError:
        return frozenset()
    cached = _LISTINGS.get(folder)
    if cached is not None and cached[0] == version:
        return cached[1]
    try:
        with os.scandir(folder) as entries:
            names = frozenset(e.name for e in entries if e.is_file())
    except OSError:
        names = frozenset()
    _LISTINGS[folder] = (version, names)
    return names
