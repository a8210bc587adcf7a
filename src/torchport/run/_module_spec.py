"""What ``python -m NAME`` would run, found without importing anything.

``torchport run -m`` checks its target with it before the redirect is in place, and the
child-process patches ask it whether a ``-m`` module a script starts is the project's own.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os

__all__ = ["find_runnable"]


def find_runnable(
    name: str, path: list[str] | None = None
) -> importlib.machinery.ModuleSpec | None:
    """The spec ``python -m name`` would run (``name.__main__`` for a package), importing nothing.

    The top-level name goes through every finder on ``sys.path`` (an editable
    install has its own), or is looked up in the folders of ``path`` alone;
    the parts below it are looked up in their parent's folders only, so a
    package that rewrites its ``__path__`` when imported may not be found.
    """
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    try:
        if path is None:
            spec = importlib.util.find_spec(parts[0])  # a top-level lookup imports nothing
        else:
            spec = importlib.machinery.PathFinder.find_spec(parts[0], path)
    except (ImportError, ValueError):
        return None
    for depth in range(1, len(parts) + 1):
        if spec is None:
            return None
        if depth == len(parts) and spec.submodule_search_locations is None:
            return spec
        if spec.submodule_search_locations is None:
            return None  # a module is not a package: nothing below it
        part = parts[depth] if depth < len(parts) else "__main__"
        spec = _find_child(f"{'.'.join(parts[:depth])}.{part}", part, spec)
        if depth == len(parts):
            return spec
    return spec


def _find_child(
    name: str, part: str, parent: importlib.machinery.ModuleSpec
) -> importlib.machinery.ModuleSpec | None:
    locations = list(parent.submodule_search_locations or ())
    try:
        return importlib.machinery.PathFinder.find_spec(name, locations)
    except KeyError:
        # A namespace portion (a folder without __init__.py): its _NamespacePath
        # looks its parent up in sys.modules, which this lookup never fills.
        folders = [os.path.join(where, part) for where in locations]
        folders = [folder for folder in folders if os.path.isdir(folder)]
        if not folders:
            return None
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = folders
        return spec
