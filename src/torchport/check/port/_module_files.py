"""Where a project's module lives: the file an import names, found as Python finds it.

Beside the importing file, then at the root above its packages (the first folder up
without an ``__init__.py``), then, for a dotted name, the first folder up that holds its
first part as a package (a script that adds that folder to ``sys.path`` itself);
relative imports from the importing file's package.
Folder listings are cached per folder version, so a tree's imports cost one ``stat``
per folder and question.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_module"]

_LISTINGS: dict[str, tuple[int, frozenset[str]]] = {}


def _files_in(folder: str) -> frozenset[str]:
    """The names of the regular files in ``folder``, read again whenever the folder changes.

    One ``stat`` of the folder per question instead of one per candidate file: every
    import of every file of a tree asks about the same few folders.
    """
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


# Folders are plain strings below (``pathlib`` cost more than the ``stat`` calls on a
# large tree); ``_parent`` is ``Path.parent`` on them: "" is ".", and "." and "/" are
# their own parents.


def _parent(folder: str) -> str:
    return os.path.dirname(folder) or "."


def _root(folder: str) -> str:
    """The folder on ``sys.path`` when a script of ``folder`` runs: above its packages."""
    while "__init__.py" in _files_in(folder) and _parent(folder) != folder:
        folder = _parent(folder)
    return folder


def _module_file(base: str, dotted: str) -> Path | None:
    target = os.path.join(base, *dotted.split(".")) if dotted else base
    if dotted and os.path.basename(target) + ".py" in _files_in(_parent(target)):
        return Path(target + ".py")
    if "__init__.py" in _files_in(target):
        return Path(target, "__init__.py")
    return None


def find_module(importer: Path, module: str | None, level: int) -> Path | None:
    """The file ``from <level dots><module> import ...`` names, seen from ``importer``."""
    folder = str(importer.parent)
    if level:
        for _ in range(level - 1):
            folder = _parent(folder)
        return _module_file(folder, module or "")
    if not module:
        return None
    for base in (folder, _root(folder)):
        found = _module_file(base, module)
        if found is not None:
            return found
    if "." in module:
        return _package_above(folder, module)
    return None


_ABOVE = 8  # how many folders up a package path is looked for


def _package_above(folder: str, module: str) -> Path | None:
    """``TCN.char_cnn.model`` imported from ``TCN/char_cnn/`` by a script that puts the
    folder above its packages on ``sys.path`` itself (``sys.path.append("../../")``), or
    is run from there: the first folder up holding the package ``TCN`` (a folder with an
    ``__init__.py``) and, in it, the module. Dotted names only: a plain ``import utils``
    is not looked for far from the file."""
    head = module.partition(".")[0]
    for _ in range(_ABOVE):
        up = _parent(folder)
        if up == folder:
            break
        folder = up
        if "__init__.py" in _files_in(os.path.join(folder, head)):
            return _module_file(folder, module)
    return None
