"""What the program's lists hold: device values collected into them, or host records.

A list a program fills with device values (``accs.append(acc)``, ``accs += [acc]``,
``acc[name].append(acc)`` into a dict of lists) holds device values: numpy (and matplotlib,
which reads its data through numpy) refuses it as it refuses the tensors it holds. A
comprehension over such a list holds them too, unless it reads each to the host
(``[a.item() for a in accs]``). A list only ever appended to is a list of records: what
goes in never meets what is in it. :class:`~torchport.check.port._device_flow.DeviceFlow`
asks these.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._device_flow import PortScope
    from torchport.check.semantic._scope import ScopeMap

__all__ = ["COLLECTS", "added", "collector", "comprehension_on_device", "every_read_collects"]

COLLECTS = frozenset({"append", "extend", "insert"})
_COMPREHENSIONS = (ast.ListComp, ast.GeneratorExp, ast.SetComp)
_MADE = (ast.List, ast.Dict, ast.ListComp, ast.DictComp)  # a list or dict made in place
_CONTAINER_CALLS = frozenset({"list", "dict", "defaultdict", "OrderedDict"})


def collector(node: ast.AST, scope: PortScope, module: PortScope) -> str | None:
    """The name of the list (or dict or list of lists) ``node`` adds to: ``accs`` of
    ``accs.append(x)`` and ``accs += [x]``, ``acc`` of ``acc[name].append(x)``, of
    ``acc.setdefault(name, []).append(x)``, and of ``acc[name] = x`` and ``acc[i] += x``
    where ``acc`` is bound only to a list or dict made there (``{}``, ``defaultdict(list)``,
    ``[0] * n``; not a tensor's item written: ``buf[i] = x``), in ``scope`` or, for a name
    ``scope`` does not bind (a function filling a module's dict), in ``module``. None where
    ``node`` adds to no list or the list is no plain name's."""
    item = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
    item = node.target if isinstance(node, ast.AugAssign) else item  # `accs[epoch] += acc`
    if isinstance(item, ast.Subscript) and isinstance(holder := item.value, ast.Name):
        bound = (scope if holder.id in scope.local else module).values_of(holder.id)
        if bound and all(_made(v) for v in bound):
            return holder.id
        if isinstance(node, ast.Assign):
            return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr not in COLLECTS:
            return None
        holder = node.func.value
    elif (
        isinstance(node, ast.AugAssign)
        and isinstance(node.op, ast.Add)
        and isinstance(node.value, ast.List | ast.Tuple)
    ):
        holder = node.target
    else:
        return None
    if isinstance(holder, ast.Subscript):
        holder = holder.value
    elif (  # `d.setdefault(k, []).append(x)`: the list the dict keeps
        isinstance(holder, ast.Call)
        and isinstance(holder.func, ast.Attribute)
        and holder.func.attr == "setdefault"
    ):
        holder = holder.func.value
    return holder.id if isinstance(holder, ast.Name) else None


def _made(value: ast.expr) -> bool:
    """A list or dict made in place: a literal, a comprehension, ``[0] * n``, ``dict()``."""
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _CONTAINER_CALLS
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):  # `[0] * epochs`
        return isinstance(value.left, ast.List) or isinstance(value.right, ast.List)
    return isinstance(value, _MADE)


def added(node: ast.AST) -> list[ast.expr]:
    """What ``node`` (one :func:`collector` names) adds to its list."""
    if isinstance(node, ast.Call):
        return list(node.args)
    assert isinstance(node, ast.Assign | ast.AugAssign)
    return [node.value]


def comprehension_on_device(
    expr: ast.expr,
    values: set[str],
    on_device: Callable[[ast.expr], bool],
    taken: Callable[[ast.comprehension], list[tuple[ast.expr, ast.expr]]],
) -> bool:
    """Whether a comprehension's items are device values: ``[a for a in accs]`` of a device
    ``accs``, ``[model(x) for x in xs]``; not ``[a.item() for a in accs]``.

    ``values`` (the scope's device names) holds, while the items are asked, the names the
    comprehension binds: taking items of a device iterable (``taken``: ``t`` of ``for i, t in
    enumerate(outs)``), device values; of any other, not (they shadow the scope's names). It
    is as it was when this returns.
    """
    assert isinstance(expr, _COMPREHENSIONS)
    saved = set(values)
    try:
        for generator in expr.generators:
            for target, held in taken(generator):
                bound = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
                if on_device(held):
                    values.update(bound)
                else:
                    values.difference_update(bound)
        return on_device(expr.elt)
    finally:
        values.clear()
        values.update(saved)


def every_read_collects(loads: list[ast.Name], scopes: ScopeMap) -> bool:
    """Whether every read of a name (``loads``) appends to it, asks its ``len`` or tests it
    ``is None``: a list of records (``OUT.append((name, out))``) never read back."""
    for read in loads:  # (any order: every read is asked)
        parent = scopes.parent(read)
        if isinstance(parent, ast.Attribute) and parent.attr in COLLECTS:
            call = scopes.parent(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                continue
        if (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id == "len"
            and parent.args == [read]
        ):
            continue
        if isinstance(parent, ast.Compare) and all(
            isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops
        ):
            continue  # `if outs is not None`
        return False
    return True
