"""A package's own compiled ``*_cuda`` extension, imported relatively.

``from . import iou3d_nms_cuda`` (sample Y's TAO ``pcdet``, built with a ``CUDAExtension``
through a helper the checker does not read) names a compiled module only where no Python
source can be what the name is: no ``iou3d_nms_cuda.py`` nor ``iou3d_nms_cuda/`` in the
package the dots lead to, and the package's ``__init__.py`` (not the importing file itself)
never spells the name. Then the import succeeds only with the compiled module, as a top-level
``import selective_scan_cuda`` does (``rules/_cuda_projects.py``, which asks this).

And whether a module's top-level imports may name a module of its own project at all
(:func:`may_import_local`): a look with ``os.path`` alone, before ``rules/_cuda_imports.py``
resolves them with the project view (a plain check of a script importing only installed
packages then loads none of the port).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from torchport.check._context import Context
from torchport.check._listing import note, real_path

__all__ = ["may_import_local", "own_extension", "sure_import_nodes"]


def own_extension(path: str, name: str) -> bool:
    """``name`` (relative: ``.iou3d_nms_cuda``, ``..ops.nms_cuda``), imported by the file at
    ``path``, is its package's compiled ``*_cuda`` extension: the last part ends in
    ``_cuda`` and, in the package the dots and the parts before it lead to (a folder, no
    module file of its name), there is no ``<name>.py`` nor ``<name>/``, and the package's
    ``__init__.py`` (when there is one, and not the file itself) never spells the name."""
    level = len(name) - len(name.lstrip("."))
    parts = name[level:].split(".")
    ext = parts[-1]
    if not ext.endswith("_cuda") or ext == "_cuda":
        return False
    package = Path(real_path(path)).parent
    for _ in range(level - 1):
        package = package.parent
    for part in parts[:-1]:
        note(package / f"{part}.py")
        if (package / f"{part}.py").exists():
            return False  # `from .helpers import to_cuda`: a module's name, not a package
        package = package / part
    init = package / "__init__.py"
    for looked in (package, package / f"{ext}.py", package / ext, init):
        note(looked)
    if not package.is_dir() or (package / f"{ext}.py").exists() or (package / ext).exists():
        return False
    if not init.is_file():
        return True
    if init.resolve() == Path(real_path(path)):
        return False  # the package's own `__init__` may bind the name anywhere in it
    try:
        return ext not in init.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def may_import_local(ctx: Context) -> bool:
    """Whether a top-level import the module surely runs (:func:`sure_import_nodes`) may name
    a file of its own project (:func:`_may_be_local`). Once per file."""
    if not ctx.path or ctx.path.startswith("<") or not os.path.isfile(ctx.path):
        return False
    found = ctx.memo.get("own_extensions.local")
    if found is None:
        folder = os.path.dirname(real_path(ctx.path))
        nodes = [node for stmt in ctx.tree.body for node in sure_import_nodes(stmt)]
        found = ctx.memo["own_extensions.local"] = any(_may_be_local(n, folder) for n in nodes)
    return bool(found)


def sure_import_nodes(stmt: ast.stmt) -> list[ast.Import | ast.ImportFrom]:
    """The import statements a top-level ``stmt`` surely runs (as ``_cuda_projects``'
    ``_sure_imports``: itself, or in a ``try`` whose every ``except`` arm raises again; not
    under an ``if``)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [stmt]
    if isinstance(stmt, (ast.Try, ast.TryStar)) and all(
        h.body and isinstance(h.body[-1], ast.Raise) for h in stmt.handlers
    ):
        return [n for s in (*stmt.body, *stmt.orelse) for n in sure_import_nodes(s)]
    return []


_ABOVE = 8  # as port/_module_files.py's: folders up a dotted name's package is looked for


def _may_be_local(node: ast.Import | ast.ImportFrom, folder: str) -> bool:
    """Whether ``find_module`` may find a file for ``node`` (seen from ``folder``): a file
    ``head.py`` or a folder ``head`` of a name's first part is where it looks (the folder,
    the folder above its packages, for a dotted name any folder up; for a relative import the
    package's). A look with ``os.path`` alone, so that a file importing only installed
    packages never loads the project view; every path looked at is noted (a module made
    there later changes the answer: the check cache sees it)."""
    asked: list[tuple[str, int, bool]] = []  # (first part, level, dotted)
    if isinstance(node, ast.Import):
        asked = [(a.name.partition(".")[0], 0, "." in a.name) for a in node.names]
    elif node.module:
        asked = [(node.module.partition(".")[0], node.level, "." in node.module)]
    elif node.level:
        asked = [(a.name, node.level, False) for a in node.names if a.name != "*"]
    for head, level, dotted in asked:
        if level:
            bases = [folder]
            for _ in range(level - 1):
                bases = [os.path.dirname(bases[0])]
        else:
            bases = [folder, _above_packages(folder)]
            if dotted:
                up = folder
                for _ in range(_ABOVE):
                    up = os.path.dirname(up)
                    bases.append(up)
        for base in bases:
            for path in (os.path.join(base, head + ".py"), os.path.join(base, head)):
                note(path)
                if os.path.exists(path):
                    return True
    return False


def _above_packages(folder: str) -> str:
    """The first folder up from ``folder`` (itself included) holding no ``__init__.py``."""
    while True:
        init = os.path.join(folder, "__init__.py")
        note(init)
        if not os.path.exists(init) or os.path.dirname(folder) == folder:
            return folder
        folder = os.path.dirname(folder)
