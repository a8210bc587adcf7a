"""A device value another module of the project binds: ``from config import DEVICE``.

``config.py`` holds ``DEVICE = "cpu"`` (or ``CONFIG = {"device": "cpu"}``) and ``train.py``
moves its model there: the program chose its device in another file. A name read here
through an import of a project module (``DEVICE`` after ``from config import DEVICE``,
``config.DEVICE`` after ``import config``) is that module's value where the module binds
the name exactly once, by a top-level ``NAME = value`` (no other store of the name in that
module: no ``global``, loop, ``def`` or second assignment), and nothing in this file or that
module stores an attribute of that name (``config.DEVICE = ...``) nor binds the name here
other than by the import. Anything else is a value the port cannot read (None): the
module not found, a package's ``__init__`` (its names may be submodules), a star import, a
name bound inside a function or on several paths. Syntax only; the module is read, never
imported.

:func:`device_kind` judges such a value by its syntax alone (the other module's names are
not this file's): the CPU written out, a CUDA-or-CPU choice, an accelerator written out.
"""

from __future__ import annotations

import ast
from pathlib import Path

from torchport._device_types import CPU, DEVICE_TYPES
from torchport.check._context import Context
from torchport.check._listing import note
from torchport.check.port._module_files import parse_file
from torchport.check.port._script_path import imported_name

__all__ = ["CHOICE", "WRITTEN", "device_kind", "imported_value"]

CHOICE = "choice"  # device_kind's: a CUDA-or-CPU choice
WRITTEN = "written"  # device_kind's: a device other than the CPU, written out

# `torch.cuda.is_available()` and the other availability tests a CUDA-or-CPU choice asks.
_TESTS = frozenset(
    {
        "torch.cuda.is_available()",
        "torch.backends.mps.is_available()",
        "torch.xpu.is_available()",
        "torch.accelerator.is_available()",
    }
)


def imported_value(expr: ast.expr, ctx: Context) -> tuple[bool, ast.expr | None]:
    """(whether ``expr`` reads a name a project module binds, that module's one value for it
    or None where it cannot be read: see the module docstring)."""
    found = imported_name(ctx, expr)
    if found is None:
        return False, None  # no module of the project's
    name, path = found
    holder = expr if isinstance(expr, ast.Name) else getattr(expr, "value", expr)
    assert isinstance(holder, ast.Name)
    scopes = ctx.scopes
    if len(scopes.bindings(holder.id, holder)) != 1 or _stores_attribute(ctx.tree, name):
        return True, None  # rebound here, or `config.DEVICE = ...`
    if path.name == "__init__.py":
        return True, None
    return True, _value_in(path, name)


def _value_in(path: Path, name: str) -> ast.expr | None:
    """The module's single top-level ``name = value`` at ``path`` (None: see the module)."""
    note(path)  # what the check cache's answer rests on (check/_listing.py)
    tree = parse_file(path)
    if tree is None:
        return None
    if _stores_attribute(tree, name):
        return None
    bound: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                bound.append(node)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            if node.id == name:
                bound.append(node)
        elif isinstance(node, ast.alias) and (node.asname or node.name).split(".")[0] == name:
            bound.append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return None
    if len(bound) != 1:
        return None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and stmt.targets[0] is bound[0]:
            return stmt.value
    return None


def _stores_attribute(tree: ast.AST, name: str) -> bool:
    """Whether ``tree`` stores or deletes an attribute called ``name`` on anything."""
    return any(
        isinstance(n, ast.Attribute) and n.attr == name and not isinstance(n.ctx, ast.Load)
        for n in ast.walk(tree)
    )


def device_kind(value: ast.expr) -> str | None:
    """:data:`~torchport._device_types.CPU` (``"cpu"``, ``"cpu:0"``,
    ``torch.device("cpu")``), :data:`CHOICE` (a CUDA-or-CPU choice: ``"cuda" if
    torch.cuda.is_available() else "cpu"``, also under ``torch.device(...)``),
    :data:`WRITTEN` (another device written out), or None (no device value by its
    syntax)."""
    if isinstance(value, ast.Constant):
        if not isinstance(value.value, str):
            return None
        kind = value.value.partition(":")[0]
        if kind not in DEVICE_TYPES:
            return None
        return CPU if kind == CPU else WRITTEN
    if (
        isinstance(value, ast.Call)
        and ast.unparse(value.func) == "torch.device"
        and len(value.args) == 1
        and not value.keywords
    ):
        return device_kind(value.args[0])
    if isinstance(value, ast.IfExp) and ast.unparse(value.test) in _TESTS:
        kinds = {device_kind(value.body), device_kind(value.orelse)}
        return CHOICE if kinds == {WRITTEN, CPU} else None
    return None
