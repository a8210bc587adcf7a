"""Dicts unpacked into ``torch.load(**kw)`` that keep loading safe (TP305)."""

from __future__ import annotations

import ast
import weakref

from torchport.check._context import Context

__all__ = ["only_safe_dicts"]


def only_safe_dicts(name: ast.Name, ctx: Context) -> bool:
    """Whether every binding of ``name`` is a safe dict literal; once per name and scope."""
    known = _SAFE.setdefault(ctx, {})
    key = (id(ctx.scopes.resolve(name.id, name)), name.id)
    if key not in known:  # asked per load: a loop over the bindings each time was quadratic
        found = ctx.scopes.bindings(name.id, name)
        known[key] = bool(found) and all(b.value is not None and _safe_dict(b.value) for b in found)
    return known[key]


_SAFE: weakref.WeakKeyDictionary[Context, dict[tuple[int, str], bool]] = weakref.WeakKeyDictionary()


def _safe_dict(expr: ast.expr) -> bool:
    if isinstance(expr, ast.IfExp):
        return _safe_dict(expr.body) and _safe_dict(expr.orelse)
    if not isinstance(expr, ast.Dict):
        return False
    for key, value in zip(expr.keys, expr.values, strict=True):
        if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
            return False  # `**other` inside the literal, or a computed key
        if key.value == "pickle_module":
            return False
        if key.value == "weights_only" and not (
            isinstance(value, ast.Constant) and value.value is True
        ):
            return False
    return True
