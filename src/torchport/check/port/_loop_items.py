"""What a ``for`` target takes from the lists the code writes out.

``nets = [net_sgd, net_adam]`` then ``for net, opt in zip(nets, opts):``: ``net`` is
``net_sgd`` or ``net_adam``, whatever the loop's position. :func:`target_items` answers
with the expressions a loop (or comprehension) target may be bound to: the items of a
list, tuple or set display the code iterates, directly or by a name every binding of
which is such a display, through the builtins ``zip`` (one position per argument),
``enumerate`` (its second position) and ``iter``/``list``/``tuple``/``reversed`` (the
same items), plus what ``.append``/``.insert``/``.extend([...])`` add to that name.
None where it cannot tell ("not sure"): a starred target or item, a target whose
length is not ``zip``'s, an item added some other way (``nets[0] = m``, ``nets +=
other``, ``.extend(gen)``), a name bound otherwise, or a non-builtin ``zip``.

:func:`named_items` with ``strict`` also says None when any read of the name may
hand the list on (to a function, to another name): what is done with its items
there is out of sight. :func:`loop_target` goes the other way: the target a read
of a named list feeds in a loop. Syntax and the scope map only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check.port._device_flow import PortScope
from torchport.check.semantic import BindingKind, ScopeMap

__all__ = ["loop_candidates", "loop_target", "mark_loop_models", "named_items", "target_items"]

_SAME_ITEMS = frozenset({"iter", "list", "tuple", "reversed"})
_ADDS = frozenset({"append", "insert", "extend"})
_DISPLAYS = (ast.List, ast.Tuple, ast.Set)
_LOOPS = (ast.For, ast.AsyncFor, ast.comprehension)
Loads = Callable[[str], list[ast.Name]]


def _builtin(
    scopes: ScopeMap, call: ast.AST | None, names: frozenset[str] | set[str]
) -> str | None:
    """The builtin of ``names`` that ``call`` calls (not one the file binds), else None."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    func = call.func
    if func.id not in names or scopes.bindings(func.id, func):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return func.id


def _display_items(display: ast.expr) -> list[ast.expr] | None:
    if not isinstance(display, _DISPLAYS):
        return None
    if any(isinstance(e, ast.Starred) for e in display.elts):
        return None
    return list(display.elts)


def named_items(
    scopes: ScopeMap, name: ast.Name, *, strict: bool, loads: Loads
) -> list[ast.expr] | None:
    """The items the list ``name`` names may hold, or None (see the module docstring).
    ``loads`` gives every read of a name (the port's walk's: no second walk of the file)."""
    found = scopes.bindings(name.id, name)
    if not found:
        return None
    items: list[ast.expr] = []
    for b in found:
        shown = _display_items(b.value) if b.kind is BindingKind.ASSIGN and b.value else None
        if shown is None:
            return None
        items += shown
    bound = scopes.resolve(name.id, name)
    for read in loads(name.id):
        if scopes.resolve(name.id, read) is not bound:
            continue
        holder = scopes.parent(read)
        if isinstance(holder, ast.Attribute) and holder.value is read:
            call = scopes.parent(holder)
            if holder.attr in _ADDS and isinstance(call, ast.Call) and call.func is holder:
                added = _added(call, holder.attr)
                if added is None:
                    return None
                items += added
                continue
        elif isinstance(holder, ast.Subscript) and holder.value is read:
            if not isinstance(holder.ctx, ast.Load):
                return None  # `nets[0] = m`: an item put in by position
            continue  # an item read: it is one of the items
        if strict and not _plain_read(scopes, read):
            return None
    return items


def _added(call: ast.Call, method: str) -> list[ast.expr] | None:
    """What ``.append(x)``, ``.insert(i, x)`` or ``.extend([x, y])`` adds, or None."""
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if method == "append" and len(call.args) == 1:
        return [call.args[0]]
    if method == "insert" and len(call.args) == 2:
        return [call.args[1]]
    if method == "extend" and len(call.args) == 1:
        return _display_items(call.args[0])
    return None


def _plain_read(scopes: ScopeMap, read: ast.Name) -> bool:
    """A read that hands the list on to nothing: ``len(nets)``, ``m in nets``, ``f(*nets)``, or the
    loop over it whose target at that position is one name (see :func:`loop_target`)."""
    holder = scopes.parent(read)
    if _builtin(scopes, holder, {"len"}) is not None:
        return True
    if isinstance(holder, ast.Starred) and isinstance(scopes.parent(holder), ast.Call):
        return True  # `f(*nets)`: its items handed, not the list (issue 31)
    if isinstance(holder, ast.Compare) and read in holder.comparators:
        return all(isinstance(op, (ast.In, ast.NotIn)) for op in holder.ops)
    return loop_target(scopes, read) is not None


def loop_target(scopes: ScopeMap, read: ast.expr) -> ast.Name | None:
    """The loop target name ``read`` (a named list) feeds, through ``zip``/``enumerate``
    and the same-item builtins: ``net`` for ``nets`` in ``for net, opt in zip(nets,
    opts)``; None when it feeds no loop, or an unpacked or starred part of a target."""
    path: list[int] = []  # positions in the target, innermost first
    child: ast.expr = read
    holder = scopes.parent(read)
    while True:
        if isinstance(holder, _LOOPS) and holder.iter is child:
            break
        which = _builtin(scopes, holder, {"zip", "enumerate", *_SAME_ITEMS})
        if which is None or child not in holder.args:  # type: ignore[union-attr]
            return None
        assert isinstance(holder, ast.Call)
        if which == "zip":
            path.append(holder.args.index(child))
        elif which == "enumerate":
            if holder.args[0] is not child:
                return None
            path.append(1)
        elif len(holder.args) != 1:
            return None
        child, holder = holder, scopes.parent(holder)
    target: ast.expr = holder.target
    zips = _zip_lengths(scopes, holder.iter)
    if len(zips) != len(path):
        return None
    for index, length in zip(reversed(path), zips, strict=True):
        if not isinstance(target, (ast.Tuple, ast.List)) or len(target.elts) != length:
            return None
        target = target.elts[index]
    return target if isinstance(target, ast.Name) else None


def _zip_lengths(scopes: ScopeMap, iterable: ast.expr) -> list[int]:
    """How many names each ``zip``/``enumerate`` level of ``iterable`` unpacks into,
    outermost first: ``enumerate(zip(a, b))`` -> [2, 2]."""
    lengths: list[int] = []
    while isinstance(iterable, ast.Call):
        which = _builtin(scopes, iterable, {"zip", "enumerate", *_SAME_ITEMS})
        if which is None or not iterable.args:
            break
        if which == "zip":
            lengths.append(len(iterable.args))
            break
        if which == "enumerate":
            lengths.append(2)
        iterable = iterable.args[0]
    return lengths


def target_items(scopes: ScopeMap, target: ast.Name, loads: Loads) -> list[ast.expr] | None:
    """The expressions the loop target ``target`` may be bound to (module docstring)."""
    path: list[tuple[int, int]] = []  # (position, length) from the name outwards
    child: ast.AST = target
    holder = scopes.parent(target)
    while isinstance(holder, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in holder.elts):
            return None
        path.append((holder.elts.index(child), len(holder.elts)))  # type: ignore[arg-type]
        child, holder = holder, scopes.parent(holder)
    if not (isinstance(holder, _LOOPS) and holder.target is child):
        return None
    return _iterated(scopes, holder.iter, path[::-1], loads)


def _iterated(
    scopes: ScopeMap, iterable: ast.expr, path: list[tuple[int, int]], loads: Loads
) -> list[ast.expr] | None:
    """The items at ``path`` (outermost position first) of what iterating gives."""
    which = _builtin(scopes, iterable, {"zip", "enumerate", *_SAME_ITEMS})
    if which is not None:
        assert isinstance(iterable, ast.Call)
        args = iterable.args
        if which == "zip":
            if iterable.keywords and [k.arg for k in iterable.keywords] != ["strict"]:
                return None
            if not path or path[0][1] != len(args):
                return None
            return _iterated(scopes, args[path[0][0]], path[1:], loads)
        if which == "enumerate":
            if not args or not path or path[0] != (1, 2):
                return None  # (the count is a number: nothing this answers)
            return _iterated(scopes, args[0], path[1:], loads)
        if len(args) != 1 or iterable.keywords:
            return None
        return _iterated(scopes, args[0], path, loads)
    if path:
        return None  # an item unpacked (`for a, b in pairs`): not followed
    if isinstance(iterable, ast.Name):
        return named_items(scopes, iterable, strict=False, loads=loads)
    return _display_items(iterable)


def loop_candidates(
    scopes: ScopeMap, port_scopes: list[PortScope], loads: Loads, scope_of: dict[int, PortScope]
) -> list[tuple[PortScope, ast.Name, list[tuple[ast.expr, PortScope]]]]:
    """``(scope, target name, items with their scopes)`` of each loop or comprehension
    target of ``port_scopes`` (the module's first) that :func:`target_items` answers for."""
    found: list[tuple[PortScope, ast.Name, list[tuple[ast.expr, PortScope]]]] = []
    for scope in port_scopes:
        for node in scope.loops:  # (the port's walk noted them)
            for name in ast.walk(node.target):  # type: ignore[attr-defined]
                if isinstance(name, ast.Name):
                    items = target_items(scopes, name, loads)
                    if items:
                        where = [(i, scope_of.get(id(i), port_scopes[0])) for i in items]
                        found.append((scope, name, where))
    return found


def mark_loop_models(
    scopes: ScopeMap,
    candidates: list[tuple[PortScope, ast.Name, list[tuple[ast.expr, PortScope]]]],
    builds: Callable[[ast.expr, PortScope], bool],
) -> None:
    """Add to its scope's models each candidate target whose every item ``builds`` a model,
    when every other binding of that name is such a loop too or binds a model: ``net``
    of ``for net, opt in zip(nets, opts)`` is a model; its calls are forwards."""
    models = {id(name) for _, name, items in candidates if all(builds(*i) for i in items)}
    for scope, name, _ in candidates:
        if id(name) not in models or name.id in scope.models:
            continue
        if all(
            id(b.node) in models or (b.value is not None and builds(b.value, scope))
            for b in scopes.bindings(name.id, name)
        ):
            scope.models.add(name.id)
