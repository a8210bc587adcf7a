"""A span of work during which the checked tree's folders hold still.

Inside :func:`listed_once` (a chunk of checked files, or all the chunks one check runs in
this process: a check writes nothing while it reads) what is worked out from folder
listings may be kept for the whole span instead of one file's question: :func:`held`
gives the span's store (None outside one). The port's module lookups keep their folder
listings and answers there (``check/port/_module_files.py``), so a chunk reads each folder
once, not once per file.

It also records what a check read besides the checked file itself: every reader of
another file (a sibling module, a ``setup.py``, a ``conftest.py``, a star-imported
module) and every probe for one (a folder listed, ``.git`` or ``setup.py`` looked for)
calls :func:`note` with the path, which keeps the path's :func:`state` as first seen.
The check cache (``files/_cache.py``) keeps those states with its answers and replays
none of them once one state differs: a file read has changed, a file looked for and
not found has appeared, a folder listed has gained or lost a name. A reader that keeps
answers in memory notes the paths again when it answers from memory, so each run's
record is whole.
"""

from __future__ import annotations

import os
import stat as stat_mode
import time
from collections.abc import Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    _T = TypeVar("_T")

__all__ = [
    "held",
    "listed_once",
    "note",
    "real_file",
    "real_path",
    "recorded",
    "remembered",
    "same",
    "span",
    "state",
    "still",
]

# Inside listed_once: one store for the outermost span; else empty.
_SPAN: list[dict[str, Any]] = []
_SPANS = [0]  # how many outermost spans have begun: remembered's answers are checked once in each


@contextmanager
def listed_once() -> Iterator[None]:
    """Within: folder listings (and answers built on them) are read once, then reused.

    A file made meanwhile may not be seen until the span ends, nor a change of the working
    folder (:func:`note` makes each name absolute once a span). Spans nest; the outermost
    one's store serves them all.
    """
    if _SPAN:
        yield
        return
    _SPAN.append({})
    _SPANS[0] += 1
    try:
        yield
    finally:
        _SPAN.clear()


def held() -> dict[str, Any] | None:
    """The current span's store (None outside :func:`listed_once`)."""
    return _SPAN[0] if _SPAN else None


# A folder's own entry not part of what it holds for a reader: the check cache's folder
# (files/_cache.py's CACHE_FOLDER, made beside the project it caches).
_NOT_LISTED = frozenset({".torchport_cache"})
_RACY_NS = 2_000_000_000  # as files/_cache.py: a time this recent may hide an edit
# The paths noted since recorded() began, each with its state when first noted.
_NOTED: list[dict[str, list[object] | None]] = []


def state(path: str, digest: bool | None = None) -> list[object] | None:
    """What :func:`note` keeps of ``path``: None where nothing is there, else its kind,
    device, inode, size and times, and for a folder the names it holds; for anything
    changed in the last two seconds (``digest`` None) or when ``digest`` is true, a hash
    of its bytes too (an edit in the same clock tick keeps size and times)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    folder = stat_mode.S_ISDIR(st.st_mode)
    found: list[object] = [folder, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    if folder:
        del found[2:]  # what a folder holds is its names (the check cache's own: not)
        try:
            found.append(sorted(set(os.listdir(path)) - _NOT_LISTED))
        except OSError:
            found.append(None)
        return found
    found.insert(2, st.st_ino)
    if digest is None:
        digest = time.time_ns() - st.st_mtime_ns < _RACY_NS
    if digest:
        import hashlib  # here: rare (a file changed just now), off the start-up path

        try:
            with open(path, "rb") as handle:
                found.append(hashlib.sha256(handle.read()).hexdigest())
        except OSError:
            found.append(None)
    return found


def same(path: str, then: list[object] | None) -> bool:
    """Whether ``path`` is still as :func:`state` found it (``then``)."""
    return state(path, then is not None and not then[0] and len(then) > 6) == then


def note(path: str | os.PathLike[str]) -> None:
    """Record that the check read or looked for ``path`` (nothing outside :func:`recorded`)."""
    if not _NOTED:
        return
    inner = _NOTED[-1]  # (the outer records get it when this one ends: recorded)
    store = held()
    if store is None:
        key = os.path.abspath(path)
        if key not in inner:
            inner[key] = state(key)
        return
    # Inside a span (the tree and the working folder hold still) each name is made absolute
    # once, and each path's state read once, for all the notes there: a tree's answers note
    # the same folders and modules again and again.
    try:
        absolute, states = store["listing.noted"]
    except KeyError:
        absolute, states = store["listing.noted"] = ({}, {})
    name = os.fspath(path)
    key = absolute.get(name)
    if key is None:
        key = absolute[name] = os.path.abspath(name)
    if key not in inner:
        try:
            inner[key] = states[key]
        except KeyError:
            inner[key] = states[key] = state(key)


def real_path(path: str) -> str:
    """``os.path.realpath(path)``: inside a span, :func:`real_file`'s where it answers."""
    found = real_file(path)
    return os.path.realpath(path) if found is None else found


def real_file(path: str) -> str | None:
    """Inside a span, the real path of ``path`` when it names something that is no symbolic
    link: its folder's real path (worked out once a span) joined with its name, which is
    what ``os.path.realpath`` and ``Path.resolve`` give there. None outside a span, and
    for a link, a missing file or a name ``os.path.realpath`` treats apart.

    One ``lstat`` per path and span, not one per folder of the path and ask (every reader
    of a file asks it: the parser's kept trees, the module lookups, the CUDA projects)."""
    store = held()
    if store is None:
        return None
    files: dict[str, str | None] = store.setdefault("listing.real_files", {})
    try:
        return files[path]
    except KeyError:
        pass
    found = None
    folder, name = os.path.split(path)
    if name not in ("", ".", ".."):
        try:
            plain = not stat_mode.S_ISLNK(os.lstat(path).st_mode)
        except (OSError, ValueError):
            plain = False  # missing or unreadable: os.path.realpath's own walk decides
        if plain:  # (found through its folder: the folder's links resolve, no loop)
            folders: dict[str, str] = store.setdefault("listing.real_folders", {})
            real = folders.get(folder)
            if real is None:
                real = folders[folder] = os.path.realpath(folder)
            found = os.path.join(real, name)
    files[path] = found
    return found


def span() -> int:
    """Which outermost :func:`listed_once` span this is (-1: outside one)."""
    return _SPANS[0] if _SPAN else -1


def still(reads: dict[str, list[object] | None], since: int) -> bool:
    """Whether the paths an answer worked out in span ``since`` noted (``reads``) are as they
    were (checked once a span: inside one the tree holds still); if so they are noted again,
    for this run's record.

    Inside a span each path's state is read once for all the answers checked there (the
    answers of one tree note the same paths: a package's modules each rest on its folders)."""
    if since == -1 or since != span():
        store = held()
        if store is None:
            if not all(same(p, s) for p, s in reads.items()):
                return False
        elif not all(_same_in_span(store, p, s) for p, s in reads.items()):
            return False
    if _NOTED:  # the innermost record (the outer ones get it when it ends: recorded)
        _take_new(_NOTED[-1], reads)
    return True


def _take_new(into: dict[str, list[object] | None], reads: dict[str, list[object] | None]) -> None:
    """Add to a record what ``reads`` saw that it lacks, keeping its first-noted states."""
    if into:
        for path, seen in reads.items():
            into.setdefault(path, seen)
    else:
        into.update(reads)


def _same_in_span(store: dict[str, Any], path: str, then: list[object] | None) -> bool:
    """:func:`same`, the path's state read once in the span (the tree holds still there)."""
    digest = then is not None and not then[0] and len(then) > 6  # as same()
    states: dict[tuple[str, bool], list[object] | None] = store.setdefault("listing.states", {})
    key = (path, digest)
    try:
        now = states[key]
    except KeyError:
        now = states[key] = state(path, digest)
    return now == then


def remembered(memo: dict[Any, Any], key: object, compute: Callable[[], _T]) -> _T:
    """``compute()``, kept in ``memo`` under ``key`` with the paths it noted; an answer
    from ``memo`` notes them again (as they were when it was worked out), so each run's
    record holds what its answers rest on even when nothing is read."""
    found = memo.get(key)
    if found is not None and not still(found[1], found[2]):
        found = None  # what it read has changed since: work it out again
    if found is None:
        with recorded() as reads:
            answer = compute()
        found = (answer, reads)
    found = memo[key] = (found[0], found[1], span())
    return found[0]


@contextmanager
def recorded(keep: bool = True) -> Iterator[dict[str, list[object] | None]]:
    """Within: each :func:`note` fills the dict given (path -> state when first noted).

    ``keep=False``: nothing is recorded (an empty dict given; a record already open gets
    the notes, as without this one): for a reader that keeps no record.

    Records nest: a note goes to the innermost record, which hands what it holds on to the
    record enclosing it when it ends (the paths that lacks, in the order first noted):
    each record ends as if every note had gone to every record open at the time, and a
    path noted many times deep in a question (every cached module fact notes what it read)
    is copied once per level, not once per note and level.
    """
    if not keep:
        yield {}
        return
    _NOTED.append({})
    try:
        yield _NOTED[-1]
    finally:
        inner = _NOTED.pop()
        if _NOTED:
            _take_new(_NOTED[-1], inner)
