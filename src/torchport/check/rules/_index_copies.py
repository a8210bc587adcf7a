"""A batch copy of a list-indexed tensor, where pinning cannot help, for TP203.

``y = batch.fhr[idx_keep].to(device)`` with ``idx_keep = [i for i in range(take) if ...]``
or ``list(range(take))`` (held-out sample AF's F12, VAE-TEB's ``run_up_ablation_analysis``,
judged low): indexing a tensor with a list of ints is advanced indexing, which makes a new
tensor in ordinary (pageable) memory each batch, whatever the loader pinned; a copy from
pageable memory does not overlap compute, so ``non_blocking=True`` and ``pin_memory`` gain
nothing there.

The index is a list of ints for sure: a list display of int literals, ``list(range(...))``,
or ``[i for i in range(...) if ...]`` (the builtins ``list`` and ``range``: no binding of the
name reaches the call), or a name of the function's own scope bound on every path, every
binding of which is one of these and which nothing there changes in place (``idx.append``,
``idx[0] = ...``, ``idx += ...``). Not: a name bound to anything else or in another scope, a
list holding a slice, ``None`` or a name (``x[[0, slice(None)]]`` is basic indexing, a view of
the pinned tensor), an int or a slice index.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.semantic._binding import BindingKind

__all__ = ["copies_a_list_index"]


def copies_a_list_index(expr: ast.expr, ctx: Context) -> bool:
    """Whether ``expr`` (what is copied) is ``<tensor>[<a list of ints>]``."""
    if not isinstance(expr, ast.Subscript):
        return False
    index = expr.slice
    if isinstance(index, ast.Name):
        return _bound_to_int_lists(index, ctx)
    return _int_list(index, ctx)


def _builtin(name: ast.expr, builtin: str, ctx: Context) -> bool:
    return (
        isinstance(name, ast.Name) and name.id == builtin and not ctx.scopes.bindings(builtin, name)
    )


def _range(call: ast.expr, ctx: Context) -> bool:
    return isinstance(call, ast.Call) and _builtin(call.func, "range", ctx) and not call.keywords


def _int_list(value: ast.expr | None, ctx: Context) -> bool:
    if isinstance(value, ast.List):
        return all(isinstance(e, ast.Constant) and type(e.value) is int for e in value.elts)
    if isinstance(value, ast.Call):  # `list(range(n))`
        return (
            _builtin(value.func, "list", ctx)
            and len(value.args) == 1
            and not value.keywords
            and _range(value.args[0], ctx)
        )
    if isinstance(value, ast.ListComp) and len(value.generators) == 1:
        (loop,) = value.generators
        return (
            isinstance(loop.target, ast.Name)
            and isinstance(value.elt, ast.Name)
            and value.elt.id == loop.target.id
            and not loop.is_async
            and _range(loop.iter, ctx)
        )
    return False


def _bound_to_int_lists(name: ast.Name, ctx: Context) -> bool:
    scopes = ctx.scopes
    scope = scopes.resolve(name.id, name)
    if scope is not scopes.scope_of(name) or scope is scopes.module:
        return False  # a global or a free name: bound elsewhere, at another time
    bindings = scopes.bindings(name.id, name)
    if not bindings or not scopes.definitely_bound(name.id, name):
        return False
    if not all(b.kind is BindingKind.ASSIGN and _int_list(b.value, ctx) for b in bindings):
        return False
    return not any(
        isinstance(n, (ast.Attribute, ast.Subscript))
        and isinstance(n.value, ast.Name)
        and n.value.id == name.id
        and (isinstance(n, ast.Attribute) or not isinstance(n.ctx, ast.Load))
        for n in ast.walk(scope.node)
    )
