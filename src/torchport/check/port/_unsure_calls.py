"""The calls TP523 reports as "check what `Net` is": a project name that is unsure where
another module binds it (``port/_unsure_names.py``), called in a file that binds it only by
its import (or a star import), unless the code places what it makes itself (``.to(...)``)."""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.port._project_view import project_of

__all__ = ["dynamic_calls", "unsure_calls"]


def unsure_calls(ctx: Context) -> list[ast.Call]:
    """Calls in ``ctx``'s file of a name another project module binds that is unsure there
    (``port/_unsure_names.py``), the file binding it only by its import: what TP523 reports."""
    project = project_of(ctx)
    if not project.unsure and not any(f.unsure or f.dynamic for f in project.modules.values()):
        return []
    calls = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call)]
    placed = {  # `DeformConv(...).to(device)`: the code places it itself
        id(c.func.value)
        for c in calls
        if isinstance(c.func, ast.Attribute) and c.func.attr in _MOVES
    }
    return [
        node
        for node in calls
        if id(node) not in placed
        and project.unsure_class(node.func)
        and _imported(ctx, _root(node.func))
    ]


def dynamic_calls(ctx: Context, has_models: bool) -> list[ast.Call]:
    """Calls of ``globals()[key]`` (``vars()``, ``locals()``) with a key the code computes
    (``globals()[args.arch](...)``) in a file that defines a model class (``has_models``),
    unless the code places what it makes itself: which class it calls, only a run tells
    (x31al: a model made so, and its input, were left on the CPU with "0 left")."""
    if not has_models or not _may_name(ctx.source, _TABLES):
        return []  # no walk: no `globals` (`vars`, `locals`) name in the text
    calls = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call)]
    placed = {
        id(c.func.value)
        for c in calls
        if isinstance(c.func, ast.Attribute) and c.func.attr in _MOVES
    }
    return [
        c
        for c in calls
        if id(c) not in placed
        and isinstance(c.func, ast.Subscript)
        and isinstance(table := c.func.value, ast.Call)
        and isinstance(table.func, ast.Name)
        and table.func.id in _TABLES
        and not table.args
        and not isinstance(c.func.slice, ast.Constant)
        and table.func.id not in ctx.scopes.module.bindings
    ]


def _may_name(source: str, words: tuple[str, ...]) -> bool:
    """Whether the tree parsed from ``source`` may hold a name (``ast.Name``) spelled as one
    of ``words``: an ASCII text writes each identifier as it is (escapes and implicit
    concatenation make constants, never names); a non-ASCII one may spell it otherwise
    (identifiers are NFKC-normalised)."""
    return not source.isascii() or any(word in source for word in words)


def _imported(ctx: Context, name: str) -> bool:
    """Bound only by imports at module level, or by nothing there (a star import)."""
    return ctx.only_imported(name) or name not in ctx.scopes.module.bindings


_MOVES = ("to", "cuda", "cpu")
_TABLES = ("globals", "vars", "locals")


def _root(func: ast.expr) -> str:
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else ""
