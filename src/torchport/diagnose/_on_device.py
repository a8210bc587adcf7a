"""What an aten op costs when it really runs on an accelerator, asked with real arguments.

A dispatch mode that sees ops on a device (the simulated accelerator) asks these two
questions with the arguments as they are; the answers apply the table of :mod:`._ops`
(which ops wait, ``masked_fill_``'s case) to where each argument lives, as CUDA does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from torchport._device_types import CPU
from torchport.diagnose._indexing import MASK_DTYPES, masked_fill_dispatch
from torchport.diagnose._ops import OpEntry, aten_entry

__all__ = ["copies_on_device", "syncs_on_device"]

_Args = Sequence[Any]
_Kwargs = Mapping[str, Any]


_INDEX_PUTS = frozenset({"aten::index_put_", "aten::index_put", "aten::_index_put_impl_"})


def _schema_name(func: Any) -> str:
    return str(getattr(getattr(func, "_schema", None), "name", ""))


def _first_tensor(args: _Args) -> torch.Tensor | None:
    for arg in args:
        if isinstance(arg, torch.Tensor):
            return arg
    return None


def syncs_on_device(func: Any, args: _Args, kwargs: _Kwargs) -> OpEntry | None:
    """How an aten op about to run makes the host wait for an accelerator, or ``None``.

    The entry's ``kind`` is :attr:`OpKind.SYNC` (a value read back) or
    :attr:`OpKind.SHAPE_SYNC` (the output's size depends on the data). An op on tensors
    that live on the host never waits (a read of ``.cpu()``'s result, of
    ``torch.tensor(list)``); a mask tensor that lives on the host is expanded there
    (``x[host_mask]``: a copy, see :func:`copies_on_device`, not a wait; a Python list of
    bools is built on ``x``'s device by torch, so it is a device mask and waits); and
    ``x[mask] = number`` runs as ``masked_fill_`` (:func:`masked_fill_dispatch`).

    Args:
        func: The aten overload, e.g. ``torch.ops.aten.nonzero.default``.
        args: Its positional arguments, real tensors on their devices.
        kwargs: Its keyword arguments.
    """
    entry = aten_entry(func)
    if entry is None or entry.transfer:
        return None
    name = _schema_name(func)
    if name in _INDEX_PUTS or name == "aten::index":
        if name in _INDEX_PUTS and masked_fill_dispatch(args, kwargs):
            return None
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        on_device = any(
            isinstance(i, torch.Tensor) and i.dtype in MASK_DTYPES and i.device.type != CPU
            for i in indices or ()
        )
        return entry if on_device else None
    if entry.applies is not None and not entry.applies(args, kwargs):
        return None
    tensor = _first_tensor(args)
    if tensor is None or tensor.device.type == CPU:
        return None
    return entry


def copies_on_device(
    func: Any, args: _Args, kwargs: _Kwargs
) -> list[tuple[torch.device, torch.device, int]]:
    """The copies between devices an aten op about to run makes: ``(src, dst, bytes)``.

    Explicit moves (``aten::_to_copy``, ``copy_`` across devices; none for a tensor
    already on the target, which ``.to()`` returns as it is) and the hidden ones CUDA
    makes inside indexing: index tensors built on the host (from a list, a NumPy array
    or ``torch.tensor``) copied to the indexed tensor's device, a host mask's indices
    after ``nonzero`` on the host, and a host value assigned by ``index_put_`` other than
    the ``masked_fill_`` case.
    """
    name = _schema_name(func)
    if name == "aten::_to_copy":
        target = kwargs.get("device")
        src = args[0] if args else None
        if isinstance(src, torch.Tensor) and target is not None:
            dst = torch.device(target)
            if dst != src.device:
                return [(src.device, dst, src.numel() * src.element_size())]
        return []
    if name in ("aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize"):
        first, second = args[0], args[1] if len(args) > 1 else kwargs.get("src", kwargs.get("dst"))
        src, dst = (second, first) if name == "aten::copy_" else (first, second)
        crosses = (
            isinstance(src, torch.Tensor)
            and isinstance(dst, torch.Tensor)
            and src.device != dst.device
        )
        return [(src.device, dst.device, src.numel() * src.element_size())] if crosses else []
    if name not in _INDEX_PUTS and name != "aten::index":
        return []
    self = args[0]
    if not isinstance(self, torch.Tensor) or self.device.type == CPU:
        return []
    copies: list[tuple[torch.device, torch.device, int]] = []
    indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
    for index in indices or ():
        if not isinstance(index, torch.Tensor) or index.device.type != CPU:
            continue
        if index.dtype in MASK_DTYPES:
            nbytes = int(index.count_nonzero()) * max(index.dim(), 1) * 8
        else:
            nbytes = index.numel() * index.element_size()
        copies.append((index.device, self.device, nbytes))
    if name in _INDEX_PUTS and not masked_fill_dispatch(args, kwargs):
        value = args[2] if len(args) > 2 else kwargs.get("values")
        if isinstance(value, torch.Tensor) and value.device.type == CPU:
            copies.append((value.device, self.device, value.numel() * value.element_size()))
    return copies
