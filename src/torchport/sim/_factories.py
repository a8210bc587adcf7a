"""Kernels for the ``PrivateUse1`` dispatch key: ops that reach the simulated device by name.

An op on a :class:`~torchport.sim._tensor.SimTensor` is answered by its
``__torch_dispatch__``. Ops that name the device without holding one of its
tensors (``torch.zeros(3, device="sim")``, ``torch.randn(..., device=device)``)
reach the ``PrivateUse1`` key instead: one fallback runs them on the CPU and
wraps the result. ``copy_`` and ``_to_copy`` onto the device also arrive here when
PyTorch builds a tensor from Python data (``torch.tensor(data, device="sim")``, a
list index ``x[:, [0]]``) with the Python key excluded, and have their own kernels,
since PyTorch's Python fallback cannot take them.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.utils._pytree as pytree

from torchport._crossings import CrossingKind
from torchport.sim import _host
from torchport.sim._pinning import is_pinned
from torchport.sim._tensor import SimTensor, wrap

__all__ = ["install_kernels"]

_CPU = torch.device("cpu")
_libraries: list[Any] = []


def _on_host(value: Any) -> Any:
    if isinstance(value, torch.device) and value.type == "sim":
        if value.index not in (None, 0):
            from torchport.sim._tensor import _target

            _target({"device": value})  # raises, naming the one device there is
        return _CPU
    if isinstance(value, SimTensor):
        return value._raw
    return value


def _fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
    out = op(*pytree.tree_map(_on_host, args), **pytree.tree_map(_on_host, kwargs))
    return pytree.tree_map(wrap, out)


def _copy_into_device(dst: Any, src: torch.Tensor, non_blocking: bool = False) -> Any:
    if isinstance(src, SimTensor):
        dst._raw.copy_(src._raw)
        return dst
    _host.copied(
        CrossingKind.HOST_TO_DEVICE,
        "aten.copy_",
        src,
        pinned=is_pinned(src),
        non_blocking=non_blocking,
    )
    dst._raw.copy_(src)
    return dst


def _to_copy_into_device(tensor: torch.Tensor, **kwargs: Any) -> Any:
    from torchport.sim._tensor import copy_to_device

    return copy_to_device(tensor, kwargs)


def install_kernels() -> None:
    """Register the ``PrivateUse1`` kernels (once per process)."""
    fallback = torch.library.Library("_", "IMPL")  # type: ignore[no-untyped-call]
    fallback.fallback(_fallback, "PrivateUse1")  # type: ignore[no-untyped-call]
    # torch.autocast("sim") is accepted and computes in the tensors' own dtypes: torch
    # registers no autocast kernels for a Python backend, so its key passes ops through.
    fallback.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")  # type: ignore[no-untyped-call]
    aten = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aten.impl("copy_", _copy_into_device, "PrivateUse1")  # type: ignore[no-untyped-call]
        # Under a dispatch mode (audit, strict) torch.tensor(data, device=sim) arrives
        # here as _to_copy, and the fallback cannot take it either.
        aten.impl("_to_copy", _to_copy_into_device, "PrivateUse1")  # type: ignore[no-untyped-call]
    _libraries.extend((fallback, aten))
