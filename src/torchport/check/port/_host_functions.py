"""A module's functions whose every return is host data by their own code: numpy, numbers.

vinhkhuc's ``trX, teX, trY, teY = load_mnist(...)`` unpacks what a sibling module's
function returns: ``return trX, teX, trY, teY``, each bound only to numpy's results
(``np.frombuffer(...)[16:].reshape(...).astype(float)``, ``trX /= 255.``,
``trX[:ntrain]``, ``one_hot(trY, 10)`` of another such function). Whatever the caller
binds those names to later, the value the call gives is host data, and a numpy function
reading it before the rebinding reads an array (:mod:`~torchport.check.port._host_values`).

Read from syntax alone, within one function's own body: a return is host data when it is
a constant, a tuple of host data (never a list or a dict: what goes in later decides), a
numpy or host library's result, a ``.numpy()``/``.item()``/``.tolist()`` read, a method
of host data that is no move, arithmetic, an item or a slice of host data, a call of
another such function of the module (worked out to a fixed point), or a local name every
binding of which (``=`` with one target, ``+=``) is host data. A parameter, a name of the
module, an unpacked or loop-bound name, an attribute: not sure, so not host.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Set

from torchport.check._context import Context
from torchport.check.port._calls import HOST_READS, MOVING_METHODS, host_library
from torchport.check.port._module_functions import own_nodes, returns_all

__all__ = ["HostFunctions", "host_functions", "shape_host"]

# (the functions whose every return is host data; for each function every return of which is
# a tuple of one length, the positions holding host data in all of them: `return t, np.ones(3)`)
HostFunctions = tuple[frozenset[str], tuple[tuple[str, tuple[int, ...]], ...]]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEPTH = 12  # expressions followed at most this deep; past it, not sure
_READS = HOST_READS - {"cpu"}  # (`.cpu()` gives a tensor: not host data to numpy's eyes here)

# Per function: each local name's values (None: bound some other way too)
_Values = dict[str, list[ast.expr] | None]
_VALUES: weakref.WeakKeyDictionary[ast.AST, _Values] = weakref.WeakKeyDictionary()


def host_functions(ctx: Context, tree: ast.Module) -> HostFunctions:
    """The names of ``tree``'s module-level functions whose every return is host data, and
    the host positions of those returning tuples (see :data:`HostFunctions`)."""
    functions = [n for n in tree.body if isinstance(n, _FUNCTIONS)]
    if not functions:
        return frozenset(), ()
    # A function named once at module level and bound by nothing else there: what a call
    # of the name runs (a second `def`, an assignment or an import of the name: not sure).
    counts: dict[str, int] = {}
    for stmt in tree.body:
        for name in _top_bound(stmt):
            counts[name] = counts.get(name, 0) + 1
    candidates = [f for f in functions if counts.get(f.name) == 1 and not f.decorator_list]
    known: set[str] = set()
    names = {f.name for f in candidates}
    asking = candidates
    for _ in range(4):  # a function calling another such function: asked again
        waiting = []
        for func in asking:
            asker = _Asker(ctx, func, known, names)
            if returns_all(func, asker.host):
                known.add(func.name)
            elif asker.waits:
                waiting.append(func)
        if not waiting or len(waiting) == len(asking):
            break
        asking = waiting
    items: list[tuple[str, tuple[int, ...]]] = []
    for func in candidates:
        if func.name not in known:
            positions = _host_positions(_Asker(ctx, func, known, names), func)
            if positions:
                items.append((func.name, positions))
    return frozenset(known), tuple(items)


def _host_positions(asker: _Asker, func: ast.AST) -> tuple[int, ...]:
    """Where every ``return`` of ``func`` is a tuple written there, of one length: the
    positions whose item is host data in each (none for a generator or a bare return)."""
    returns: list[ast.Tuple] = []
    for node in own_nodes(func):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return ()
        if isinstance(node, ast.Return):
            value = node.value
            if not isinstance(value, ast.Tuple) or any(
                isinstance(e, ast.Starred) for e in value.elts
            ):
                return ()
            returns.append(value)
    if not returns or len({len(r.elts) for r in returns}) != 1:
        return ()
    return tuple(
        i for i in range(len(returns[0].elts)) if all(asker.host(r.elts[i]) for r in returns)
    )


def _top_bound(stmt: ast.stmt) -> list[str]:
    """The names a module-level statement binds (imports, defs, classes, any store)."""
    if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
        return [stmt.name]
    found: list[str] = []
    for n in ast.walk(stmt):  # (`if`, `try` blocks at module level too)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            found.append(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            found += [(a.asname or a.name).partition(".")[0] for a in n.names]
        elif isinstance(n, (*_FUNCTIONS, ast.ClassDef)):
            found.append(n.name)
    return found


class _Asker:
    def __init__(self, ctx: Context, func: ast.AST, known: Set[str], names: Set[str]) -> None:
        self.ctx = ctx
        self.func = func
        self.known = known
        self.names = names  # the functions that may be such (a call of one not known yet waits)
        self.waits = False
        self._values: _Values | None = None  # (worked out on first use)
        args = getattr(func, "args", None)
        self.params = (
            {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} if args else set()
        )
        self.asking: set[str] = set()

    @property
    def values(self) -> _Values:
        if self._values is None:
            self._values = _local_values(self.func)
        return self._values

    def host(self, expr: ast.expr, depth: int = 0) -> bool:
        if depth > _DEPTH:
            return False
        deeper = depth + 1
        shaped = shape_host(expr, lambda e: self.host(e, deeper))
        if shaped is not None:
            return shaped
        if isinstance(expr, ast.Name):
            return self._name(expr.id, deeper)
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in _READS:
            return True  # `.numpy()`, `.item()`, `.tolist()`, `.size()`
        # (`np.zeros`: read where module-level imports alone bind `np`, without the scope
        # pass, which a module read for its facts alone need not pay for)
        name = self.ctx.imported_name(func) or ""
        if (name.startswith("numpy.") or host_library(name)) and not self._local_root(func):
            return True
        if isinstance(func, ast.Name):
            # another such function of the module, the name not bound in this one
            if func.id not in self.names or func.id in self.values:
                return False
            self.waits = self.waits or func.id not in self.known
            return func.id in self.known
        return (  # `fns[0](x)`, `make()(x)`: not sure
            isinstance(func, ast.Attribute)
            and func.attr not in MOVING_METHODS
            and self.host(func.value, deeper)
        )

    def _local_root(self, func: ast.expr) -> bool:
        """Whether the root name of ``func`` is bound in the function (``np = ...``)."""
        while isinstance(func, ast.Attribute):
            func = func.value
        return isinstance(func, ast.Name) and func.id in self.values

    def _name(self, name: str, depth: int) -> bool:
        if name in self.params:
            return False  # what a caller hands it: not sure
        if name in self.asking:
            # (`x = x[:n]`: every value `x` holds comes from one of its bindings; asked
            # again inside them, the others decide)
            return True
        values = self.values.get(name)
        if not values:
            return False  # a parameter, the module's, bound some other way: not sure
        self.asking.add(name)
        try:
            return all(self.host(v, depth) for v in values)
        finally:
            self.asking.discard(name)


def _local_values(func: ast.AST) -> _Values:
    """Each name ``func`` binds: the values of its ``name = v`` (one target) and ``name op= v``;
    None for a name also bound otherwise (a parameter, unpacked, a loop's, ``global``)."""
    found = _VALUES.get(func)
    if found is not None:
        return found
    assigned: dict[str, list[ast.expr]] = {}
    handled: set[int] = set()
    stored: list[ast.Name] = []
    declared: set[str] = set()
    for node in own_nodes(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                handled.add(id(target))
                assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            handled.add(id(node.target))
            assigned.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stored.append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            declared.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.ExceptHandler)) and node.name:
            declared.add(node.name)
    args = getattr(func, "args", None)
    if args is not None:
        declared.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
        declared.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    declared.update(n.id for n in stored if id(n) not in handled)
    values: _Values = {**assigned}
    for name in declared:
        values[name] = None
    _VALUES[func] = values
    return values


def shape_host(expr: ast.expr, host: Callable[[ast.expr], bool]) -> bool | None:
    """Whether ``expr`` is host data by its shape, asking ``host`` of its parts: a constant; a
    tuple, arithmetic or an item of host data. None: not one of these shapes."""
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.Tuple):  # not a list: what is appended to it later decides
        return all(host(e) for e in expr.elts)
    if isinstance(expr, ast.BinOp):
        return host(expr.left) and host(expr.right)
    if isinstance(expr, ast.UnaryOp):
        return host(expr.operand)
    if isinstance(expr, ast.Subscript):
        return host(expr.value)
    return None
