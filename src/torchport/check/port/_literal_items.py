"""The item a constant subscript reads out of a container literal: ``d["a"]``, ``p[0]``.

``d = dict(a=torch.zeros(8, 1), b=model(x))``, then ``d["a"] + d["b"]``: the flow takes a
container as a whole (on the device where one item is), so the two reads never meet in its
eyes, and the CPU item stays where it is. Where the read is sure to hand back one item of
the literal (or a value stored under its key), the flow, the kinds and the origins answer
for those values instead (:meth:`LiteralItems.of`):

* the name is bound once in its scope, to a ``dict(k=v, ...)`` call of the builtin, a
  ``{...}`` display with constant keys, a tuple or a list (no ``*`` inside), or a copy of
  a dict bound so (``dict(d)``, ``{**d, "k": v}``, ``d.copy()``, ``copy.copy(d)``, ``d``
  itself: the copy reads ``d``'s items and what is stored under ``d``'s keys, and what is
  stored under the keys of ``e = d`` is stored under ``d``'s);
* every use of the name in that scope (its nested scopes too) is a subscript with a
  constant key or index the literal holds, loaded, or stored as a whole statement
  (``d["c"] = v``, ``q[0] = v``: the key then reads that value too; not ``d["a"].append(v)``
  nor ``d["a"][0] = v``, which change the item), ``len(q)``, a dict's ``.values()``,
  ``.items()`` or ``.keys()`` (its items read: a loop over them takes each, issue 31,
  :meth:`LiteralItems.view_values`), or, for a
  list read only at indices from its start, ``q.append(v)`` / ``q.extend(vs)``; nothing
  else (``del q[0]``, ``q.pop()``, ``f(q)``, ``r = q``) that could change or hand out the
  container, but a dict's copy bound to a name read so;
* the read is in the scope that binds the name (the item's marks are that scope's).

A tuple or list literal read any other way is taken whole, as before, and where the flow
takes it for a device value, its items that are not must be put there too
(:meth:`LiteralItems.parts`): moved where they are made, or reported. A dict literal read
any other way is still no device value: taken whole, it made items of checkpoints and
records meet the device (``torch.save({...}, path)``, five more findings on fairseq). Handed
to the file's own function (``f(d)``, ``f(dict(d))``), it hands its items
(:meth:`LiteralItems.mapping_items`, ``_call_flow``): the parameter is a device value
there where one of them is, and its other items are then moved or reported.
Syntax and scopes only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

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

    def of(self, expr: ast.expr) -> list[ast.expr] | None:
        """The values the subscript ``expr`` of a container literal may read, or None."""
        if not isinstance(expr, ast.Subscript) or not isinstance(expr.ctx, ast.Load):
            return None
        binding = self._binding(expr.value)
        if binding is None or self.ctx.scopes.scope_of(expr) is not binding.scope:
            return None
        stores = self._stored(binding)
        key = self._key(binding.value, expr.slice)
        if stores is None or key is None:
            return None
        found = self._items_of(binding.value, key) + stores.get(key, [])
        for source in self._sources(binding.value, _DEPTH):  # what was stored in the copied
            stored = self._stored(source)
            if stored is None:
                return None
            found += stored.get(key, [])
        return found or None

    def mapping_items(self, expr: ast.expr) -> list[ast.expr] | None:
        """Every item of the dict ``expr`` is, or a name bound once to is (a literal with
        constant keys, or a copy of one: ``dict(d)``, ``{**d}``, ``d.copy()``), with the values
        stored under its keys; None: no such dict. A dict handed to the file's own function
        (``f(d)``, read there as ``p["a"]``) hands these (``_call_flow.seed_parameters``)."""
        binding = self._binding(expr) if isinstance(expr, ast.Name) else None
        value = binding.value if binding is not None else expr
        pairs = self._pairs(value, _DEPTH)
        if pairs is None:
            return None
        found = [v for _, v in pairs]
        for source in [*([binding] if binding is not None else []), *self._sources(value, _DEPTH)]:
            stored = self._stored(source)
            found += [v for vs in (stored or {}).values() for v in vs]
        return found

    def view_values(self, expr: ast.expr) -> list[ast.expr] | None:
        """Every value the dict the name ``expr`` is bound once to may hold, where each use of
        it reads it (by key, or its ``.values()``/``.items()``: :meth:`_stored`); else None."""
        binding = self._binding(expr)
        if binding is None or self._stored(binding) is None:
            return None
        return self.mapping_items(expr)

    def unpacked(self, expr: ast.expr) -> dict[str, list[ast.expr]] | None:
        """Key -> the values ``**expr`` hands under it, where ``expr`` is a dict literal with
        constant keys (or a copy of one) or a name bound once to one and read only so (or by
        key: :meth:`_stored`); None otherwise. ``f(**d)`` hands ``f`` a fresh dict: no use of
        ``d`` that may change it."""
        binding = self._binding(expr) if isinstance(expr, ast.Name) else None
        if binding is not None and self._stored(binding) is None:
            return None
        value = binding.value if binding is not None else expr
        pairs = self._pairs(value, _DEPTH)
        if pairs is None:
            return None
        found: dict[str, list[ast.expr]] = {}
        for key, item in pairs:  # (a later key wins)
            if isinstance(key, str):
                found[key] = [item]
        for source in [*([binding] if binding is not None else []), *self._sources(value, _DEPTH)]:
            for key, items in (self._stored(source) or {}).items():
                if isinstance(key, str):
                    found.setdefault(key, []).extend(items)
        return found

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
        if isinstance(value, (ast.Tuple, ast.List)):  # `[*outs, torch.zeros(2)]`: `outs` too
            return [e.value if isinstance(e, ast.Starred) else e for e in value.elts]
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
        if not isinstance(value, (ast.Tuple, ast.List)) and self._pairs(value, _DEPTH) is None:
            return None  # no container literal (nor a copy of a dict one)
        self._stores[id(binding)] = None  # (a copy of itself, `d = dict(d)`: not followed)
        stores: dict[object, list[ast.expr]] = {}
        keys: list[object] = []
        grows = counted = False
        # every read of the name in the file, in `ast.walk` order (the scope map's index)
        for n in self.ctx.scopes.loads_of(binding.name):
            if self.ctx.scopes.resolve(n.id, n) is not binding.scope:
                continue
            up = parent(n)
            copy = self._copied(n)
            if copy is n:  # `e = d`: what is stored under `e`'s keys is stored under `d`'s
                other = self._binding(parent(n).targets[0])  # type: ignore[union-attr]
                for k, vs in (self._stored(other) or {}).items() if other else ():
                    stores.setdefault(k, []).extend(vs)
            if copy is not None:  # `e = dict(d)`, `{**d}`, `d.copy()`: e read by key
                continue
            if isinstance(up, ast.Subscript) and up.value is n:
                key = self._key(value, up.slice)
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
            elif isinstance(up, ast.keyword) and up.arg is None and not isinstance(value, ast.List):
                continue  # `f(**d)`: each key read, into a dict of the callee's own
            elif _viewed(up, parent) and not isinstance(value, (ast.Tuple, ast.List)):
                continue  # `d.values()`, `d.items()`, `d.keys()`: its items read (issue 31)
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
        if any(not self._items_of(value, k) and k not in stores for k in keys) or (
            items is not None and any(isinstance(k, int) and k >= items for k in keys)
        ):
            return None
        return stores

    def _copied(self, n: ast.Name) -> ast.expr | None:
        """The copy of the dict ``n`` names (``dict(n)``, ``{**n}``, ``n.copy()``,
        ``copy.copy(n)``, ``n`` itself) where it is the whole value bound once to a name that
        is itself read only by key (:meth:`_stored`); else None."""
        parent = self.ctx.scopes.parent
        up = parent(n)
        copy: ast.AST | None = None
        if isinstance(up, ast.Assign):
            copy = n
        elif isinstance(up, ast.Dict) and any(k is None and v is n for k, v in _entries(up)):
            copy = up
        elif isinstance(up, ast.keyword) and up.arg is None:
            copy = parent(up)
        elif isinstance(up, ast.Call) and n in up.args:
            copy = up
        elif isinstance(up, ast.Attribute) and up.attr == "copy":
            copy = parent(up)
            copy = copy if isinstance(copy, ast.Call) and copy.func is up else None
        holder = parent(copy) if copy is not None else None
        if not (
            isinstance(copy, ast.expr)
            and isinstance(holder, ast.Assign)
            and holder.value is copy
            and len(holder.targets) == 1
            and isinstance(holder.targets[0], ast.Name)
            and self._pairs(copy, _DEPTH) is not None
        ):
            return None
        bound = self._binding(holder.targets[0])
        if bound is None or bound.value is not copy or self._stored(bound) is None:
            return None
        return copy

    def _pairs(self, value: ast.expr | None, depth: int) -> list[tuple[object, ast.expr]] | None:
        """(key, item) of the dict ``value`` makes, in order (a later key wins): a literal
        with constant keys, ``dict(k=v)``, or a copy of a name bound once to such a dict
        (``dict(d, k=v)``, ``{**d, "k": v}``, ``d.copy()``, ``copy.copy(d)``, ``d``); None:
        none of those."""
        if value is None or depth <= 0:
            return None
        sources: list[ast.expr] = []
        pairs: list[tuple[object, ast.expr]] = []
        if isinstance(value, ast.Name):
            sources.append(value)
        elif isinstance(value, ast.Dict):
            for k, v in _entries(value):
                if k is None:
                    sources.append(v)
                elif isinstance(k, ast.Constant):
                    pairs.append((k.value, v))
                else:
                    return None
        elif isinstance(value, ast.Call) and _builtin_dict(value, self.ctx):
            if len(value.args) > 1:
                return None
            sources += value.args
            sources += [k.value for k in value.keywords if k.arg is None]
            pairs += [(k.arg, k.value) for k in value.keywords if k.arg is not None]
        elif isinstance(value, ast.Call) and not value.keywords and _copy_of(value, self.ctx):
            sources.append(value.args[0] if value.args else value.func.value)  # type: ignore[attr-defined]
        else:
            return None
        found: list[tuple[object, ast.expr]] = []
        for source in sources:  # (before the keys written out: those win)
            bound = self._binding(source)
            inner = self._pairs(bound.value, depth - 1) if bound is not None else None
            if inner is None:
                return None
            found += inner
        return found + pairs

    def _sources(self, value: ast.expr | None, depth: int) -> list[Binding]:
        """The bindings of the dicts ``value`` copies (see :meth:`_pairs`), at any depth."""
        if value is None or depth <= 0 or isinstance(value, (ast.Tuple, ast.List)):
            return []
        names: list[ast.expr] = []
        if isinstance(value, ast.Name):
            names.append(value)
        elif isinstance(value, ast.Dict):
            names += [v for k, v in _entries(value) if k is None]
        elif isinstance(value, ast.Call) and _builtin_dict(value, self.ctx):
            names += [*value.args, *(k.value for k in value.keywords if k.arg is None)]
        elif isinstance(value, ast.Call) and _copy_of(value, self.ctx):
            names.append(value.args[0] if value.args else value.func.value)  # type: ignore[attr-defined]
        found: list[Binding] = []
        for name in names:
            bound = self._binding(name)
            if bound is not None:
                found += [bound, *self._sources(bound.value, depth - 1)]
        return found

    def _key(self, value: ast.expr | None, key: ast.expr) -> object:
        """The constant key a subscript of the literal ``value`` takes (an index counted from
        the start of a tuple or list; a string of a dict); None: not one read here."""
        if isinstance(value, (ast.Tuple, ast.List)):
            return _index(value, key)
        if self._pairs(value, _DEPTH) is not None:
            wanted = _constant(key)
            return wanted if isinstance(wanted, str) else None  # (1 == True == 1.0: not followed)
        return None

    def _items_of(self, value: ast.expr | None, key: object) -> list[ast.expr]:
        """The item of the literal ``value`` under ``key`` (from :meth:`_key`): one, or none."""
        if isinstance(value, (ast.Tuple, ast.List)):
            if isinstance(key, int) and 0 <= key < len(value.elts):
                return [value.elts[key]]
            return []
        chosen = [v for k, v in self._pairs(value, _DEPTH) or [] if isinstance(k, str) and k == key]
        return chosen[-1:]  # the last of a repeated key wins, as in Python


_DEPTH = 4  # copies of copies followed at most this deep


def _entries(value: ast.Dict) -> list[tuple[ast.expr | None, ast.expr]]:
    return list(zip(value.keys, value.values, strict=True))


def _builtin_dict(value: ast.Call, ctx: Context) -> bool:
    """``dict(...)`` of the builtin, not an import of that name."""
    func = value.func
    return isinstance(func, ast.Name) and func.id == "dict" and ctx.qualname(func) is None


def _copy_of(value: ast.Call, ctx: Context) -> bool:
    """``d.copy()`` of a name, or ``copy.copy(d)`` / ``copy.deepcopy(d)``."""
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr == "copy" and not value.args:
        return isinstance(func.value, ast.Name)
    return (
        len(value.args) == 1
        and isinstance(value.args[0], ast.Name)
        and ctx.qualname(func) in ("copy.copy", "copy.deepcopy")
    )


def _index(value: ast.Tuple | ast.List, key: ast.expr) -> int | None:
    index = _constant(key)
    if (
        not isinstance(index, int)
        or isinstance(index, bool)
        or any(isinstance(e, ast.Starred) for e in value.elts)
    ):
        return None
    return index + len(value.elts) if index < 0 else index


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


def _viewed(up: ast.AST | None, parent: Callable[[ast.AST], ast.AST | None]) -> bool:
    """``up`` is ``d.values``, ``d.items`` or ``d.keys``, called with no arguments."""
    call = parent(up) if isinstance(up, ast.Attribute) else None
    return (
        isinstance(up, ast.Attribute)
        and up.attr in ("values", "items", "keys")
        and isinstance(call, ast.Call)
        and call.func is up
        and not call.args
    )


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
