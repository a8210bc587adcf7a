"""``to_device``'s direct paths: small flat batches of plain tensors, without the walker.

A tensor pair or triple (:func:`move_few`), a flat tuple, list or dict of up to
``FLAT_MAX`` plain tensors (:func:`move_flat`) and a ``UserDict`` such as
``BatchEncoding`` whose ``data`` is one (:func:`move_user_dict`) are checked with
C-level passes and moved with one ``Tensor.to`` per tensor. Each returns
``NOT_FLAT`` where the general path (the walker and the copy engine) must decide:
tensor subclasses or other values inside, a tensor twice, packing that may apply,
and copies that end with a wait (to the CPU from an accelerator, to MPS). None waits.
"""

from __future__ import annotations

import collections
import operator
from typing import Any

import torch

from torchport._device_types import CPU, CUDA, META, MPS
from torchport.hardware import PACK_MIN_COUNT, parse_device
from torchport.place._copying import copies_plainly, slot_names
from torchport.place._lasting import forget_with, lasting
from torchport.place._settled import VALUE_TYPES

__all__ = ["FLAT_MAX", "NOT_FLAT", "move_few", "move_flat", "move_user_dict", "plain_user_dict"]

NOT_FLAT: Any = object()
# Flat containers up to this size take the direct path (the engine's C planning wins above).
FLAT_MAX = 32

_IS_CPU = operator.attrgetter("is_cpu")
_IS_META = operator.attrgetter("is_meta")
_CPU = parse_device(CPU)
_META = parse_device(META)
_DEVICE = operator.attrgetter("device")
_TENSOR = torch.Tensor
_ONLY_TENSOR = frozenset({torch.Tensor})
_USER_DICTS: dict[type, bool] = {}  # per UserDict type: may the direct path copy it
forget_with(_USER_DICTS)


def move_few(
    obj: Any,
    cls: type,
    target: torch.device,
    non_blocking: bool | None,
    pack: bool | None,
) -> Any:
    """The ``(x, y)`` and ``(x, y, mask)`` batches: two or three distinct plain tensors.

    What ``move_flat`` does for them, item by item without its C-level passes
    (which cost more than the items here); also for one plain tensor (``[x]``, and
    a tensor beside an object with its own ``.to`` in ``{"obj": o, "y": y}``:
    ``place/_whole_held.py``); any other tuple or list goes to ``move_flat``. Never
    waits: copies to the CPU (which end with a wait) and to MPS are left to the
    general path.
    """
    n = len(obj)
    if n == 1:
        (a,) = obj
        if type(a) is _TENSOR:
            if target is _META:
                if a.is_meta:
                    return obj if cls is tuple else [a]
            elif target is _CPU:
                if a.is_cpu:
                    return obj if cls is tuple else [a]
                return NOT_FLAT
            elif a.device == target:
                return obj if cls is tuple else [a]
            elif target.type == MPS:
                return NOT_FLAT
            one = a.to(target, None, non_blocking is not False)
            return (one,) if cls is tuple else [one]
    elif n == 2:
        a, b = obj
        if type(a) is _TENSOR and type(b) is _TENSOR and a is not b:
            if target is _META:
                if a.is_meta and b.is_meta:
                    return obj if cls is tuple else [a, b]
            elif target is _CPU:
                if a.is_cpu and b.is_cpu:
                    return obj if cls is tuple else [a, b]
                return NOT_FLAT
            elif a.device == target and b.device == target:
                return obj if cls is tuple else [a, b]
            elif target.type == MPS:
                return NOT_FLAT
            nb = non_blocking is not False
            pair = (a.to(target, None, nb), b.to(target, None, nb))
            return pair if cls is tuple else list(pair)
    elif n == 3:
        a, b, c = obj
        if (
            type(a) is _TENSOR
            and type(b) is _TENSOR
            and type(c) is _TENSOR
            and a is not b
            and a is not c
            and b is not c
        ):
            if target is _META:
                if a.is_meta and b.is_meta and c.is_meta:
                    return obj if cls is tuple else [a, b, c]
            elif target is _CPU:
                if a.is_cpu and b.is_cpu and c.is_cpu:
                    return obj if cls is tuple else [a, b, c]
                return NOT_FLAT
            elif a.device == target and b.device == target and c.device == target:
                return obj if cls is tuple else [a, b, c]
            elif target.type == MPS:
                return NOT_FLAT
            nb = non_blocking is not False
            three = (a.to(target, None, nb), b.to(target, None, nb), c.to(target, None, nb))
            return three if cls is tuple else list(three)
    return move_flat(obj, cls, target, non_blocking, pack)


def move_flat(
    obj: Any,
    cls: type,
    target: torch.device,
    non_blocking: bool | None,
    pack: bool | None,
) -> object:
    """The direct path for small flat tuples, lists and dicts of plain tensors.

    Returns ``NOT_FLAT`` where the general path must decide: tensor subclasses or
    non-tensors inside, repeated tensors, packing that may apply, and the targets
    whose copies end with a wait (CPU from an accelerator, MPS). Never waits.
    """
    if cls is dict and len(obj) == 2 and target is not _CPU:
        # Two tensors under two keys (a tokenizer's input_ids and attention_mask), as
        # move_few moves a pair.
        (ka, a), (kb, b) = obj.items()
        if type(a) is _TENSOR and type(b) is _TENSOR and a is not b:
            if target is _META:
                if a.is_meta and b.is_meta:
                    return dict(obj)
            elif a.device == target and b.device == target:
                return dict(obj)
            elif target.type == MPS:
                return NOT_FLAT
            nb = non_blocking is not False
            return {ka: a.to(target, None, nb), kb: b.to(target, None, nb)}
    items = obj.values() if cls is dict else obj
    n = len(items)
    if n > FLAT_MAX or not _ONLY_TENSOR.issuperset(map(type, items)):
        return NOT_FLAT
    if target is _CPU:
        if not all(map(_IS_CPU, items)):
            return NOT_FLAT
    elif not (
        all(map(_IS_META, items))
        if target is _META
        else all(map(target.__eq__, map(_DEVICE, items)))
    ):
        if target is not _META:  # (meta is neither MPS nor CUDA: no need to ask)
            kind = target.type
            if kind == MPS or (pack is None and n >= PACK_MIN_COUNT and kind == CUDA):
                return NOT_FLAT
        if _repeats(items, n):
            return NOT_FLAT
        nb = non_blocking is not False
        if cls is dict:
            return {key: t.to(target, None, nb) for key, t in obj.items()}
        moved = [t.to(target, None, nb) for t in items]
        return tuple(moved) if cls is tuple else moved
    # Nothing to move: tensors come back as they are, in a new container.
    if cls is tuple:
        return obj
    return list(items) if cls is list else dict(obj)


def plain_user_dict(cls: type) -> bool:
    """Whether ``cls`` is a ``UserDict`` (``BatchEncoding``...) that the walker copies plainly.

    Such an object is walked through its ``__dict__`` (``data`` and a few
    attributes) and copied as ``object.__new__`` plus that ``__dict__``; the direct
    path below does exactly that, without the walker, when the rest is plain.
    """
    plain = _USER_DICTS.get(cls)
    if plain is None:
        plain = (
            issubclass(cls, collections.UserDict) and copies_plainly(cls) and not slot_names(cls)
        )
        if lasting(cls):
            _USER_DICTS[cls] = plain
    return plain


def move_user_dict(
    obj: Any, cls: type, target: torch.device, non_blocking: bool | None, pack: bool | None
) -> Any:
    """The direct path for a ``UserDict`` whose ``data`` is a dict of plain tensors.

    Its other attributes must hold nothing (numbers, strings, ``None``, or lists of
    values the walker already knows to be values, such as a tokenizer's
    ``Encoding`` objects); else ``NOT_FLAT``, and the walker decides. The result is
    a new object of the same type with a new ``data``: the input is left as it is
    (``obj`` itself when every tensor is on ``target`` already).
    """
    state = obj.__dict__
    values = VALUE_TYPES
    for name, value in state.items():
        if name == "data":
            continue
        kind = type(value)
        if kind in values:
            continue
        if (kind is list or kind is tuple) and values.issuperset(map(type, value)):
            continue
        return NOT_FLAT
    data = state.get("data")
    if type(data) is not dict:
        return NOT_FLAT
    moved: Any = move_flat(data, dict, target, non_blocking, pack)
    if moved is NOT_FLAT:
        return NOT_FLAT
    if all(map(operator.is_, moved.values(), data.values())):
        return obj  # nothing moved: the very object, as the walker gives it anywhere else
    new: Any = object.__new__(cls)
    own = new.__dict__
    own.update(state)
    own["data"] = moved
    return new


def _repeats(items: Any, n: int) -> bool:
    """Whether a tensor object appears twice (it must then be copied once, so not here)."""
    if n <= 1:
        return False
    if n <= 3 and type(items) is not type({}.values()):
        a, b = items[0], items[1]
        return a is b or (n == 3 and (items[2] is a or items[2] is b))
    return len(set(map(id, items))) != n
