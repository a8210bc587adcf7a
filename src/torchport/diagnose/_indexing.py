"""What indexing costs on an accelerator: masks, indices built on the host, ``masked_fill_``.

Per-op knowledge of :mod:`._ops`' two indexing entries (``x[...]`` and ``x[...] = v``,
and ``aten::index``/``index_put_``), asked with a call's arguments: whether an index is
a boolean mask (its expansion waits for the device), which index parts and assigned
numbers the host builds and CUDA then copies to the device, and when ``index_put_``
runs as ``masked_fill_`` (no wait).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from torchport import hardware
from torchport._device_types import CPU

__all__ = [
    "MASK_DTYPES",
    "advances",
    "assigned_number_bytes",
    "assigns_number_by_mask",
    "assigns_tensor_by_mask",
    "basic_view_dims",
    "fills_by_index",
    "has_bool_index",
    "host_index_bytes",
    "host_index_parts",
    "indexes_by_mask",
    "list_index_copy_bytes",
    "masked_fill_dispatch",
    "selects",
    "uint8_index",
]

_Args = Sequence[Any]
_Kwargs = Mapping[str, Any]


MASK_DTYPES = (torch.bool, torch.uint8)
_SETITEM = torch.Tensor.__setitem__
_INDEXING = frozenset({torch.Tensor.__getitem__, _SETITEM})


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


def assigns_number_by_mask(args: _Args) -> bool:
    """``x[mask] = number``: ``masked_fill_`` where the mask is on ``x``'s device; where it
    is on the host, ``index_put_`` copies the mask's positions and the number (the caller
    knows which: :mod:`._host_held`)."""
    return (
        len(args) > 2
        and isinstance(args[2], (bool, int, float, complex))
        and indexes_by_mask(args, {})
    )


def list_index_copy_bytes(func: Any, args: _Args) -> int:
    """Bytes a ``x[index]`` / ``x[index] = v`` call (``func``) would copy to an accelerator
    for the index parts the host builds (lists, NumPy arrays) and a number it assigns
    (0: none). Any index tensor is taken as the host's: the audit's observer knows better.
    """
    if func not in _INDEXING or len(args) < 2:
        return 0
    try:
        number = assigned_number_bytes(args, on_host=_maybe_on_host)
        found = host_index_bytes(args[1]) + number
        # x[mask] = number: nothing crosses unless the mask is the host's (the observer's to tell)
        return found or int(func is _SETITEM and assigns_number_by_mask(args))
    except Exception:  # odd indices: the call itself will say what is wrong with them
        return 0


def _maybe_on_host(tensor: torch.Tensor) -> bool:
    """Any index tensor may be the host's in the accelerator run (the observer knows)."""
    return True


def host_index_bytes(index: Any) -> int:
    """Bytes of the index tensors torch builds on the host from ``x[index]``'s lists and
    NumPy arrays, which an accelerator then copies to ``x``'s device (0: none); see
    :func:`host_index_parts`."""
    return sum(nbytes for nbytes, _ in host_index_parts(index))


def host_index_parts(index: Any) -> list[tuple[int, bool]]:
    """``(bytes, is_mask)`` of each list or NumPy array in ``x[index]``: one copy each.

    ``applySlicing`` turns each into a tensor with ``sequenceToVariable`` ->
    ``indexing_tensor_from_data(self.options(), kLong, nullopt, seq)``, which builds it on
    the host and puts it on ``self``'s device (``internal_new_from_data`` takes
    ``options.device()`` when no device is given): a list of ints or an integer array as
    ``int64``, a list or array of bools as ``bool``, which is then a mask on the device
    (expanding it waits, unless ``index_put_`` runs as ``masked_fill_``).
    """
    parts = index if type(index) is tuple else (index,)
    numpy = sys.modules.get("numpy")  # an array index means NumPy is imported
    found: list[tuple[int, bool]] = []
    for part in parts:
        if isinstance(part, list):
            ints, bools, _ = _count_list(part)
            if ints:
                found.append((ints * 8, False))
            elif bools:
                found.append((bools, True))
        elif numpy is not None and isinstance(part, numpy.ndarray):
            if part.dtype == numpy.bool_:
                found.append((int(part.size), True))
            elif part.dtype.kind in "iu" and part.size:
                found.append((int(part.size) * 8, False))
    return found


def assigned_number_bytes(args: _Args, *, on_host: Callable[[torch.Tensor], bool]) -> int:
    """Bytes of the value of ``x[index] = number`` that CUDA copies to the device (0: none).

    CUDA's ``THPVariable_setitem`` wraps the number in a 0-dim tensor *on the host*
    (``valueToTensor(..., at::Device(kCPU))`` for a CUDA ``self``; ATen/TensorIndexing.h,
    ``scalarToTensor``: ``self_device == kCPU`` makes it with ``scalar_tensor_static`` on
    the CPU; other devices get ``at::scalar_tensor`` on the device and copy nothing).
    Then:

    * basic indexing only (ints, slices, ``None``, ``...``, a lone ``True``, 0-dim integer
      tensors, which ``handleDimInMultiDimIndexing`` reads with ``.item()`` and selects by):
      TensorIndexing.h's ``copy_to(view, value)`` runs ``dst.copy_(src)`` when the sizes
      are equal, which for a 0-dim value means a 0-dim view (``x[0]`` of a 1-D ``x``,
      ``m[0, 1]``): one element copied to the device; any other view takes its
      ``src.dim() == 0 && src.device().type() == at::kCPU`` branch, ``dst.fill_(src)``,
      which reads the host value and fills on the device (no copy). A lone ``False``
      assigns nothing. Newer torch (2.15) fills the 0-dim view with the number instead, and
      nothing crosses (:func:`torchport.hardware.setitem_number_copies_into_a_zero_dim_view`).
    * an advanced index (a tensor, a list, a NumPy array, a bool inside a tuple, which
      ``boolToIndexingTensor`` turns into an index tensor) makes the assignment
      ``index_put_``, which copies a one-element host value to the device
      (``_index_put_impl_``), unless it runs as ``masked_fill_`` (a lone mask,
      :func:`masked_fill_dispatch`) or, on a torch that does so, as ``index_fill_``
      (:func:`torchport.hardware.setitem_number_fills_by_index`, :func:`fills_by_index`).

    Header lines are torch 2.13's (``copy_to`` and ``set_item`` at lines 420-446 and
    717-775, ``scalarToTensor`` at 387-399); ``valueToTensor``'s choice of the CPU is in
    ``torch/csrc/autograd/python_variable_indexing.cpp``, which the wheel does not ship
    (only its declaration, python_variable_indexing.h); the simulated device, which
    gets the number made on the device, marks it and counts the copy CUDA makes
    (``torchport.sim._factories``).

    Args:
        args: ``Tensor.__setitem__``'s arguments.
        on_host: Whether the accelerator run holds an index tensor on the host (the
            audit's :class:`._host_held.HostHeld`): such an index is never ``index_fill_``'s.
    """
    if len(args) < 3 or not isinstance(args[0], torch.Tensor):
        return 0
    if not isinstance(args[2], (bool, int, float, complex)):
        return 0
    index = args[1]
    dims = basic_view_dims(args[0], index)
    if dims is not None:
        copies = dims == 0 and hardware.setitem_number_copies_into_a_zero_dim_view()
        return int(args[0].element_size()) if copies else 0
    numpy = sys.modules.get("numpy")
    advanced = 0
    for part in index if type(index) is tuple else (index,):
        if isinstance(part, (list, torch.Tensor)) or (
            numpy is not None and isinstance(part, numpy.ndarray)
        ):
            advanced += not selects(part)
        elif isinstance(part, bool):
            advanced += 1  # a bool inside a tuple: an index tensor (boolToIndexingTensor)
    if not advanced or indexes_by_mask(args, {}):
        return 0
    masks = [is_mask for _, is_mask in host_index_parts(index)]
    if advanced == 1 and masks == [True]:
        return 0  # a lone bool list or array: a mask on the device, so masked_fill_
    if advanced == 1 and fills_by_index(args[0], index, on_host=on_host):
        return 0  # index_fill_ takes the number as a kernel argument: nothing crosses
    return int(args[0].element_size())


def fills_by_index(
    tensor: torch.Tensor, index: Any, *, on_host: Callable[[torch.Tensor], bool]
) -> bool:
    """Whether ``tensor[index] = number`` with one advanced index part runs as
    ``index_fill_`` on an accelerator (the number a kernel argument: nothing crosses).

    On a torch that tries it (:func:`torchport.hardware.setitem_number_fills_by_index`),
    TensorIndexing.h's ``try_dispatch_index_fill_`` (torch 2.15, lines 720-753) takes it
    only for an ``int64`` index on ``tensor``'s device, one-dimensional or contiguous, of
    a tensor neither quantized nor float8; else ``index_put_`` copies the number the host
    wrapped. A list, a NumPy array or a bool inside a tuple becomes an ``int64`` index
    tensor on ``tensor``'s device (``sequenceToVariable``, ``boolToIndexingTensor``); an
    index tensor the accelerator run holds on the host (``on_host``) is not on it.
    """
    if not hardware.setitem_number_fills_by_index():
        return False
    dtype = tensor.dtype
    if tensor.is_quantized or (dtype.is_floating_point and dtype.itemsize == 1):
        return False  # qint and float8 (the one-byte floats) go to index_put_
    for part in index if type(index) is tuple else (index,):
        if isinstance(part, torch.Tensor) and not selects(part):
            return (
                part.dtype is torch.int64
                and not on_host(part)
                and (part.dim() <= 1 or part.is_contiguous())
            )
    return True  # built on the device as int64 (a list, an array, a bool in a tuple)


def basic_view_dims(tensor: torch.Tensor, index: Any) -> int | None:
    """How many dimensions the view ``tensor[index]`` has where the index is basic only
    (ints and objects with ``__index__``, slices, ``None``, ``...``, 0-dim integer tensors,
    a lone bool); ``None`` where it holds an advanced part or anything else.

    A lone ``False`` gives ``-1``: the assignment does nothing (``set_item``).
    """
    if index is False:
        return -1
    if index is True:  # set_item: copy_to(self.unsqueeze(0), value)
        return tensor.dim() + 1
    dims = tensor.dim()
    for part in index if type(index) is tuple else (index,):
        if part is None:
            dims += 1
        elif part is Ellipsis or isinstance(part, slice):
            continue
        elif isinstance(part, (bool, list)):
            return None  # inside a tuple, a bool becomes an index tensor
        elif isinstance(part, torch.Tensor):
            if not selects(part):
                return None
            dims -= 1
        elif hasattr(type(part), "__index__") and not hasattr(part, "shape"):
            dims -= 1  # an int, a NumPy integer scalar has a shape: left to the call
        else:
            return None
    return dims


def advances(part: Any) -> bool:
    """Whether an index part makes ``x[...]`` advanced indexing: a list, a NumPy array, a
    tensor other than a 0-dim integer one (which ATen selects by, as by an int)."""
    if isinstance(part, torch.Tensor):
        return not selects(part)
    return isinstance(part, list) or type(part).__module__ == "numpy"


def selects(part: Any) -> bool:
    """A 0-dim integer tensor: ATen reads it (``.item()``) and selects by its value."""
    return (
        isinstance(part, torch.Tensor)
        and part.dim() == 0
        and not part.dtype.is_floating_point
        and not part.dtype.is_complex
        and part.dtype not in MASK_DTYPES
    )


def _count_list(part: list[Any]) -> tuple[int, int, int]:
    """(ints, bools, depth) in a nested list index; anything else counts nothing."""
    ints = bools = 0
    depth = 1
    for item in part:
        if isinstance(item, bool):
            bools += 1
        elif isinstance(item, int):
            ints += 1
        elif isinstance(item, list):
            i, b, d = _count_list(item)
            ints, bools, depth = ints + i, bools + b, max(depth, d + 1)
    return ints, bools, depth


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
