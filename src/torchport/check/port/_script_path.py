"""Folders a script puts on ``sys.path`` itself, where its project's modules are found too.

``PARENT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))`` then
``sys.path.append(PARENT_DIR)`` and ``from nn_models import MLP`` (greydanus/hamiltonian-nn):
the model class lives in a sibling folder the project view (beside the file, the root
above its packages) does not look in. A module-level ``sys.path.append(P)`` or
``sys.path.insert(i, P)`` whose ``P`` is read from syntax alone -- a string (relative to
the script's folder, where the project view takes a script to run from), ``__file__``,
``os.path`` ``dirname``/``abspath``/``realpath``/``normpath``/``join``, ``pathlib.Path``
with ``.parent``/``.parents[i]``/``.resolve()``/``/``, ``str(...)``, or a module-level
name bound once to one of these -- adds its folder to where the file's imports are looked
for. One that is not read so (an environment variable, a command-line argument) is
:func:`unread_path_entries`: a module the file imports and the project view cannot find
may come from there, and TP523 says so at the ``sys.path`` call.
"""

from __future__ import annotations

import ast
import os
import sys
import weakref
from pathlib import Path

from torchport.check._context import Context
from torchport.check.port._module_files import Lookups, find_module, module_in
from torchport.check.semantic import BindingKind

__all__ = [
    "find_on_script_path",
    "imported_name",
    "module_function_called",
    "script_folders",
    "script_lookups",
    "unread_path_entries",
]

_ADDS = frozenset({"sys.path.append", "sys.path.insert"})
_SAME = frozenset({"os.path.abspath", "os.path.realpath", "os.path.normpath"})
_PATHS = frozenset({"pathlib.Path", "pathlib.PurePath"})
# Libraries a script imports that are no module of its project (not worth a report).
_LIBRARIES = frozenset({"torch", "numpy", "scipy", "pandas", "matplotlib", "sklearn", "tqdm"})


def find_on_script_path(
    ctx: Context, importer: Path, lookups: Lookups, module: str | None, level: int
) -> Path | None:
    """:func:`find_module`, then in the folders the script adds to ``sys.path``."""
    found = find_module(importer, module, level, lookups)
    if found is not None or level or not module:
        return found
    for folder in script_folders(ctx)[0]:
        found = module_in(folder, module, lookups)
        if found is not None:
            return found
    return None


def module_function_called(call: ast.Call, ctx: Context) -> tuple[str, Path | None] | None:
    """The module-level function ``call`` calls: (its name, the project file defining it).

    The file is None for a function this file defines at its top level (``def f``; ``f()``);
    a function of a project module imported at the top level is found as Python finds it
    (``from mod import f; f()``, ``import mod; mod.f()``). None for any other callee
    (a method, a local, ``import pkg.mod`` then ``pkg.mod.f()``, a module not found).
    """
    func: ast.expr = call.func
    attr = None
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        func, attr = call.func.value, call.func.attr
    if not isinstance(func, ast.Name):
        return None
    binding = ctx.scopes.binding_at(func)
    if binding is None or binding.scope is not ctx.scopes.module:
        return None
    if attr is None and binding.kind is BindingKind.DEF:
        return func.id, None
    if binding.kind is not BindingKind.IMPORT:
        return None
    node = binding.node
    if attr is None and isinstance(node, ast.ImportFrom):
        name = next((a.name for a in node.names if (a.asname or a.name) == func.id), None)
        where = _found(ctx, node.module, node.level)
    elif attr is not None and isinstance(node, ast.Import):
        alias = next((a for a in node.names if (a.asname or a.name) == func.id), None)
        if alias is None:
            return None
        name, where = attr, _found(ctx, alias.name, 0)
    else:
        return None
    return None if name is None or where is None else (name, where)


def imported_name(ctx: Context, expr: ast.expr) -> tuple[str, Path] | None:
    """(the name, the project file binding it) that ``expr`` reads through an import, at the
    top or in a function: ``f`` after ``from mod import f`` (not ``*``), ``mod.f`` after
    ``import mod`` (also ``import pkg.mod as mod``); None for anything else or a module of no
    project file. A package's ``__init__.py`` is returned as it is (its names may be
    submodules: the caller decides)."""
    if not ctx.path or ctx.path.startswith("<") or not Path(ctx.path).is_file():
        return None
    name, holder = (expr.id, expr) if isinstance(expr, ast.Name) else ("", None)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        name, holder = expr.attr, expr.value
    if holder is None:
        return None
    binding = ctx.scopes.binding_at(holder)
    if binding is None or binding.kind is not BindingKind.IMPORT:
        return None
    node, find = binding.node, Lookups()
    if isinstance(node, ast.ImportFrom) and holder is expr:
        alias = next((a for a in node.names if (a.asname or a.name) == holder.id), None)
        if alias is None or alias.name == "*":
            return None
        name = alias.name
        path = find_on_script_path(ctx, Path(ctx.path), find, node.module, node.level)
    elif isinstance(node, ast.Import) and holder is not expr and binding.qualified:
        path = find_on_script_path(ctx, Path(ctx.path), find, binding.qualified, 0)
    else:
        return None
    return None if path is None else (name, path)


def script_lookups(ctx: Context) -> Lookups:
    """One :class:`Lookups` for the file being checked, shared by the questions about it."""
    found = ctx.memo.get("script_path.lookups")
    if found is None:
        found = ctx.memo["script_path.lookups"] = Lookups()
    return found  # type: ignore[return-value]


def _found(ctx: Context, module: str | None, level: int) -> Path | None:
    """The project's file ``module`` names from this file, once per file and module."""
    if not ctx.path or ctx.path.startswith("<"):
        return None
    memo: dict[tuple[str | None, int], Path | None] | None = ctx.memo.get("script_path.found")  # type: ignore[assignment]
    if memo is None:
        memo = ctx.memo["script_path.found"] = {}
    key = (module, level)
    if key not in memo:
        importer = Path(ctx.path)
        memo[key] = (
            find_on_script_path(ctx, importer, script_lookups(ctx), module, level)
            if importer.is_file()
            else None
        )
    return memo[key]


_MEMO: weakref.WeakKeyDictionary[Context, tuple[tuple[str, ...], tuple[ast.Call, ...]]] = (
    weakref.WeakKeyDictionary()
)


def script_folders(ctx: Context) -> tuple[tuple[str, ...], tuple[ast.Call, ...]]:
    """``(folders read, sys.path calls not read)`` of the file's module level."""
    known = _MEMO.get(ctx)
    if known is not None:
        return known
    folders: list[str] = []
    unread: list[ast.Call] = []
    if ctx.path and not ctx.path.startswith("<") and "sys" in ctx.source:
        here = os.path.dirname(os.path.abspath(ctx.path))
        for call in _path_calls(ctx):
            given = call.args[-1] if call.args else None
            folder = _folder(given, ctx, here, 0) if given is not None else None
            if folder is None:
                unread.append(call)
            elif folder not in folders:
                folders.append(folder)
    _MEMO[ctx] = found = (tuple(folders), tuple(unread))
    return found


def unread_path_entries(ctx: Context) -> list[tuple[ast.Call, list[str]]]:
    """Each ``sys.path`` call not read, with the modules the file imports at module level
    that the project view cannot find (neither the standard library's nor a common
    library's): they may be the project's, reached through that entry."""
    unread = script_folders(ctx)[1]
    if not unread or not ctx.path:
        return []
    importer = Path(ctx.path)
    lookups = Lookups()
    missing: list[str] = []
    for stmt in ast.walk(ctx.tree):
        if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
            names = [stmt.module]
        elif isinstance(stmt, ast.Import):
            names = [a.name for a in stmt.names]
        else:
            continue
        for name in names:
            head = name.partition(".")[0]
            if head in sys.stdlib_module_names or head in _LIBRARIES or name in missing:
                continue
            if find_on_script_path(ctx, importer, lookups, name, 0) is None:
                missing.append(name)
    return [(call, missing) for call in unread] if missing else []


def _path_calls(ctx: Context) -> list[ast.Call]:
    found = []
    stack: list[ast.stmt] = list(ctx.tree.body)
    while stack:
        stmt = stack.pop(0)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            if ctx.qualname(stmt.value.func) in _ADDS:
                found.append(stmt.value)
        elif isinstance(stmt, ast.If | ast.Try):
            for block in (stmt.body, stmt.orelse, getattr(stmt, "finalbody", [])):
                stack.extend(block)
    return found


def _folder(expr: ast.expr, ctx: Context, here: str, depth: int) -> str | None:
    """The absolute folder ``expr`` names, read from syntax; None when it cannot be."""
    if depth > 12:
        return None
    at = depth + 1
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return os.path.normpath(os.path.join(here, expr.value))
    if isinstance(expr, ast.Name):
        if expr.id == "__file__":
            return os.path.abspath(ctx.path)
        bound = ctx.scopes.bindings(expr.id, expr)
        value = bound[0].value if len(bound) == 1 else None
        return None if value is None else _folder(value, ctx, here, at)
    if isinstance(expr, ast.Attribute) and expr.attr == "parent":
        inner = _folder(expr.value, ctx, here, at)
        return None if inner is None else os.path.dirname(inner)
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute):
        if expr.value.attr == "parents" and isinstance(expr.slice, ast.Constant):
            inner = _folder(expr.value.value, ctx, here, at)
            up = expr.slice.value
            if inner is None or not isinstance(up, int) or up < 0:
                return None
            for _ in range(up + 1):
                inner = os.path.dirname(inner)
            return inner
        return None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
        left, right = _folder(expr.left, ctx, here, at), _part(expr.right)
        return None if left is None or right is None else os.path.normpath(f"{left}/{right}")
    if not isinstance(expr, ast.Call):
        return None
    func = expr.func
    if isinstance(func, ast.Attribute) and func.attr in ("resolve", "absolute") and not expr.args:
        return _folder(func.value, ctx, here, at)
    name = ctx.qualname(func)
    if name is None and isinstance(func, ast.Name) and func.id == "str":
        name = "os.path.normpath"  # `str(path)`: the same folder
    args = expr.args
    if name == "os.path.dirname" and len(args) == 1:
        inner = _folder(args[0], ctx, here, at)
        return None if inner is None else os.path.dirname(inner)
    if (name in _SAME or name in _PATHS) and len(args) == 1 and not expr.keywords:
        return _folder(args[0], ctx, here, at)
    if name == "os.path.join" and args:
        first = _folder(args[0], ctx, here, at)
        rest = [_part(a) for a in args[1:]]
        if first is None or any(r is None for r in rest):
            return None
        return os.path.normpath(os.path.join(first, *(r for r in rest if r is not None)))
    return None


def _part(expr: ast.expr) -> str | None:
    """A relative path component written as a string (``".."``, ``"src"``)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return None if os.path.isabs(expr.value) else expr.value
    return None
