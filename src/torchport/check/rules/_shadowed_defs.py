"""Methods a later ``def`` of the same name in the class body replaces: they never run.

``class TrainerParent:`` with two ``def __init__`` (sample AE's D5, judged low (e):
contrastive-gap's ``src/trainer.py``): the class keeps the second, so what the first does
is dead code, and a default run reports nothing in it. Only where nothing can keep the
first: it has no decorator (``@overload``, a registering one, ``@property`` before its
``@x.setter``), both are plain statements of the class body (not inside an ``if``), and
no statement between them, nor the second's decorators, reads the name (``alias = f``,
``f = staticmethod(f)``).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["in_a_shadowed_def"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def in_a_shadowed_def(ctx: Context, node: ast.AST | None) -> bool:
    """Whether ``node`` (the node being checked) is inside a method its class replaces."""
    dead = ctx.memo.get("shadowed_defs")
    if not isinstance(dead, frozenset):
        dead = ctx.memo["shadowed_defs"] = _shadowed(ctx)
    if not dead:
        return False
    return any(id(a) in dead for a in ctx.ancestors) or id(node) in dead


def _shadowed(ctx: Context) -> frozenset[int]:
    """``id`` of every method a later one of its class body replaces, once per file."""
    if ctx.source.count("def ") < 2:
        return frozenset()
    found: set[int] = set()
    for cls in ctx.scopes.nodes_of(ast.ClassDef):
        assert isinstance(cls, ast.ClassDef)
        body = cls.body
        for i, stmt in enumerate(body):
            if not isinstance(stmt, _DEFS) or stmt.decorator_list:
                continue
            later = next((j for j in range(i + 1, len(body)) if _defines(body[j], stmt.name)), None)
            if later is None:
                continue
            replacing = body[later]
            assert isinstance(replacing, _DEFS)
            between = [*body[i + 1 : later], *replacing.decorator_list]
            if not any(_reads(part, stmt.name) for part in between):
                found.add(id(stmt))
    return frozenset(found)


def _defines(stmt: ast.stmt, name: str) -> bool:
    return isinstance(stmt, _DEFS) and stmt.name == name


def _reads(part: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Store)
        for n in ast.walk(part)
    )
