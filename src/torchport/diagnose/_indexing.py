"""What indexing costs on an accelerator: masks, indices built on the host, ``masked_fill_``.

Per-op knowledge of :mod:`._ops`' two indexing entries (``x[...]`` and ``x[...] = v``,
and ``aten::index``/``index_put_``), asked with a call's arguments: whether an index is
a boolean mask (its expansion waits for the device), which index parts and assigned
numbers the host builds and CUDA then copies to the device, and when ``index_put_``
runs as ``masked_fill_`` (no wait).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from torchport import hardware
from torchport._device_types import CPU

__all__ = [
    "MASK_DTYPES",
    "assigned_number_bytes",
    "assigns_tensor_by_mask",
    "has_bool_index",
    "host_index_bytes",
    "indexes_by_mask",
    "masked_fill_dispatch",
    "uint8_index",
]

_Args = Sequence[Any]
_Kwargs = Mapping[str, Any]


MASK_DTYPES = (torch.bool, torch.uint8)


def has_bool_index(args: _Args, kwargs: _Kwargs) -> bool:
    indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
    for index in indices or ():
        if isinstance(index, torch.Tensor) and index.dtype in MASK_DTYPES:
            return True
    return False


def masked_fill_dispatch(args: _Args, kwargs: _Kwargs) -> bool:
    """Whether ``index_put_`` runs as ``masked_fill_`` on an accelerator, so never waits.

    ATen's ``canDispatchToMaskedFill`` (TensorAdvancedIndexing): not accumulating, a
    one-element value on the CPU (``x[mask] = 0.5`` wraps the Python number on the CPU
    for a CUDA ``x``), and exactly one index, a bool or uint8 mask on ``x``'s device;
    the other positions are ``None`` (ints and slices become views before).
    """
    self = args[0]
    indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
    value = args[2] if len(args) > 2 else kwargs.get("values")
    accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
    if accumulate or not isinstance(value, torch.Tensor) or value.numel() != 1:
        return False
    if value.device.type != CPU:  # the host: where CUDA wraps numbers
        return False
    mask = None
    for index in indices or ():
        if index is None:
            continue
        if index.dtype not in MASK_DTYPES or index.device != self.device or mask is not None:
            return False
        mask = index
    return mask is not None


# What may sit beside a mask in ``x[...]`` without an aten op of its own that the
# audit would record: ints, slices, None and Ellipsis only make views.
_PLAIN_INDEX = (int, slice, type(None), type(Ellipsis))


def assigns_tensor_by_mask(args: _Args, kwargs: _Kwargs) -> bool:
    """``x[mask] = v`` with ``v`` a tensor: on an accelerator ``v`` is the device's, so
    ``index_put_`` expands the mask there (a wait). A Python number is wrapped on the
    host and the assignment runs as ``masked_fill_`` (:func:`masked_fill_dispatch`)."""
    return len(args) > 2 and isinstance(args[2], torch.Tensor) and indexes_by_mask(args, kwargs)


def host_index_bytes(index: Any) -> int:
    """Bytes of the index tensors torch builds on the host from ``x[index]``'s lists and
    NumPy arrays, which an accelerator then copies to ``x``'s device (0: none).

    A list of ints (``v[:, [-1]]``) or an integer array becomes an ``int64`` tensor of
    as many elements; a list or array of bools becomes, after ``nonzero`` on the host
    (no wait for the device), one ``int64`` index per dimension and ``True``.
    """
    parts = index if type(index) is tuple else (index,)
    numpy = sys.modules.get("numpy")  # an array index means NumPy is imported
    total = 0
    for part in parts:
        if isinstance(part, list):
            counts = _count_list(part)
        elif numpy is not None and isinstance(part, numpy.ndarray):
            if part.dtype == numpy.bool_:
                counts = (0, int(numpy.count_nonzero(part)), part.ndim)
            else:
                counts = (part.size if part.dtype.kind in "iu" else 0, 0, part.ndim)
        else:
            continue
        ints, trues, ndim = counts
        total += (ints + trues * max(ndim, 1)) * 8
    return total


def assigned_number_bytes(args: _Args) -> int:
    """Bytes of the value of ``x[index] = number`` that CUDA copies to the device (0: none).

    CUDA wraps the number in a tensor on the host; an advanced index (a tensor, a list, a
    NumPy array) makes the assignment ``index_put_``, which copies a one-element value to
    the device (``_index_put_impl_``), unless it runs as ``masked_fill_`` (a lone mask,
    :func:`masked_fill_dispatch`) or, on a torch that does so, as ``index_fill_`` (one
    advanced index: :func:`torchport.hardware.setitem_number_fills_by_index`). Ints and
    slices alone make a view, filled in place.
    """
    if len(args) < 3 or not isinstance(args[0], torch.Tensor):
        return 0
    if not isinstance(args[2], (bool, int, float, complex)):
        return 0
    index = args[1]
    numpy = sys.modules.get("numpy")
    advanced = 0
    for part in index if type(index) is tuple else (index,):
        if isinstance(part, (list, torch.Tensor)) or (
            numpy is not None and isinstance(part, numpy.ndarray)
        ):
            advanced += 1
    if not advanced or indexes_by_mask(args, {}):
        return 0
    if advanced == 1 and hardware.setitem_number_fills_by_index():
        return 0  # index_fill_ takes the number as a kernel argument: nothing crosses
    return int(args[0].element_size())


def _count_list(part: list[Any]) -> tuple[int, int, int]:
    """(ints, Trues, depth) in a nested list index; anything else counts nothing."""
    ints = trues = 0
    depth = 1
    for item in part:
        if isinstance(item, bool):
            trues += item
        elif isinstance(item, int):
            ints += 1
        elif isinstance(item, list):
            i, t, d = _count_list(item)
            ints, trues, depth = ints + i, trues + t, max(depth, d + 1)
    return ints, trues, depth


def indexes_by_mask(args: _Args, kwargs: _Kwargs) -> bool:
    """``x[mask]``, ``x[mask, 1:3]``, ``x[mask] = v``: a boolean mask and plain indices only.

    Any other tensor in the index (an index tensor, a 0-dim tensor read as an int)
    leaves the call to the dispatch level, which sees each of its ops.
    """
    index = args[1]
    if isinstance(index, torch.Tensor):
        return index.dtype in MASK_DTYPES
    if type(index) is not tuple:
        return False
    masked = False
    for part in index:
        if isinstance(part, torch.Tensor):
            if part.dtype not in MASK_DTYPES:
                return False
            masked = True
        elif not isinstance(part, _PLAIN_INDEX):
            return False
    return masked


def uint8_index(args: _Args) -> bool:
    """An index holding a ``uint8`` mask, which torch warns is deprecated."""
    index = args[1] if len(args) > 1 else None
    if isinstance(index, torch.Tensor):
        return index.dtype is torch.uint8
    return type(index) is tuple and any(
        isinstance(part, torch.Tensor) and part.dtype is torch.uint8 for part in index
    )
