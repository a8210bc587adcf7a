"""Where CUDA's ``index_put_`` takes the values it writes: ``_index_put_impl_``'s three paths.

``x[indices] = values`` and ``x.index_put_(indices, values, accumulate)`` reach
ATen's ``_index_put_impl_`` (TensorAdvancedIndexing.cpp), which on CUDA picks one
of three paths, and each takes host values differently:

1. ``masked_fill_``: not ``accumulate``, one-element values on the host, and the one
   index a bool/uint8 mask on the indexed tensor's device (``canDispatchToMaskedFill``;
   ``None`` indices may stand beside it). The value is read on the host.
2. The sorting kernel (``index_put_with_sort_stub``): ``accumulate``, or deterministic
   algorithms with more than one value. It checks ``values`` is on the tensor's device
   after moving a 0-dim host value there: "expected device cuda:0 but got device cpu for
   value tensor".
3. ``make_index_put_iterator``: a TensorIterator over the tensor and the values, after
   moving a 0-dim value from another device; it takes no other tensor from another device:
   "Expected all tensors to be on the same device, but found at least two devices, cuda:0
   and cpu!" (the written tensor's device named first).

So a one-element 1-dim host value with a lone device mask is written on CUDA without
``accumulate`` and refused with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["INDEX_PUTS", "check_index_put"]

_aten = torch.ops.aten

INDEX_PUTS = frozenset(
    {_aten.index_put_.default, _aten.index_put.default, _aten._index_put_impl_.default}
)


def _argument(args: Sequence[Any], kwargs: dict[str, Any], position: int, name: str) -> Any:
    return args[position] if len(args) > position else kwargs.get(name)


def _is_host(value: torch.Tensor) -> bool:
    # A value the simulator built from a Python number for an op CUDA builds it on the host for.
    return value.device.type == "cpu" or bool(getattr(value, "host_scalar", False))


def _masked_fill(self: torch.Tensor, indices: Sequence[torch.Tensor], values: torch.Tensor) -> bool:
    """ATen's ``canDispatchToMaskedFill`` (without its mask-shape check, which the op makes)."""
    return (
        values.numel() == 1
        and _is_host(values)
        and len(indices) == 1
        and indices[0].dtype in (torch.bool, torch.uint8)
        and indices[0].device == self.device
    )


def check_index_put(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Raise as CUDA's ``_index_put_impl_`` does for values on a device other than the tensor's.

    Args:
        func: The aten overload about to run (any; only index puts are checked).
        args: Its positional arguments: the tensor, its indices, the values, ``accumulate``.
        kwargs: Its keyword arguments.

    Raises:
        RuntimeError: The values' device is one the path CUDA takes refuses, with its text.
    """
    if func not in INDEX_PUTS:
        return
    self = _argument(args, kwargs, 0, "self")
    values = _argument(args, kwargs, 2, "values")
    if not isinstance(values, torch.Tensor):
        return
    indices = [i for i in _argument(args, kwargs, 1, "indices") or () if i is not None]
    accumulate = bool(_argument(args, kwargs, 3, "accumulate"))
    if values.device == self.device or values.dim() == 0:
        return  # a 0-dim value from another device is moved to the tensor's (host_scalar's too)
    if not accumulate and _masked_fill(self, indices, values):
        return
    sorting = accumulate or (torch.are_deterministic_algorithms_enabled() and values.numel() > 1)
    if sorting and self.device.type != "cpu":  # a sorting kernel is CUDA's; the host's is path 3
        raise RuntimeError(
            f"expected device {self.device} but got device {values.device} for value tensor"
        )
    raise RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{self.device} and {values.device}!"
    )
