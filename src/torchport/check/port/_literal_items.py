"""The item a constant subscript reads out of a container literal: ``d["a"]``, ``p[0]``.

``d = dict(a=torch.zeros(8, 1), b=model(x))``, then ``d["a"] + d["b"]``: the flow takes a
container as a whole (on the device where one item is), so the two reads never meet in its
eyes, and the CPU item stays where it is. Where the read is sure to hand back one item of
the literal, the flow, the kinds and the origins answer for that item instead:

* the name is bound once in its scope, to a ``dict(k=v, ...)`` call of the builtin, a
  ``{...}`` display with constant keys, a tuple or a list (no ``*``/``**`` inside);
* every read of the name in that scope (its nested scopes too) is a subscript with a
  constant key or index (``d["a"]``, ``q[-1]``) that the literal holds, loaded: no
  ``d["a"] = ...``, ``q.append(...)``, ``f(d)``, ``del d[0]``, nothing that could
  change or hand out the container;
* the read is in the scope that binds the name (the item's marks are that scope's).

Anything else is no such read (None), and the container is taken whole, as before.
Syntax and scopes only.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.semantic import Binding

__all__ = ["LiteralItems"]


class LiteralItems:
    """Answers :meth:`item` for one file (each container's reads are checked once)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._sure: dict[int, bool] = {}  # id(binding) -> every read a constant item read
        self._names: dict[str, list[ast.Name]] | None = None  # a name -> its reads, file-wide

    def item(self, expr: ast.expr) -> ast.expr | None:
        """The item of a container literal ``expr`` (a subscript) reads, or None."""
        if not isinstance(expr, ast.Subscript) or not isinstance(expr.ctx, ast.Load):
            return None
        name = expr.value
        if not isinstance(name, ast.Name):
            return None
        found = self.ctx.scopes.bindings(name.id, name)
        if len(found) != 1 or found[0].value is None:
            return None
        binding = found[0]
        if self.ctx.scopes.scope_of(expr) is not binding.scope:
            return None
        item = _item_of(binding.value, expr.slice, self.ctx)
        if item is None or not self._only_item_reads(binding):
            return None
        return item

    def _only_item_reads(self, binding: Binding) -> bool:
        known = self._sure.get(id(binding))
        if known is None:
            value = binding.value
            reads = [
                n
                for n in self._reads().get(binding.name, [])
                if self.ctx.scopes.resolve(n.id, n) is binding.scope
            ]
            known = value is not None and all(
                isinstance(p := self.ctx.scopes.parent(n), ast.Subscript)
                and p.value is n
                and isinstance(p.ctx, ast.Load)
                and _item_of(value, p.slice, self.ctx) is not None
                for n in reads
            )
            self._sure[id(binding)] = known
        return known

    def _reads(self) -> dict[str, list[ast.Name]]:
        """Every use of each name in the file (one walk); stores too (``del d``, ``d += x``
        bind the name, so the binding is not alone; these are loads)."""
        if self._names is None:
            self._names = {}
            for node in ast.walk(self.ctx.tree):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    self._names.setdefault(node.id, []).append(node)
        return self._names


def _item_of(value: ast.expr | None, key: ast.expr, ctx: Context) -> ast.expr | None:
    """The item of the literal ``value`` that the constant ``key`` selects (None: no such)."""
    if isinstance(value, (ast.Tuple, ast.List)):
        index = _constant(key)
        if (
            not isinstance(index, int)
            or isinstance(index, bool)
            or any(isinstance(e, ast.Starred) for e in value.elts)
            or not -len(value.elts) <= index < len(value.elts)
        ):
            return None
        return value.elts[index]
    pairs: list[tuple[object, ast.expr]] = []
    if isinstance(value, ast.Dict):
        if any(not isinstance(k, ast.Constant) for k in value.keys):
            return None  # `{**base, ...}` (a None key) or a computed key
        pairs = [(k.value, v) for k, v in zip(value.keys, value.values, strict=True)]  # type: ignore[union-attr]
    elif (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "dict"
        and ctx.qualname(value.func) is None  # the builtin, not an import of that name
        and not value.args
        and all(k.arg is not None for k in value.keywords)
    ):
        pairs = [(k.arg, k.value) for k in value.keywords]
    else:
        return None
    wanted = _constant(key)
    if not isinstance(wanted, str):
        return None  # (a number key may equal a bool or a float key: not followed)
    chosen = [v for k, v in pairs if isinstance(k, str) and k == wanted]
    return chosen[-1] if chosen else None  # the last of a repeated key wins, as in Python


def _constant(key: ast.expr) -> object:
    """A constant key or index (``"a"``, ``0``, ``-1``); None otherwise."""
    if isinstance(key, ast.Constant):
        return key.value
    if (
        isinstance(key, ast.UnaryOp)
        and isinstance(key.op, ast.USub)
        and isinstance(key.operand, ast.Constant)
        and isinstance(key.operand.value, int)
        and not isinstance(key.operand.value, bool)
    ):
        return -key.operand.value
    return None
