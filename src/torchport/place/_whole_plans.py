"""Where an own-``.to`` object, and the result of its ``.to``, held what the last full read found.

``place/_whole.py`` reads an object with its own ``.to`` (and the result of that
``.to``) with a loop that decides each value by its type. Per class, what the last
loop read is kept as a plan: where, in the list the read lays, each node and tensor
sat. A later object of the class is read by the plan (each node taken only where and
of the type the plan says; then the types of all laid compared with the plan's, at C
speed); one held otherwise is read by the loop again, which then keeps its plan.
Every decision of the loop is by type (codes are final) and, for a result, by
whether a node is the input's: equal types (the end markers have a type of their
own, so every run ends where it ended) mean the loop would decide the same.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any

import torch

from torchport.place._lasting import forget_with, lasting
from torchport.place._node_codes import (
    CODES,
    DICT_CODE,
    LIST_CODE,
    MOVES_CODE,
    TENSOR_CODE,
    TUPLE_CODE,
    VALUE_CODE,
    WALKED_CODE,
    code_of,
    node_values,
)
from torchport.place._untouched import END, STATE, flatten
from torchport.place._whole_code import read_code, relay_code, result_code

__all__ = [
    "PLANS",
    "RESULT_PLANS",
    "Plan",
    "Read",
    "ResultPlan",
    "plan_of",
    "read_planned",
    "result_plan_of",
    "unshared_planned",
]

_dict_of = object.__getattribute__
_END_TYPE = type(END)
# What read_planned gives: the tensors, the nodes (in the order read), their ids, the
# tensors' ids, and the record laid.
Read = tuple[list[torch.Tensor], list[Any], set[int], set[int], list[Any]]


class Plan:
    """Where an input's nodes and tensors sat in the record its last full read laid.

    Attributes:
        steps: For each node after the object itself, in the order they were laid:
            where it sat in the record, its type and its code.
        types: The type of each item of that record (its markers have types of their own).
        pick: Gives the record's tensors (those the read found), in the read's order.
        read: :func:`read_planned` for this plan, written out (``place/_whole_code.py``).
        relay: ``_untouched.flatten`` for the nodes it reads, written out; that
            function itself where it lays one of their classes another way.
        calls: Per ``(target, non_blocking)`` of a call: how many moves of objects
            read by it called the ``.to``, and how many of them were checked in full
            and passed (``place/_trust.py``).
        result: The type of their results (None: none yet; another object: mixed).
    """

    __slots__ = ("calls", "pick", "read", "relay", "result", "steps", "types")

    def __init__(
        self,
        steps: tuple[tuple[int, type, int], ...],
        types: list[type],
        pick: Callable[[list[Any]], Any],
        read: Callable[[Any], Read | None],
        relay: Callable[[list[Any]], list[Any]],
    ) -> None:
        self.steps = steps
        self.types = types
        self.pick = pick
        self.read = read
        self.relay = relay
        self.calls: dict[tuple[Any, Any], list[int]] = {}
        self.result: object = None


# Per class with its own .to (those that last; the object's whole state in its
# __dict__): the plan of the last full read (_read's loop) that met only builtin dicts
# and lists and objects whose whole state is their __dict__ (no tuple, no slots).
PLANS: dict[type, Plan] = {}


def _no_tensors(flat: list[Any]) -> tuple[()]:
    return ()


def plan_of(flat: list[Any], nodes: list[Any]) -> Plan | None:
    """The plan of a read that laid ``flat`` from ``nodes`` (in that order), or None.

    Each node's run is read from ``flat`` itself (its end marker closes it): a dict's
    keys then values; a list's items; an object's state marker, ``__dict__``, keys and
    values. Only values are looked at, exactly as the loop does.
    """
    types = tuple(map(type, flat))
    if not all(map(lasting, set(types))):
        return None  # (a key of a class made at run time: a plan would keep it alive)
    where: dict[int, int] = {}  # a node held as a value (by id): where it sat
    tensors: list[int] = []
    at = 0
    for node in nodes:
        try:
            end = types.index(_END_TYPE, at)
        except ValueError:
            return None
        cls = type(node)
        if cls is dict:
            first = at + (end - at) // 2
        elif cls is list:
            first = at
        else:
            first = at + 2 + (end - at - 2) // 2
        for i in range(first, end):
            kind = types[i]
            code = CODES.get(kind)
            if code is None:
                code = code_of(kind)
            if code is TENSOR_CODE:
                tensors.append(i)
            elif code is not VALUE_CODE:
                where[id(flat[i])] = i
        at = end + 1
    if at != len(flat):
        return None
    steps = []
    for node in nodes[1:]:
        cls = type(node)
        place = where.get(id(node))
        if place is None or flat[place] is not node:
            return None
        steps.append((place, cls, CODES[cls]))
    pick: Callable[[list[Any]], Any]
    if not tensors:
        pick = _no_tensors
    elif len(tensors) == 1:
        pick = operator.itemgetter(slice(tensors[0], tensors[0] + 1))
    else:
        pick = operator.itemgetter(*tensors)
    planned = tuple(steps)
    return Plan(
        planned,
        list(types),
        pick,
        read_code(planned, list(types), tensors),
        relay_code(planned, type(nodes[0])) or flatten,
    )


def read_planned(obj: Any, plan: Plan) -> Read | None:
    """:func:`_read` by ``plan``: what ``obj`` holds, when held as its last full read found it.

    (``plan.read`` is this, written out for the plan; moves call that one.)

    The record is laid as the loop lays it, each node taken from where the plan says
    (only if of the plan's type); then the types of the whole record must be the
    plan's: the markers close each run where it closed, so every node, tensor and
    value sits where it sat, and the loop would have made the same decisions (each
    decided by type; codes are final). Nodes or tensors met twice, or anything else:
    None, and the loop reads it.
    """
    own = _dict_of(obj, "__dict__")
    state, end = STATE, END
    flat: list[Any] = [state, own, *own, *own.values(), end]
    extend = flat.extend
    lay_one = flat.append
    nodes = [obj]
    add = nodes.append
    try:
        for at, cls, code in plan.steps:
            x = flat[at]
            kind = type(x)  # (compared apart: mypy would narrow x to cls's type)
            if kind is not cls:
                return None
            add(x)
            if code is DICT_CODE:
                extend(x)
                extend(x.values())
            elif code is LIST_CODE:
                extend(x)
            else:
                own = _dict_of(x, "__dict__")
                lay_one(state)
                lay_one(own)
                extend(own)
                extend(own.values())
            lay_one(end)
    except IndexError:
        return None
    if list(map(type, flat)) != plan.types:  # (types compare by identity)
        return None
    found = list(plan.pick(flat))
    ids = set(map(id, found))
    opened = set(map(id, nodes))
    if len(ids) != len(found) or len(opened) != len(nodes):
        return None  # met twice: the loop decides
    return found, nodes, opened, ids, flat


class ResultPlan:
    """Where the last result of a class held what :func:`_unshared_loop` reads.

    Its values are laid in one list: ``[result, END]``, then each node read (not
    shared) in turn, its values and ``END``.

    Attributes:
        steps: For each node read: where it sat in that list, its type and its code.
        types: The type of each item of that list (``END`` has a type of its own).
        pick: Gives its tensors.
        pick_shared: Gives the nodes it skipped (the input's: shared), or None if none.
        walk: :func:`unshared_planned` for this plan, written out (``place/_whole_code.py``).
    """

    __slots__ = ("pick", "pick_shared", "steps", "types", "walk")

    def __init__(
        self,
        steps: tuple[tuple[int, type, int], ...],
        types: list[type],
        pick: Callable[[list[Any]], Any],
        pick_shared: Callable[[list[Any]], Any] | None,
        walk: Callable[[Any, AbstractSet[int], list[Any]], list[torch.Tensor] | None],
    ) -> None:
        self.steps = steps
        self.types = types
        self.pick = pick
        self.pick_shared = pick_shared
        self.walk = walk


# Per class of a result (those that last): the plan of the last one read by the loop.
RESULT_PLANS: dict[type, ResultPlan] = {}
# A plan holds the classes it met inside the root's: emptied when one stops lasting.
forget_with(whole=(PLANS, RESULT_PLANS))


def _picker(places: list[int]) -> Callable[[list[Any]], Any]:
    """Gives the items of a list at ``places`` (a sequence), at C speed."""
    if not places:
        return _no_tensors
    if len(places) == 1:
        return operator.itemgetter(slice(places[0], places[0] + 1))
    return operator.itemgetter(*places)


def result_plan_of(result: Any, shared: AbstractSet[int]) -> ResultPlan | None:
    """The plan of ``result`` (read by the loop just now), or None (a node held twice)."""
    end = END
    flat: list[Any] = [result, end]
    steps: list[tuple[int, type, int]] = []
    skipped: list[int] = []
    tensors: list[int] = []
    nodes: list[Any] = []
    at = 0
    while at < len(flat):
        x = flat[at]
        cls = type(x)
        at += 1
        if cls is _END_TYPE:
            continue
        code = CODES.get(cls)
        if code is None:
            # (Decided here the first time: then taken as any other value of its code.
            # The loop reads a dict of tensors without deciding them one by one.)
            code = code_of(cls)
            if code is None:
                return None
        if code is TENSOR_CODE:
            tensors.append(at - 1)
        elif code is not VALUE_CODE:
            if id(x) in shared:
                skipped.append(at - 1)
            else:
                steps.append((at - 1, cls, code))
                if code is not TUPLE_CODE:
                    nodes.append(x)
                flat.extend(_values_of(x, code))
                flat.append(end)
    if len(set(map(id, nodes))) != len(nodes):
        return None
    shares = _picker(skipped) if skipped else None
    planned, types = tuple(steps), list(map(type, flat))
    walk = result_code(planned, types, tensors, skipped)
    return ResultPlan(planned, types, _picker(tensors), shares, walk)


def _values_of(x: Any, code: int) -> Any:
    """What the loop reads ``x``'s children in (``x``: a node of ``code``)."""
    if code is DICT_CODE:
        return x.values()
    if code is LIST_CODE or code is TUPLE_CODE:
        return x
    return node_values(x, code)


def unshared_planned(
    result: Any, shared: AbstractSet[int], plan: ResultPlan, skipped: list[Any]
) -> list[torch.Tensor] | None:
    """:func:`_unshared_loop` by ``plan``; None when ``result`` is not held as the plan's was.

    Each node is taken where the plan says, only of its type and not shared; then the
    types of all laid must be the plan's (so every value sits where it sat) and the
    nodes it skipped shared: the loop would read the same nodes and tensors (each of
    its decisions is by type and sharing). A node met twice (which the loop leaves to
    the walker, for a cycle's sake) is read twice here (the steps are finite): its
    tensors come twice, which changes nothing the caller asks of them (all on the
    target; any not the input's). The nodes it skipped are added to ``skipped``.
    """
    end = END
    flat: list[Any] = [result, end]
    extend = flat.extend
    lay_one = flat.append
    try:
        for at, cls, code in plan.steps:
            x = flat[at]
            kind = type(x)  # (compared apart: mypy would narrow x to cls's type)
            if kind is not cls or id(x) in shared:
                return None
            if code is DICT_CODE:
                extend(x.values())
            elif code is LIST_CODE or code is TUPLE_CODE:
                extend(x)
            elif code is MOVES_CODE or code is WALKED_CODE:
                extend(_dict_of(x, "__dict__").values())
            else:
                extend(node_values(x, code))
            lay_one(end)
    except IndexError:
        return None
    if list(map(type, flat)) != plan.types:
        return None
    pick_shared = plan.pick_shared
    if pick_shared is not None:
        held = pick_shared(flat)
        if not all(map(shared.__contains__, map(id, held))):
            return None
        skipped.extend(held)
    return list(plan.pick(flat))
