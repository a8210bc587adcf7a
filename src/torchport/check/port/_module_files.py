"""Where a project's module lives: the file an import names, found as Python finds it.

Beside the importing file, then at the root above its packages (the first folder up
without an ``__init__.py``); relative imports from the importing file's package.
Folder listings are cached per folder version (``check/_listing.py``), so a tree's
imports cost one ``stat`` per folder and question; inside :func:`listed_once` (a chunk
of checked files, which nothing writes meanwhile) one per folder, and each answer is
worked out once.
"""

from __future__ import annotations

import os
from pathlib import Path

from torchport.check._listing import files_in as _files_in
from torchport.check._listing import listed_once, snapshot_answers

__all__ = ["find_module", "listed_once"]

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
    answers = snapshot_answers()
    if answers is None:
        return _find(folder, module, level)
    key = (folder, module, level)
    if key not in answers:  # a function of the listings, which the snapshot holds still
        answers[key] = _find(folder, module, level)
    found: Path | None = answers[key]
    return found


def _find(folder: str, module: str | None, level: int) -> Path | None:
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
    return None
