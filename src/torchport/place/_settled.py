"""A quick look at a batch, no walk: is it already where it should be?

``DeviceLoader`` on the CPU yields batches that are already there as they are;
asking the walker about each one would cost more than the loader itself.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

__all__ = ["VALUE_TYPES", "settled"]

# Leaf types known to hold nothing (the walker adds each type it finds to be a
# value). Containers met as leaves under a skipped key are not among them.
VALUE_TYPES: set[type] = {int, float, bool, str, bytes, type(None)}
_PLAIN_TENSOR_TYPES = frozenset({torch.Tensor, torch.nn.Parameter})
_IS_CPU = operator.attrgetter("is_cpu")
_IS_META = operator.attrgetter("is_meta")
_DEVICE = operator.attrgetter("device")


def settled(batch: object, target: torch.device) -> int:
    """How many tensors ``batch`` holds if it needs nothing done to be on ``target``, else -1.

    A quick check, no walk: a tensor, or a tuple, list or dict whose items are
    plain tensors already on ``target``, values that hold nothing (numbers,
    strings, ``None``, ...), or lists and tuples of such values (a collated batch
    of file names). -1 means "walk it", not "it must move".
    """
    cls = type(batch)
    if cls is torch.Tensor:
        items: Any = (batch,)
    elif cls is tuple or cls is list:
        items = batch
    elif cls is dict:
        items = batch.values()  # type: ignore[attr-defined]
    else:
        return -1
    types = set(map(type, items))
    if types <= _PLAIN_TENSOR_TYPES:
        tensors: Any = items
    else:
        values = VALUE_TYPES
        for cls in types - _PLAIN_TENSOR_TYPES - values:
            if cls is list or cls is tuple:
                inner = {type(v) for value in items if type(value) is cls for v in value}
                if inner <= values:
                    continue
            return -1
        tensors = [t for t in items if type(t) in _PLAIN_TENSOR_TYPES]
    kind = target.type
    if kind == "cpu":
        here = all(map(_IS_CPU, tensors))
    elif kind == "meta":
        here = all(map(_IS_META, tensors))
    else:
        here = all(map(target.__eq__, map(_DEVICE, tensors)))
    return len(tensors) if here else -1
