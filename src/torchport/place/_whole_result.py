"""What the result of an own ``.to`` holds outside the input, and what it still holds of it.

``place/_whole.py`` moves such an object by its ``.to`` on a shallow copy, then reads
the result: :func:`unshared_tensors` finds its tensors outside the nodes it shares with
the input (by the class's plan, ``place/_whole_plans.py``, else by a loop over types),
and :func:`held_by` / :func:`held_in` tell ``place/_moved_none.py`` whether every
tensor of the input is still held by the result (a ``.to`` that ignored its device).
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Set as AbstractSet
from typing import Any

import torch

from torchport.place._lasting import lasting
from torchport.place._leaf_kinds import PLAIN_TENSOR_TYPES
from torchport.place._locate import ROOT, find_path
from torchport.place._node_codes import (
    CODES,
    DICT_CODE,
    LIST_CODE,
    TENSOR_CODE,
    TUPLE_CODE,
    VALUE_CODE,
    code_of,
    node_values,
)
from torchport.place._tree import tensors_inside
from torchport.place._whole_plans import RESULT_PLANS, result_plan_of

__all__ = [
    "ALL_HELD",
    "held_by",
    "held_fewer",
    "held_in",
    "not_in",
    "path_in",
    "unshared_tensors",
]


def unshared_tensors(
    result: Any, shared: AbstractSet[int], skipped: list[Any]
) -> list[torch.Tensor] | None:
    """The tensors reachable from ``result`` outside what it shares with the input; or None.

    A dict, list or object the input held (``shared``: the shallow copy shares it)
    holds the input's own, unchanged (checked on every move before this runs), so it
    is not read again (each met is added to ``skipped``). None
    when the loop cannot decide (a type it does not know, a node met twice): the
    caller then asks the walker.
    """
    plan = RESULT_PLANS.get(type(result))
    if plan is not None:
        planned = plan.walk(result, shared, skipped)
        if planned is not None:
            return planned
        skipped.clear()
    found = unshared_loop(result, shared, skipped)
    if found is not None and lasting(type(result)):
        made = result_plan_of(result, shared)
        if made is not None:
            RESULT_PLANS[type(result)] = made
    return found


def unshared_loop(
    result: Any, shared: AbstractSet[int], skipped: list[Any] | None = None
) -> list[torch.Tensor] | None:
    """:func:`unshared_tensors` by a loop over whatever ``result`` holds."""
    codes = CODES.get
    only_tensors = PLAIN_TENSOR_TYPES.issuperset
    pending: list[Any] = [(result,)]  # what is still to read: runs of children
    push = pending.append
    seen: set[int] = set()
    mark = seen.add
    found: list[torch.Tensor] = []
    add = found.append
    while pending:
        for x in pending.pop():
            cls = type(x)
            code = codes(cls)
            if code is None:
                code = code_of(cls)
                if code is None:
                    return None
            if code is TENSOR_CODE:
                add(x)
                continue
            if code is VALUE_CODE:
                continue
            key = id(x)
            if key in shared:
                if skipped is not None:
                    skipped.append(x)
                continue
            if key in seen:
                return None
            if code is DICT_CODE:
                mark(key)
                items = x.values()
            elif code is LIST_CODE:
                mark(key)
                items = x
            elif code is TUPLE_CODE:
                items = x
            else:
                mark(key)
                push(node_values(x, code))
                continue
            if only_tensors(map(type, items)):
                found.extend(items)
            else:
                push(items)
    return found


def ALL_HELD() -> bool:
    """(``check_moved``'s ``kept`` where the caller found every input tensor still held.)"""
    return True


def held_by(
    ids: set[int], found: Any, skipped: list[Any], reached: list[torch.Tensor] | None
) -> bool:
    """Whether every input tensor (``ids``) is still reachable from a result whose tensors
    outside the input's nodes are ``found`` and which holds the input's nodes ``skipped``."""
    held = set(map(id, found))
    rest = []
    for node in skipped:
        if type(node) is dict:
            values = node.values()
            if PLAIN_TENSOR_TYPES.issuperset(map(type, values)):
                held.update(map(id, values))  # a dict of tensors (PyG's _slice_dict)
                continue
        rest.append(node)
    if rest:
        inner = unshared_loop(rest, frozenset())
        if inner is None:
            inner = tensors_inside(rest)  # (the walker: a node met twice)
        held.update(map(id, inner))
    return ids.issubset(held)


def held_in(
    ids: set[int], found: Any, skipped: list[Any], reached: list[torch.Tensor] | None
) -> bool:
    """:func:`held_by` where the walker read the whole result (``reached``)."""
    return ids.issubset(map(id, reached or ()))


def not_in(tensors: list[torch.Tensor], ids: frozenset[int]) -> list[torch.Tensor]:
    """The tensors whose ids are not in ``ids``, picked at C speed."""
    outside = map(operator.not_, map(ids.__contains__, map(id, tensors)))
    return list(itertools.compress(tensors, outside))


def held_fewer(skipped: list[Any], count: int) -> bool:
    """Whether the input's nodes a result holds (``skipped``) are dicts of plain tensors
    holding fewer than ``count`` values in all (``count``: the input's distinct tensors).

    ``move_whole`` (``place/_whole.py``) asks it where every tensor found outside those
    nodes is on the target: then "every input tensor is still held, and none is on the target" (when
    the moved-none check raises) is false. Were none on the target, none would be one
    found (those all are), so all ``count`` would sit in those nodes' values: at least
    ``count`` of them. True spares that check's two passes; False decides nothing.
    """
    only = PLAIN_TENSOR_TYPES.issuperset
    held = 0
    for node in skipped:
        if type(node) is not dict:
            return False
        values = node.values()
        if not only(map(type, values)):
            return False
        held += len(values)
    return held < count


def path_in(batch: Any, obj: Any) -> str:
    """The path of ``obj`` in ``batch`` (None: ``obj`` is the batch), for a message."""
    if batch is None:
        return ROOT
    return find_path(batch, ROOT, functools.partial(operator.is_, obj)) or ROOT
