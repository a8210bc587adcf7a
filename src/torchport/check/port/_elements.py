"""What iterating or unpacking a value yields, in the port's kinds.

``for x, y in loader`` binds fields of a batch, ``for i, data in
enumerate(loader)`` a position and a whole batch, ``zip`` one item of each;
dict methods (``.items()``, ``.values()``) and literals give their items'
kinds. :class:`~torchport.check.port._kinds.ValueKinds` makes one, gives it
the kind of an expression, and asks it of every loop target and unpacking.
"""

from __future__ import annotations

import ast
import builtins
import weakref
from collections.abc import Callable

from torchport.check.port._iterated import literal_rows
from torchport.check.port._loop_items import named_items
from torchport.check.port._parameters import CallerKinds
from torchport.check.port._value_kind import Elements, Kind, flat, join
from torchport.check.semantic import ScopeMap

__all__ = ["ElementKinds", "is_builtin", "position_kind"]

_ITER_WRAPPERS = frozenset(
    {"iter", "tqdm", "islice", "cycle", "reversed", "sorted", "list", "tuple"}
)
_NOTENSORS_ITERS = frozenset({"range", "trange", "listdir", "glob", "iglob", "walk", "iterdir"})
_STRING_METHODS = frozenset({"split", "splitlines", "readlines", "keys"})
_BUILTINS = frozenset(dir(builtins))


def is_builtin(scopes: ScopeMap, name: ast.Name) -> bool:
    """Whether ``name`` is a builtin the file never binds (``next``, not a local ``next``)."""
    return name.id in _BUILTINS and not scopes.bindings(name.id, name)


class ElementKinds:
    """The kinds of what a value yields when iterated or unpacked (see the module docstring).

    ``kind_of`` is what an expression evaluates to where it stands; ``callers``
    tells what the file's functions return (``a, b = split(x)``); ``loads`` every
    read of a name (the scope map's by default).
    """

    def __init__(
        self,
        scopes: ScopeMap,
        kind_of: Callable[[ast.expr], Kind],
        callers: CallerKinds,
        loads: Callable[[str], list[ast.Name]] | None = None,
    ) -> None:
        self.scopes = scopes
        self.loads = loads or scopes.loads_of  # every read of a name (the port's walk's)
        self.kind_of = kind_of
        self.callers = callers
        # (`f(*outs)`: what a parameter takes, issue 31; weakly held: no cycle per file)
        callers.elements = weakref.WeakMethod(self.elements)

    def target(self, node: ast.Name) -> Kind:
        """What a loop target or an unpacking binds to ``node`` (``for i, (x, y) in ...``)."""
        return self._unpacked(node)[0]

    def unpacks_item(self, node: ast.Name) -> bool:
        """Whether ``node`` takes a field of one item (``x`` in ``for x, y in loader``).

        Not so for a position of ``enumerate``/``zip`` (``data`` in
        ``for i, data in enumerate(loader)`` is the whole item).
        """
        return self._unpacked(node)[1]

    def _unpacked(self, node: ast.Name) -> tuple[Kind, bool]:
        """A name in a loop target or an unpacking (``for i, (x, y) in ...``, ``a, b = f()``)."""
        path: list[int] = []
        child: ast.AST = node
        holder = self.scopes.parent(node)
        while isinstance(holder, (ast.Tuple, ast.List, ast.Starred)):
            if isinstance(holder, ast.Starred):
                return Kind.UNKNOWN, False
            path.append(next(i for i, e in enumerate(holder.elts) if e is child))
            child, holder = holder, self.scopes.parent(holder)
        if isinstance(holder, (ast.For, ast.AsyncFor, ast.comprehension)):
            items: Elements = self.elements(holder.iter)
        elif isinstance(holder, ast.Assign):
            if not path:
                return self.kind_of(holder.value), False
            items = self._unpacking(holder.value)
        else:
            return Kind.UNKNOWN, False
        field = False
        for index in reversed(path):
            if isinstance(items, tuple):
                if index >= len(items):
                    return Kind.UNKNOWN, False
                items = items[index]
                field = False
            else:
                field = True  # a batch's fields are batches; a tensor's rows are tensors
        return flat(items), field

    def _unpacking(self, value: ast.expr) -> Elements:
        """What unpacking ``value`` gives per position (``a, b = next(it)``, ``x, y = data``)."""
        if isinstance(value, (ast.Tuple, ast.List)):
            return tuple(self.kind_of(e) for e in value.elts)
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("next", "__next__")
            and not value.args
        ):
            return self.elements(value.func.value)  # `x, y = dataiter.next()`
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id == "next" and value.args and is_builtin(self.scopes, value.func):
                return self.elements(value.args[0])
            returned = self.callers.returned_items(value.func)
            if returned is not None:
                return returned
        kind = self.kind_of(value)
        return kind if kind in (Kind.BATCH, Kind.TENSOR, Kind.DEVICE, Kind.OTHER) else Kind.UNKNOWN

    # ------------------------------------------------------------ iteration

    def elements(self, iterable: ast.expr) -> Elements:
        """What iterating ``iterable`` yields."""
        if isinstance(iterable, ast.Call):
            func = iterable.func
            tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            plain = isinstance(func, ast.Name) and is_builtin(self.scopes, func)
            if tail == "enumerate" and iterable.args:
                return (Kind.OTHER, self.elements(iterable.args[0]))
            if tail == "zip" and plain:
                return tuple(self.elements(a) for a in iterable.args)
            if tail in _NOTENSORS_ITERS or (tail in _STRING_METHODS and not plain):
                return Kind.OTHER  # file names, lines, dict keys: strings and numbers
            if tail in _ITER_WRAPPERS and iterable.args:
                return self.elements(iterable.args[0])
            if tail in ("items", "values") and isinstance(func, ast.Attribute):
                return self._dict_items(func.value, tail)
        if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
            rows = literal_rows(iterable)
            if rows is not None:  # `[(model(x), torch.ones(2))]`: by position
                return tuple(join(self.kind_of(r[i]) for r in rows) for i in range(len(rows[0])))
            return join(self.kind_of(e) for e in iterable.elts) if iterable.elts else Kind.OTHER
        if isinstance(iterable, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self.kind_of(iterable.elt)
        kind = self.kind_of(iterable)
        if isinstance(iterable, ast.Name) and kind in (Kind.OTHER, Kind.UNKNOWN):
            # `nets = [a, b]` (`.append`ed to): its items' kinds; handed on: not sure
            named = named_items(
                self.scopes, iterable, strict=kind is Kind.UNKNOWN, loads=self.loads
            )
            if named is not None:
                return join(self.kind_of(e) for e in named) if named else Kind.OTHER
        if kind is Kind.LOADER:
            return Kind.BATCH
        if kind in (Kind.TENSOR, Kind.DEVICE, Kind.BATCH, Kind.MODEL, Kind.NUMPY, Kind.LIBRARY):
            return kind  # rows of a tensor, submodules of a model, ...
        if kind is Kind.OTHER:
            items = self.literal_items(iterable)
            return join(items) if items is not None else Kind.OTHER
        return Kind.UNKNOWN

    def _dict_items(self, owner: ast.expr, method: str) -> Elements:
        """``d.items()`` / ``d.values()`` of a dict the file writes out: its keys and values."""
        values: list[ast.expr] = [owner]
        if isinstance(owner, ast.Name):
            found = self.scopes.bindings(owner.id, owner)
            values = [b.value for b in found if b.value is not None]
            if len(values) != len(found):
                return Kind.UNKNOWN
        if not values or not all(isinstance(v, ast.Dict) for v in values):
            return Kind.UNKNOWN
        keys = join(
            Kind.UNKNOWN if k is None else self.kind_of(k)
            for v in values
            for k in v.keys  # type: ignore[attr-defined]
        )
        items = join(self.kind_of(x) for v in values for x in v.values)  # type: ignore[attr-defined]
        return (keys, items) if method == "items" else items

    def literal_items(self, expr: ast.expr) -> list[Kind] | None:
        """Kinds of the items of a literal container ``expr`` names (None: not one)."""
        values: list[ast.expr] = [expr]
        if isinstance(expr, ast.Name):
            found = self.scopes.bindings(expr.id, expr)
            if not found or any(getattr(b, "value", None) is None for b in found):
                return None
            values = [b.value for b in found if b.value is not None]
        items: list[Kind] = []
        for v in values:
            if isinstance(v, (ast.List, ast.Tuple, ast.Set)):
                items += [self.kind_of(e) for e in v.elts]
            elif isinstance(v, ast.Dict):
                items += [self.kind_of(e) for e in v.values]
            else:
                return None
        return items


def position_kind(target: ast.Tuple, name: ast.Name, returned: tuple[Elements, ...]) -> Kind:
    """What ``name`` of ``target`` takes from a tuple of ``returned`` kinds: by its position,
    counted from the end after a starred name (``a, *rest, b``); the starred name, a
    nested one, or a target whose length cannot be the tuple's: not sure."""
    elts = target.elts
    index = next((i for i, e in enumerate(elts) if e is name), None)
    star = next((i for i, e in enumerate(elts) if isinstance(e, ast.Starred)), None)
    if index is None or (star is None and len(elts) != len(returned)):
        return Kind.UNKNOWN
    if star is not None:
        if len(elts) - 1 > len(returned):
            return Kind.UNKNOWN
        index = index if index < star else len(returned) - (len(elts) - index)
    return flat(returned[index])
