"""A quick look at a batch, no walk: is it already where it should be?

``DeviceLoader`` on the CPU yields batches that are already there as they are;
asking the walker about each one would cost more than the loader itself.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any

import torch

from torchport._device_types import CPU, META
from torchport.place._lasting import forget_with

__all__ = ["ARRAY_TYPES", "VALUE_TYPES", "all_on", "any_on", "settled"]

# Leaf types known to hold nothing (the walker adds each type it finds to be a
# value). Containers met as leaves under a skipped key are not among them.
VALUE_TYPES: set[type] = {int, float, bool, str, bytes, type(None)}
# Types whose instances are values unless they hold Python objects (numpy arrays: the
# walker looks into those of an object dtype); the walker adds them when it meets them.
ARRAY_TYPES: set[type] = set()
forget_with(VALUE_TYPES, ARRAY_TYPES)
_PLAIN_TENSOR_TYPES = frozenset({torch.Tensor, torch.nn.Parameter})
_IS_CPU = operator.attrgetter("is_cpu")
_IS_META = operator.attrgetter("is_meta")
_DEVICE = operator.attrgetter("device")


_MAX_ITEMS = 256  # past this many items, walking costs less than looking item by item
_FEW = 16  # up to this many top items, one Python pass costs less than C passes first
# Whether a tensor is on a CPU or meta target, by type (an accelerator is compared by index).
_ON: dict[str, Callable[[torch.Tensor], bool]] = {CPU: _IS_CPU, META: _IS_META}
# The same by device, which hashes at C speed where reading ``target.type`` builds a string.
_ON_DEVICE: dict[torch.device, Callable[[torch.Tensor], bool]] = {
    torch.device(CPU): _IS_CPU,
    torch.device(META): _IS_META,
}


def settled(batch: object, target: torch.device) -> int:
    """How many tensors ``batch`` holds if it needs nothing done to be on ``target``, else -1.

    A quick look, no walk: a tensor, or tuples, lists and dicts (the builtin types
    themselves, nested) of plain tensors already on ``target`` and of values that
    hold nothing (numbers, strings, ``None``, numpy arrays of numbers, and types the
    walker has found to be values). -1 means "walk it", not "it must move"; so does
    a batch of more than a few hundred items, where the walk is cheaper.
    """
    cls = type(batch)
    node: Any = batch
    if cls is dict:
        items: Any = node.values()
    elif cls is tuple or cls is list:
        items = node
    elif cls in _PLAIN_TENSOR_TYPES:
        return 1 if all_on([node], target) else -1
    else:
        return -1
    seen = len(items)
    if seen > _FEW:  # many items: their types at C speed first
        if set(map(type, items)) <= _PLAIN_TENSOR_TYPES:
            return seen if all_on(items, target) else -1
        if seen > _MAX_ITEMS:
            return -1
    on = _ON_DEVICE.get(target) or _ON.get(target.type) or _on_device(target)
    plain = _PLAIN_TENSOR_TYPES
    values = VALUE_TYPES
    found = 0
    pending: list[Any] | None = None  # nested builtin containers still to look at
    while True:
        # One pass over the items, each decided by its type; a tensor off the
        # target ends the look at once.
        for item in items:
            kind = type(item)
            if kind in plain:
                if not on(item):
                    return -1
                found += 1
            elif kind in values:
                continue
            elif kind is dict:
                if pending is None:
                    pending = [item.values()]
                else:
                    pending.append(item.values())
            elif kind is list or kind is tuple:
                if pending is None:
                    pending = [item]
                else:
                    pending.append(item)
            elif kind not in ARRAY_TYPES or item.dtype.hasobject:
                return -1
        if not pending:
            return found
        items = pending.pop()
        seen += len(items)
        if seen > _MAX_ITEMS:
            return -1


def _on_device(target: torch.device) -> Callable[[torch.Tensor], bool]:
    """Whether a tensor is on ``target`` (an accelerator: by type and index)."""

    def on(tensor: torch.Tensor) -> bool:
        return bool(tensor.device == target)

    return on


def _each_on(tensors: Any, target: torch.device) -> Iterator[bool]:
    """Per tensor, whether it is on ``target`` (the CPU and meta by type; accelerators by
    index), lazily and at C speed."""
    on = _ON_DEVICE.get(target)  # hashed in C; reading target.type builds a string
    if on is not None:
        return map(on, tensors)
    kind = target.type
    if kind == CPU:
        return map(_IS_CPU, tensors)
    if kind == META:
        return map(_IS_META, tensors)
    return map(target.__eq__, map(_DEVICE, tensors))


def all_on(tensors: Any, target: torch.device) -> bool:
    """Whether every tensor is on ``target``, at C speed."""
    return all(_each_on(tensors, target))


def any_on(tensors: Any, target: torch.device) -> bool:
    """Whether any of the tensors is on ``target``, at C speed."""
    return any(_each_on(tensors, target))
