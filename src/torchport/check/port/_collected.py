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
    from torchport.check.semantic._scope import ScopeMap

__all__ = ["COLLECTS", "added", "collector", "comprehension_on_device", "every_read_collects"]

COLLECTS = frozenset({"append", "extend", "insert"})
_COMPREHENSIONS = (ast.ListComp, ast.GeneratorExp, ast.SetComp)
_MADE = (ast.List, ast.Dict, ast.ListComp, ast.DictComp)  # a list or dict made in place


def collector(node: ast.AST, values_of: Callable[[str], list[ast.expr]]) -> str | None:
    """The name of the list (or dict or list of lists) ``node`` adds to: ``accs`` of
    ``accs.append(x)`` and ``accs += [x]``, ``acc`` of ``acc[name].append(x)`` and of
    ``acc[name] = x`` where ``acc`` is bound (``values_of``) only to a list or dict made
    there (not a tensor's item written: ``buf[i] = x``); None where ``node`` adds to no
    list or the list is no plain name's."""
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Subscript)
        and isinstance(holder := node.targets[0].value, ast.Name)
    ):
        bound = values_of(holder.id)
        return holder.id if bound and all(isinstance(v, _MADE) for v in bound) else None
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
    return holder.id if isinstance(holder, ast.Name) else None


def added(node: ast.AST) -> list[ast.expr]:
    """What ``node`` (one :func:`collector` names) adds to its list."""
    if isinstance(node, ast.Call):
        return list(node.args)
    assert isinstance(node, ast.Assign | ast.AugAssign)
    return [node.value]


def comprehension_on_device(
    expr: ast.expr, values: set[str], on_device: Callable[[ast.expr], bool]
) -> bool:
    """Whether a comprehension's items are device values: ``[a for a in accs]`` of a device
    ``accs``, ``[model(x) for x in xs]``; not ``[a.item() for a in accs]``.

    ``values`` (the scope's device names) holds, while the items are asked, the names the
    comprehension binds: from a device iterable, device values; from any other, not (they
    shadow the scope's names). It is as it was when this returns.
    """
    assert isinstance(expr, _COMPREHENSIONS)
    saved = set(values)
    try:
        for generator in expr.generators:
            bound = {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
            if on_device(generator.iter):
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
