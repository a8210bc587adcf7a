"""Straight-line code per plan: a class's plan (``place/_whole_plans.py``) read without a loop.

A plan says where, in the record an own-``.to`` object's read lays, each node and
tensor sat (and, for the result of its ``.to``, where each node read and each node
shared sat). :func:`read_code`, :func:`relay_code` and :func:`result_code` write that
out once per plan, as the source of one function (``exec``), so that a move reads
the input, lays its record again after the call and walks the result with no loop
over the plan's steps, no dispatch on each node's code and no frame per step.

Each function asks exactly what the generic one asks (``read_planned``,
``_untouched.flatten``, ``unshared_planned``): every node taken only where and of the
type the plan says, then the types of everything laid compared with the plan's
(the layout's fingerprint: one C-level pass), and the same duplicate and sharing
tests. Whatever does not fit (an ``IndexError``, another type, a node met twice)
gives None, and the caller reads it the generic way, which keeps its own plan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchport.place._node_codes import (
    DICT_CODE,
    LIST_CODE,
    MOVES_CODE,
    TUPLE_CODE,
    WALKED_CODE,
    node_values,
)
from torchport.place._untouched import END, STATE, lays_own_dict

__all__ = ["read_code", "relay_code", "result_code"]

_dict_of = object.__getattribute__
_END_TYPE = type(END)


def _compiled(name: str, lines: list[str], names: dict[str, Any]) -> Callable[..., Any]:
    """The function ``name`` that ``lines`` define, with ``names`` among its globals."""
    scope: dict[str, Any] = {
        "D": _dict_of,
        "S": STATE,
        "E": END,
        **names,
    }
    exec(compile("\n".join(lines), f"<torchport plan {name}>", "exec"), scope)
    function: Callable[..., Any] = scope[name]
    return function


def _run(node: str, code: int, *, keys: bool) -> str:
    """The items one node lays (a tuple display's body), as the generic read lays them."""
    if code is DICT_CODE:
        return f"*{node}, *{node}.values(), E" if keys else f"*{node}.values(), E"
    if code is LIST_CODE or code is TUPLE_CODE:
        return f"*{node}, E"
    if keys:
        return "S, o, *o, *o.values(), E"
    return f"*D({node}, '__dict__').values(), E"


def read_code(
    steps: tuple[tuple[int, type, int], ...], types: list[type], tensors: list[int]
) -> Callable[[Any], Any]:
    """``read_planned`` for one plan (``steps``, ``types``; the record's tensors at ``tensors``).

    The function takes the object and gives ``(tensors, nodes, ids of nodes, ids of
    tensors, record)`` or None, as ``read_planned`` does. Each node is taken from the
    values of the node that holds it, at the index the plan's record gives (a run of
    another length moves every later item: the types' comparison then fails), and the
    record is laid in one list display at the end.
    """
    codes = [MOVES_CODE, *(code for _, _, code in steps)]
    # Where each node's run starts in the record, and where its values start.
    runs: list[tuple[int, int]] = []
    at = 0
    for code in codes:
        end = types.index(_END_TYPE, at)
        if code is DICT_CODE:
            runs.append((at, at + (end - at) // 2))
        elif code is LIST_CODE:
            runs.append((at, at))
        else:
            runs.append((at, at + 2 + (end - at - 2) // 2))
        at = end + 1
    holder = {
        i: max(n for n, (begin, _) in enumerate(runs) if begin <= place)
        for i, (place, _, _) in enumerate(steps, 1)
    }
    parents = set(holder.values())
    names: dict[str, Any] = {"TYPES": types}
    lines = ["def read(n0):", "    try:"]
    parts = []

    def opened(i: int, code: int) -> None:
        node = f"n{i}"
        if code is DICT_CODE or code is LIST_CODE:
            if i in parents:
                lines.append(f"        v{i} = (*{node}{'.values()' if code is DICT_CODE else ''},)")
                parts.append(f"*{node}, *v{i}, E" if code is DICT_CODE else f"*v{i}, E")
            else:
                parts.append(_run(node, code, keys=True))
            return
        lines.append(f"        o{i} = D({node}, '__dict__')")
        if i in parents:
            lines.append(f"        v{i} = (*o{i}.values(),)")
            parts.append(f"S, o{i}, *o{i}, *v{i}, E")
        else:
            parts.append(f"S, o{i}, *o{i}, *o{i}.values(), E")

    opened(0, MOVES_CODE)
    for i, (place, cls, code) in enumerate(steps, 1):
        names[f"C{i}"] = cls
        parent = holder[i]
        lines.append(f"        n{i} = v{parent}[{place - runs[parent][1]}]")
        lines.append(f"        if type(n{i}) is not C{i}:")
        lines.append("            return None")
        opened(i, code)
    count = len(steps) + 1
    lines += [
        "    except IndexError:",
        "        return None",
        f"    f = [{', '.join(parts)}]",
        "    if list(map(type, f)) != TYPES:",
        "        return None",
        f"    found = [{', '.join(f'f[{at}]' for at in tensors)}]",
        "    ids = {*map(id, found)}",
        f"    opened = {{{', '.join(f'id(n{i})' for i in range(count))}}}",
        f"    if len(ids) != {len(tensors)} or len(opened) != {count}:",
        "        return None",
        f"    return found, [{', '.join(f'n{i}' for i in range(count))}], opened, ids, f",
    ]
    return _compiled("read", lines, names)


def relay_code(steps: tuple[tuple[int, type, int], ...], root: type) -> Callable[[Any], Any] | None:
    """``_untouched.flatten`` for the nodes a plan reads (the object, then ``steps``'), or
    None where that function would lay one of their classes otherwise."""
    codes = [MOVES_CODE, *(code for _, _, code in steps)]
    classes = [root, *(cls for _, cls, _ in steps)]
    parts = []
    lines = ["def relay(nodes):", f"    {', '.join(f'n{i}' for i in range(len(codes)))}, = nodes"]
    for i, (cls, code) in enumerate(zip(classes, codes, strict=True)):
        if code is DICT_CODE or code is LIST_CODE:
            if cls is not (dict if code is DICT_CODE else list):
                return None
            parts.append(_run(f"n{i}", code, keys=True))
        else:
            if not lays_own_dict(cls):
                return None  # (slots or a builtin base: flatten lays it another way)
            lines.append(f"    o{i} = D(n{i}, '__dict__')")
            parts.append(f"S, o{i}, *o{i}, *o{i}.values(), E")
    lines.append(f"    return [{', '.join(parts)}]")
    return _compiled("relay", lines, {})


def result_code(
    steps: tuple[tuple[int, type, int], ...],
    types: list[type],
    tensors: list[int],
    shared: list[int],
) -> Callable[[Any, Any, list[Any]], Any]:
    """``unshared_planned`` for one result plan (its ``steps``, ``types``; the tensors at
    ``tensors``, the input's nodes it holds at ``shared``)."""
    names: dict[str, Any] = {"TYPES": types, "values": node_values}
    lines = ["def walk(result, shared, skipped):", "    f = [result, E]", "    try:"]
    for i, (at, cls, code) in enumerate(steps):
        names[f"C{i}"] = cls
        lines.append(f"        x = f[{at}]")
        lines.append(f"        if type(x) is not C{i} or id(x) in shared:")
        lines.append("            return None")
        if code is MOVES_CODE or code is WALKED_CODE or code is DICT_CODE:
            lines.append(f"        f += ({_run('x', code, keys=False)},)")
        elif code is LIST_CODE or code is TUPLE_CODE:
            lines.append("        f += (*x, E)")
        else:
            names[f"K{i}"] = code
            lines.append(f"        f += (*values(x, K{i}), E)")
    lines += [
        "    except IndexError:",
        "        return None",
        "    if list(map(type, f)) != TYPES:",
    ]
    lines.append("        return None")
    if shared:
        held = ", ".join(f"f[{at}]" for at in shared)
        test = " and ".join(f"id(f[{at}]) in shared" for at in shared)
        lines += [f"    if not ({test}):", "        return None", f"    skipped += ({held},)"]
    lines.append(f"    return [{', '.join(f'f[{at}]' for at in tensors)}]")
    return _compiled("walk", lines, names)
