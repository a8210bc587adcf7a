"""Where a project's module lives: the file an import names, found as Python finds it.

Beside the importing file, then at the root above its packages (the first folder up
without an ``__init__.py``), then, for a dotted name, the first folder up that holds its
first part as a package (a script that adds that folder to ``sys.path`` itself);
relative imports from the importing file's package.
Folder listings are cached per folder version, so a tree's imports cost one ``stat``
per folder and question. A :class:`Lookups` spans one question made of many (the
project view of one file: each of its imports, and theirs): there each folder is
read once, and an import asked again from the same folder is answered from it; inside
``check/_listing.listed_once`` (a chunk of checked files, or of files ported with
nothing written: ``port --diff``) once for the whole chunk, the files' versions too.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from torchport.check._listing import held, note, real_path
from torchport.check._syntax import parsed_module

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    _T = TypeVar("_T")

__all__ = ["Lookups", "find_module", "module_facts", "module_in", "parse_file", "top_package"]

# folder -> (its mtime, the names of its regular files, the names of its folders)
_LISTINGS: dict[str, tuple[int, frozenset[str], frozenset[str]]] = {}
_EMPTY: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


class Lookups:
    """The folder listings and answers of one question (one file's project view).

    The tree is taken not to change while one file's imports are resolved: each
    folder is read (its ``stat``) once in it, and each ``(folder, module, level)``
    answered once. The next file's question makes a new one and sees any change.
    """

    __slots__ = ("above", "asked", "files", "found", "listings", "modules", "real", "roots")

    def __init__(self) -> None:
        # Inside check/_listing.listed_once (a chunk of files checked, or ported with
        # nothing written) the listings, answers and versions are the span's, shared by
        # every question in it: nothing in the span changes the tree.
        span = held()
        # A found file -> its real path and version (ctime, size); None: no stat.
        # `roots` (a folder -> the folder above its packages) and `above` ((a folder, a
        # package name) -> the first folder up holding that package) are answers read
        # from the listings alone, as is `modules` ((a folder, a dotted name) -> the module's
        # file under it: the same root is asked from every folder of its packages); `real`:
        # a path -> its resolved form; `asked`: `found`'s answers by the importing file's
        # path (its folder not worked out again), each with the answer's path as a string.
        if span is None:
            self.listings: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
            self.found: dict[tuple[str, str | None, int], Path | None] = {}
            self.asked: dict[tuple[str, str | None, int], tuple[Path | None, str]] = {}
            self.modules: dict[tuple[str, str], Path | None] = {}
            self.files: dict[Path, tuple[str, tuple[int, int]] | None] = {}
            self.roots: dict[str, str] = {}
            self.above: dict[tuple[str, str], str | None] = {}
            self.real: dict[str, str] = {}
        else:
            self.listings = span.setdefault("module_files.listings", {})
            self.found = span.setdefault("module_files.found", {})
            self.asked = span.setdefault("module_files.asked", {})
            self.modules = span.setdefault("module_files.modules", {})
            self.files = span.setdefault("module_files.files", {})
            self.roots = span.setdefault("module_files.roots", {})
            self.above = span.setdefault("module_files.above", {})
            self.real = span.setdefault("module_files.real", {})

    def resolved(self, path: str) -> str:
        """``str(Path(path).resolve())``, once per question.

        Raises:
            OSError, ValueError: as ``Path.resolve`` (not kept: asked again, raised again).
        """
        try:
            return self.real[path]
        except KeyError:
            found = self.real[path] = real_path(path)  # (one lstat in a span: _listing)
            return found

    def version(self, path: Path) -> tuple[str, tuple[int, int]] | None:
        """``path``'s real path and (change time in ns, size), once per question (None: no file)."""
        note(path)  # the check cache's record of what an answer read (check/_listing.py)
        try:
            return self.files[path]
        except KeyError:
            known = self.files[path] = _version(path, self)
            return known


def parse_file(path: Path) -> ast.Module | None:
    """The module at ``path``, parsed once for all its readers (``parsed_module``); None
    when it cannot be read or does not parse."""
    try:
        source = path.read_text(encoding="utf-8", errors="surrogateescape")
        return parsed_module(str(path), source)
    except (OSError, SyntaxError, ValueError):
        return None


def module_facts(
    path: Path,
    lookups: Lookups,
    cache: dict[str, tuple[tuple[int, int], _T]],
    facts: Callable[[ast.Module], _T],
    empty: _T,
) -> _T:
    """``facts`` of the module at ``path``, kept in ``cache`` per file version; ``empty``
    when there is no such file or it does not parse."""
    version = lookups.version(path)
    if version is None:
        return empty
    key, stamp = version
    cached = cache.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    tree = parse_file(path)
    if tree is None:
        return empty
    found = facts(tree)
    cache[key] = (stamp, found)
    return found


def _version(path: Path, lookups: Lookups) -> tuple[str, tuple[int, int]] | None:
    key = lookups.resolved(str(path))
    try:
        stat = path.stat()
    except OSError:
        return None
    return key, (stat.st_ctime_ns, stat.st_size)  # ctime: any write sets it anew


def _entries(folder: str, lookups: Lookups | None = None) -> tuple[frozenset[str], frozenset[str]]:
    """The names of ``folder``'s regular files and of its folders, read again when it changes.

    One ``stat`` of the folder per question instead of one per candidate file: every
    import of every file of a tree asks about the same few folders. A folder a
    listing does not name is not looked for (an import of ``os`` asks no ``stat`` of
    a folder ``os`` beside the importer); adding one changes the listing's folder.
    """
    if lookups is not None:
        known = lookups.listings.get(folder)
        if known is None:
            known = lookups.listings[folder] = _entries(folder)
        return known
    note(folder)  # its names: a module appearing where an import looked (check/_listing.py)
    try:
        version = os.stat(folder).st_mtime_ns
    except OSError:
        return _EMPTY
    cached = _LISTINGS.get(folder)
    if cached is not None and cached[0] == version:
        return cached[1], cached[2]
    files: set[str] = set()
    folders: set[str] = set()
    try:
        with os.scandir(folder) as entries:
            for e in entries:
                if e.is_file():
                    files.add(e.name)
                elif e.is_dir():
                    folders.add(e.name)
    except OSError:
        pass
    _LISTINGS[folder] = (version, frozenset(files), frozenset(folders))
    return _LISTINGS[folder][1], _LISTINGS[folder][2]


# Folders are plain strings below (``pathlib`` cost more than the ``stat`` calls on a
# large tree); ``_parent`` is ``Path.parent`` on them: "" is ".", and "." and "/" are
# their own parents.


def _parent(folder: str) -> str:
    return os.path.dirname(folder) or "."


def _root(folder: str, lookups: Lookups | None) -> str:
    """The folder on ``sys.path`` when a script of ``folder`` runs: above its packages."""
    if lookups is None:
        return _root_of(folder, None)
    try:
        return lookups.roots[folder]
    except KeyError:
        found = lookups.roots[folder] = _root_of(folder, lookups)
        return found


def top_package(path: str, lookups: Lookups | None) -> str | None:
    """The ``__init__.py`` of the outermost package holding the module at ``path`` (a
    package's own ``__init__.py`` included): what Python runs first, whichever of the
    package's modules is imported. None for a module in no package."""
    folder = os.path.dirname(path)
    if "__init__.py" not in _entries(folder, lookups)[0]:
        return None
    root = _root(folder, lookups)
    inner = os.path.relpath(folder, root).split(os.sep)[0]
    return os.path.join(root, inner, "__init__.py")


def _root_of(folder: str, lookups: Lookups | None) -> str:
    while "__init__.py" in _entries(folder, lookups)[0] and _parent(folder) != folder:
        folder = _parent(folder)
    return folder


def module_in(folder: str, dotted: str, lookups: Lookups | None) -> Path | None:
    """The file of the module ``dotted`` (a ``.py`` or a package) under ``folder``."""
    return _noted(_module_file(folder, dotted, lookups))


def _noted(found: Path | None) -> Path | None:
    """``found``, noted as read (its caller reads it: check/_listing.py)."""
    if found is not None:
        note(found)
    return found


def _module_file(base: str, dotted: str, lookups: Lookups | None) -> Path | None:
    if lookups is None:
        return _module_file_of(base, dotted, None)
    key = (base, dotted)
    try:
        return lookups.modules[key]
    except KeyError:
        found = lookups.modules[key] = _module_file_of(base, dotted, lookups)
        return found


def _module_file_of(base: str, dotted: str, lookups: Lookups | None) -> Path | None:
    target = os.path.join(base, *dotted.split(".")) if dotted else base
    if dotted:
        files, folders = _entries(_parent(target), lookups)
        leaf = os.path.basename(target)
        if leaf + ".py" in files:
            return Path(target + ".py")
        if leaf not in folders:
            return None  # no package of that name there
    if "__init__.py" in _entries(target, lookups)[0]:
        return Path(target, "__init__.py")
    return None


def find_module(
    importer: Path, module: str | None, level: int, lookups: Lookups | None = None
) -> Path | None:
    """The file ``from <level dots><module> import ...`` names, seen from ``importer``.

    ``lookups``: the question this is part of (see :class:`Lookups`); None reads
    each folder's version again.
    """
    name = str(importer)
    if lookups is None:
        return _noted(_find(_parent(name), module, level, None))
    try:
        found, noted = lookups.asked[name, module, level]
    except KeyError:
        folder = _parent(name)  # str(importer.parent), without a Path made per question
        key = (folder, module, level)
        try:
            found = lookups.found[key]
        except KeyError:
            found = lookups.found[key] = _find(folder, module, level, lookups)
        noted = "" if found is None else str(found)
        lookups.asked[name, module, level] = (found, noted)
    if noted:
        note(noted)  # (as _noted: its caller reads it)
    return found


def _find(folder: str, module: str | None, level: int, lookups: Lookups | None) -> Path | None:
    if level:
        for _ in range(level - 1):
            folder = _parent(folder)
        return _module_file(folder, module or "", lookups)
    if not module:
        return None
    for base in (folder, _root(folder, lookups)):
        found = _module_file(base, module, lookups)
        if found is not None:
            return found
    if "." in module:
        return _package_above(folder, module, lookups)
    return None


_ABOVE = 8  # how many folders up a package path is looked for


def _package_above(folder: str, module: str, lookups: Lookups | None) -> Path | None:
    """``TCN.char_cnn.model`` imported from ``TCN/char_cnn/`` by a script that puts the
    folder above its packages on ``sys.path`` itself (``sys.path.append("../../")``), or
    is run from there: the first folder up holding the package ``TCN`` (a folder with an
    ``__init__.py``) and, in it, the module. Dotted names only: a plain ``import utils``
    is not looked for far from the file."""
    head = module.partition(".")[0]
    if lookups is None:
        found = _package_folder(folder, head, None)
    else:
        try:
            found = lookups.above[(folder, head)]
        except KeyError:
            found = lookups.above[(folder, head)] = _package_folder(folder, head, lookups)
    return None if found is None else _module_file(found, module, lookups)


def _package_folder(folder: str, head: str, lookups: Lookups | None) -> str | None:
    """The first folder up from ``folder`` (not itself) holding the package ``head``."""
    for _ in range(_ABOVE):
        up = _parent(folder)
        if up == folder:
            break
        folder = up
        if "__init__.py" in _entries(os.path.join(folder, head), lookups)[0]:
            return folder
    return None
