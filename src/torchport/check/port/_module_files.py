"""Where a project's module lives: the file an import names, found as Python finds it.

Beside the importing file, then at the root above its packages (the first folder up
without an ``__init__.py``); relative imports from the importing file's package.
Folder listings are cached per folder version, so a tree's imports cost one ``stat``
per folder and question.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_module"]

_LISTINGS: dict[str, tuple[int, frozenset[str]]] = {}


def _files_in(folder: Path) -> frozenset[str]:
    """The names of the regular files in ``folder``, read again whenever the folder changes.

    One ``stat`` of the folder per question instead of one per candidate file: every
    import of every file of a tree asks about the same few folders.
    """
    key = str(folder)
    try:
        version = os.stat(key).st_mtime_ns
    except OSError:
        return frozenset()
    cached = _LISTINGS.get(key)
    if cached is not None and cached[0] == version:
        return cached[1]
    try:
        with os.scandir(key) as entries:
            names = frozenset(e.name for e in entries if e.is_file())
    except OSError:
        names = frozenset()
    _LISTINGS[key] = (version, names)
    return names


def _root(folder: Path) -> Path:
    """The folder on ``sys.path`` when a script of ``folder`` runs: above its packages."""
    while "__init__.py" in _files_in(folder) and folder.parent != folder:
        folder = folder.parent
    return folder


def _module_file(base: Path, dotted: str) -> Path | None:
    target = base.joinpath(*dotted.split(".")) if dotted else base
    if dotted and target.name + ".py" in _files_in(target.parent):
        return target.with_suffix(".py")
    if "__init__.py" in _files_in(target):
        return target / "__init__.py"
    return None


def find_module(importer: Path, module: str | None, level: int) -> Path | None:
    """The file ``from <level dots><module> import ...`` names, seen from ``importer``."""
    folder = importer.parent
    if level:
        for _ in range(level - 1):
            folder = folder.parent
        return _module_file(folder, module or "")
    if not module:
        return None
    for base in (folder, _root(folder)):
        found = _module_file(base, module)
        if found is not None:
            return found
    return None
