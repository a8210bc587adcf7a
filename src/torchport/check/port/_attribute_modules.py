"""The modules a project module has as attributes: what ``pkg.model.Net`` reaches.

Importing a package's submodule in any form (``import pkg.model``, ``from . import model``,
``from .model import Net``, ``from pkg.model import Net``) binds ``model`` on the package:
an importer of ``pkg`` reaches ``pkg.model.Net()`` when the package's ``__init__`` loads the
submodule at module level. A module's own ``import utils`` (or ``import x as utils``) binds
``utils`` on it likewise (``mod.utils.Net``). :func:`attribute_modules` reads them from the
module's module-level imports (the project view's modules, and an ``__init__``'s imports of its
own submodules); a name the module binds by more than those (``from .model import model``,
``model = ...``) is not followed: which object it is, the code decides when it runs.
:func:`reach` adds them to an importer's view under the importer's name (``pkg.model``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from torchport.check._context import Context
from torchport.check.port._module_facts import ModuleFacts

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from torchport.check.port._project_imports import ProjectImports
    from torchport.check.semantic import Binding

__all__ = ["attribute_modules", "reach", "top_imports"]

_DEPTH = 3  # `a.b.c.d.Net`: deeper attribute chains are not followed


def top_imports(stmt: ast.stmt) -> list[ast.Import | ast.ImportFrom]:
    """Imports at module level, also inside ``try``/``if`` blocks there."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [stmt]
    found: list[ast.Import | ast.ImportFrom] = []
    if isinstance(stmt, (ast.Try, ast.If)):
        handlers = [h.body for h in stmt.handlers] if isinstance(stmt, ast.Try) else []
        for block in (stmt.body, *handlers, stmt.orelse, getattr(stmt, "finalbody", [])):
            for inner in block:
                found.extend(top_imports(inner))
    return found


def _loaded(node: ast.Import | ast.ImportFrom, package: list[str]) -> list[tuple[str, str, int]]:
    """The submodules of the package whose dotted name is ``package`` that ``node`` in its
    ``__init__`` may load: ``(attribute, dotted name to find, level)`` (the caller finds it)."""
    size = len(package)
    if isinstance(node, ast.Import):
        out = []
        for alias in node.names:
            parts = alias.name.split(".")
            if len(parts) > size and parts[:size] == package:
                out.append((parts[size], ".".join(parts[: size + 1]), 0))
        return out
    parts = node.module.split(".") if node.module else []
    if node.level == 1:
        if parts:
            return [(parts[0], parts[0], 1)]
        return [(a.name, a.name, 1) for a in node.names if a.name != "*"]
    if node.level == 0 and parts[:size] == package:
        if len(parts) > size:
            return [(parts[size], ".".join(parts[: size + 1]), 0)]
        dotted = ".".join(package)
        return [(a.name, f"{dotted}.{a.name}", 0) for a in node.names if a.name != "*"]
    return []


def _package(folder: Path) -> list[str]:
    """The dotted name of the package ``folder`` (its folders up that hold an ``__init__``)."""
    parts = [folder.name]
    up = folder.parent
    while up != up.parent and (up / "__init__.py").is_file() and len(parts) < 8:
        parts.insert(0, up.name)
        up = up.parent
    return parts


def _inside(found: Path, folder: Path) -> bool:
    """Whether the module file ``found`` is a direct submodule of the package ``folder``."""
    if found.name == "__init__.py":
        return found.parent.parent == folder
    return found.parent == folder


def attribute_modules(
    ctx: Context,
    modules: Mapping[str, ModuleFacts],
    find: Callable[[str | None, int], Path | None],
    bindings: Callable[[], dict[str, list[Binding]]],
) -> tuple[tuple[str, str], ...]:
    """``(attribute, path)`` for each project module the module ``ctx`` has as an attribute
    (module docstring). ``modules``: its view's modules (each bound by imports alone);
    ``find``: its imports' finder; ``bindings``: its module-level bindings."""
    out = {key: facts.path for key, facts in modules.items() if "." not in key}
    path = Path(ctx.path)
    if path.name != "__init__.py":
        return tuple(sorted(out.items()))
    folder = path.parent
    package = _package(folder)
    for stmt in ctx.tree.body:
        for node in top_imports(stmt):
            for attr, dotted, level in _loaded(node, package):
                if attr in out or attr in bindings():
                    continue  # followed already, or bound here by more than the import
                found = find(dotted, level)
                if found is not None and _inside(found.resolve(), folder.resolve()):
                    out[attr] = str(found)
    return tuple(sorted(out.items()))


def reach(
    view: ProjectImports,
    local: str,
    facts: ModuleFacts,
    facts_at: Callable[[Path], ModuleFacts | None],
    depth: int = 0,
) -> None:
    """Bind ``local`` to the module ``facts`` describes in ``view``, and ``local.attr`` to
    each module it has as an attribute (:func:`attribute_modules`), to :data:`_DEPTH`."""
    if local not in view.modules:
        view.modules[local] = facts
        if depth:
            view.reached.add(local)  # (no torch the file gets by itself: ProjectImports.__bool__)
    if depth >= _DEPTH:
        return
    for attr, path in facts.attributes:
        key = f"{local}.{attr}"
        if key in view.modules:
            continue
        found = facts_at(Path(path))
        if found is not None:
            reach(view, key, found, facts_at, depth + 1)
