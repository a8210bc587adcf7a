"""The item a constant subscript reads out of a container literal: ``d["a"]``, ``p[0]``.

``d = dict(a=torch.zeros(8, 1), b=model(x))``, then ``d["a"] + d["b"]``: the flow takes a
container as a whole (on the device where one item is), so the two reads never meet in its
eyes, and the CPU item stays where it is. Where the read is sure to hand back one item of
the literal (or a value stored under its key), the flow, the kinds and the origins answer
for those values instead (:meth:`LiteralItems.of`):

* the name is bound once in its scope, to a ``dict(k=v, ...)`` call of the builtin, a
  ``{...}`` display with constant keys, a tuple or a list (no ``*``/``**`` inside);
* every use of the name in that scope (its nested scopes too) is a subscript with a
  constant key or index the literal holds, loaded, or stored as a whole statement
  (``d["c"] = v``, ``q[0] = v``: the key then reads that value too; not ``d["a"].append(v)``
  nor ``d["a"][0] = v``, which change the item), ``len(q)``, or, for a
  list read only at indices from its start, ``q.append(v)`` / ``q.extend(vs)``; nothing
  else (``del q[0]``, ``q.pop()``, ``f(q)``, ``r = q``) that could change or hand out the
  container;
* the read is in the scope that binds the name (the item's marks are that scope's).

A tuple or list literal read any other way is taken whole, as before, and where the flow
takes it for a device value, its items that are not must be put there too
(:meth:`LiteralItems.parts`): moved where they are made, or reported. A dict literal read
any other way (``n = d``, ``f(d)``) is still no device value, as before: taken whole, it
made items of checkpoints and records meet the device (``torch.save({...}, path)``, five
more findings on fairseq), so that class is left (a strict xfail says it).
Syntax and scopes only.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.semantic import Binding

__all__ = ["LiteralItems", "opened"]

_GROWS = frozenset({"append", "extend"})
# Methods that put a value into the container they are called on (an item that is one)
_PUTS = _GROWS | frozenset({"insert", "add", "update", "setdefault", "appendleft", "put"})


class LiteralItems:
    """Answers :meth:`of` and :meth:`parts` for one file (each container checked once)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        # id(binding) -> key -> the values stored under it; None: a use not read so
        self._stores: dict[int, dict[object, list[ast.expr]] | None] = {}
        self._names: dict[str, list[ast.Name]] | None = None  # a name -> its reads, file-wide

    def of(self, expr: ast.expr) -> list[ast.expr] | None:
        """The values the subscript ``expr`` of a container literal may read, or None."""
        if not isinstance(expr, ast.Subscript) or not isinstance(expr.ctx, ast.Load):
            return None
        binding = self._binding(expr.value)
        if binding is None or self.ctx.scopes.scope_of(expr) is not binding.scope:
            return None
        stores = self._stored(binding)
        key = _key(binding.value, expr.slice, self.ctx)
        if stores is None or key is None:
            return None
        item = _item_of(binding.value, key, self.ctx)
        found = ([item] if item is not None else []) + stores.get(key, [])
        return found or None

    def parts(self, value: ast.expr, targets: list[ast.expr]) -> list[ast.expr]:
        """What of ``value``, bound to ``targets``, must be where the name is: none of a
        container literal read only by :meth:`of` (each read answers for its items); the
        items of a tuple or list literal read otherwise (``r = q``, ``f(q)``); else itself."""
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            return [value]
        binding = self._binding(targets[0])
        if binding is None or binding.value is not value:
            return [value]
        if self._stored(binding) is not None:
            return []
        if isinstance(value, (ast.Tuple, ast.List)) and not any(
            isinstance(e, ast.Starred) for e in value.elts
        ):
            return list(value.elts)
        return [value]

    def _binding(self, name: ast.expr) -> Binding | None:
        """The binding of the name ``name`` to a value, where it has no other."""
        if not isinstance(name, ast.Name):
            return None
        found = self.ctx.scopes.bindings(name.id, name)
        return found[0] if len(found) == 1 and found[0].value is not None else None

    def _stored(self, binding: Binding) -> dict[object, list[ast.expr]] | None:
        """Key -> the values stored under it, where every use of ``binding``'s name is one
        the module docstring lists; None otherwise."""
        key = id(binding)
        if key not in self._stores:
            self._stores[key] = self._read(binding)
        return self._stores[key]

    def _read(self, binding: Binding) -> dict[object, list[ast.expr]] | None:
        value, parent = binding.value, self.ctx.scopes.parent
        if not isinstance(value, (ast.Tuple, ast.List)) and not _mapping(value, self.ctx):
            return None  # no container literal
        stores: dict[object, list[ast.expr]] = {}
        keys: list[object] = []
        grows = counted = False
        for n in self._reads().get(binding.name, []):
            if self.ctx.scopes.resolve(n.id, n) is not binding.scope:
                continue
            up = parent(n)
            if isinstance(up, ast.Subscript) and up.value is n:
                key = _key(value, up.slice, self.ctx)
                above = parent(up)
                if key is None:
                    return None
                keys.append(key)
                counted |= _from_the_end(up.slice)
                if isinstance(up.ctx, ast.Load):
                    if _fills(above, up):
                        return None  # `d["a"].append(out)`: the item changes, not the literal
                    continue
                if not (
                    isinstance(up.ctx, ast.Store)
                    and isinstance(above, ast.Assign)
                    and above.targets == [up]
                    and not isinstance(value, ast.Tuple)
                ):
                    return None  # `del q[0]`, `q[0] += v`, `a, q[0] = ...`
                stores.setdefault(key, []).append(above.value)
            elif isinstance(up, ast.Call) and up.args == [n] and not up.keywords:
                if getattr(up.func, "id", None) != "len" or self.ctx.qualname(up.func):
                    return None
            elif (
                isinstance(up, ast.Attribute)
                and up.attr in _GROWS
                and isinstance(value, ast.List)
                and isinstance(call := parent(up), ast.Call)
                and call.func is up
            ):
                grows = True
            else:
                return None
        if grows and counted:
            return None  # `q[-1]` of a list that grows: not the literal's last item
        items = len(value.elts) if isinstance(value, (ast.Tuple, ast.List)) else None
        if any(_item_of(value, k, self.ctx) is None and k not in stores for k in keys) or (
            items is not None and any(isinstance(k, int) and k >= items for k in keys)
        ):
            return None
        return stores

    def _reads(self) -> dict[str, list[ast.Name]]:
        """Every load of each name in the file (one walk)."""
        if self._names is None:
            self._names = {}
            for node in ast.walk(self.ctx.tree):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    self._names.setdefault(node.id, []).append(node)
        return self._names


def _mapping(value: ast.expr | None, ctx: Context) -> bool:
    """``{...}`` with constant keys (no ``**``), or ``dict(k=v, ...)`` of the builtin."""
    if isinstance(value, ast.Dict):
        return all(isinstance(k, ast.Constant) for k in value.keys)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "dict"
        and ctx.qualname(value.func) is None  # the builtin, not an import of that name
        and not value.args
        and all(k.arg is not None for k in value.keywords)
    )


def _key(value: ast.expr | None, key: ast.expr, ctx: Context) -> object:
    """The constant key a subscript of the literal ``value`` takes (an index counted from
    the start of a tuple or list; a string of a dict); None: not one read here."""
    if isinstance(value, (ast.Tuple, ast.List)):
        index = _constant(key)
        if (
            not isinstance(index, int)
            or isinstance(index, bool)
            or any(isinstance(e, ast.Starred) for e in value.elts)
        ):
            return None
        return index + len(value.elts) if index < 0 else index
    if _mapping(value, ctx):
        wanted = _constant(key)
        return wanted if isinstance(wanted, str) else None  # (1 == True == 1.0: not followed)
    return None


def _item_of(value: ast.expr | None, key: object, ctx: Context) -> ast.expr | None:
    """The item of the literal ``value`` under ``key`` (from :func:`_key`); None: none."""
    if isinstance(value, (ast.Tuple, ast.List)):
        return value.elts[key] if isinstance(key, int) and 0 <= key < len(value.elts) else None
    pairs: list[tuple[object, ast.expr]] = []
    if isinstance(value, ast.Dict):
        pairs = [(k.value, v) for k, v in zip(value.keys, value.values, strict=True)]  # type: ignore[union-attr]
    elif isinstance(value, ast.Call):
        pairs = [(k.arg, k.value) for k in value.keywords]
    chosen = [v for k, v in pairs if isinstance(k, str) and k == key]
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


def _from_the_end(key: ast.expr) -> bool:
    """``q[-1]``: an index counted from the end."""
    index = _constant(key)
    return isinstance(index, int) and index < 0


def opened(operands: list[ast.expr]) -> list[ast.expr]:
    """``operands`` with lists and tuples (nested too, and starred items) opened."""
    out: list[ast.expr] = []
    stack = list(reversed(operands))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.List, ast.Tuple, ast.Starred)):
            stack.extend(reversed(node.elts) if not isinstance(node, ast.Starred) else [node.value])
        else:
            out.append(node)
    return out


def _fills(above: ast.AST | None, item: ast.Subscript) -> bool:
    """``d["a"].append(v)``, ``d["a"][0] = v``: a value put into the item ``item`` reads."""
    if isinstance(above, ast.Attribute) and above.value is item:
        return above.attr in _PUTS
    return isinstance(above, ast.Subscript) and not isinstance(above.ctx, ast.Load)
