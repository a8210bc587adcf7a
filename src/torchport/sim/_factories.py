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
from torchport.sim._rules import check_generator
from torchport.sim._tensor import SimTensor, wrap
from torchport.sim._tensor import device as _device

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
    check_generator(op, args, kwargs, _device())  # torch.randn(..., device=sim, generator=...)
    out = op(*pytree.tree_map(_on_host, args), **pytree.tree_map(_on_host, kwargs))
    return pytree.tree_map(wrap, out)


def _scalar_tensor(value: Any, **kwargs: Any) -> Any:
    # `x[mask] = 0.5` builds its value with scalar_tensor: on the host for CUDA (so ATen
    # fills by mask without a wait), on the device for a Python backend. Marked, so the
    # op table is asked about it as CUDA would be.
    options = {key: item for key, item in kwargs.items() if key != "device"}
    out = SimTensor(torch.ops.aten.scalar_tensor.default(value, **options, device=_CPU))
    out.host_scalar = True
    return out


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


def _read_scalar(tensor: torch.Tensor) -> Any:
    # torch.tensor([x0, x1]) of 0-dim device tensors reads each value with the Python key
    # excluded (tensor_new.cpp), so the read arrives here, where PyTorch's Python fallback
    # fails an internal assert; CUDA reads each value on the host (a wait per element).
    from torchport.sim._whole_ops import read_scalar

    return read_scalar(torch.ops.aten._local_scalar_dense.default, (tensor,), {})


def _to_copy_into_device(tensor: torch.Tensor, **kwargs: Any) -> Any:
    from torchport.sim._tensor import SimTensor, copy_to_device, to_copy

    if isinstance(tensor, SimTensor):
        # A device tensor reaches this kernel, not its own __torch_dispatch__, when
        # another subclass's dispatch runs the copy (a jagged nested tensor's .cpu()
        # copies its offsets here): the copy may be to the host.
        return to_copy(torch.ops.aten._to_copy.default, (tensor,), kwargs)
    return copy_to_device(tensor, kwargs)


def _refuse_strided_nested(op: Any, *args: Any, **kwargs: Any) -> Any:
    # NotImplementedError, what torch raises for a kind of tensor a backend cannot hold,
    # so to_device, DeviceLoader and module moves name the tensor's path.
    raise NotImplementedError(
        f"{op}: a nested tensor of the torch.strided layout cannot live on the simulated "
        "accelerator (a jagged one can; on a real accelerator both work); build it with "
        "layout=torch.jagged, or keep it on the CPU"
    )


def _ctc_loss_reading_lengths(
    log_probs: torch.Tensor,
    targets: torch.Tensor,
    input_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    blank: int = 0,
    reduction: int = 1,
    zero_infinity: bool = False,
) -> torch.Tensor:
    """``ctc_loss`` with tensor lengths, as CUDA runs it for plain tensors.

    ATen's ``ctc_loss`` (``LossCTC.cpp``, the overload taking tensor lengths) reads both
    lengths on the host (``.to(kCPU, kLong)``, a copy and a wait when they are on the
    device) and continues with integer lists, so lengths on the host are accepted beside
    a device ``log_probs``. A tensor subclass takes another path there (the lengths stay
    tensors and meet the loss in ``res / target_lengths``), which refused host lengths;
    this kernel takes CUDA's path instead. Not imitated: CUDA's cuDNN path, taken for
    int32 lengths with 1-D int32 targets, blank 0 and float32 ``log_probs``
    (``_use_cudnn_ctc_loss_tensor``), which keeps the lengths as tensors and hands their
    pointers to ``cudnnCTCLoss_v8``; what it does with host lengths is unconfirmed here.
    """
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if (
            lengths.dtype.is_floating_point
            or lengths.dtype.is_complex
            or lengths.dtype == torch.bool
        ):
            raise RuntimeError(f"{name} must be integral")
    inputs_on_host = input_lengths.to(_CPU, torch.long).tolist()
    targets_on_host = target_lengths.to(_CPU, torch.long).tolist()
    return torch.ops.aten.ctc_loss.IntList(  # type: ignore[no-any-return]
        log_probs, targets, inputs_on_host, targets_on_host, blank, reduction, zero_infinity
    )


def install_kernels() -> None:
    """Register the ``PrivateUse1`` kernels (once per process)."""
    fallback = torch.library.Library("_", "IMPL")  # type: ignore[no-untyped-call]
    fallback.fallback(_fallback, "PrivateUse1")  # type: ignore[no-untyped-call]
    # torch.autocast("sim") is accepted and computes in the tensors' own dtypes: torch
    # registers no autocast kernels for a Python backend, so its key passes ops through.
    fallback.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")  # type: ignore[no-untyped-call]
    fallback.fallback(_refuse_strided_nested, "NestedTensorPrivateUse1")  # type: ignore[no-untyped-call]
    aten = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aten.impl("copy_", _copy_into_device, "PrivateUse1")  # type: ignore[no-untyped-call]
        # Under a dispatch mode (audit, strict) torch.tensor(data, device=sim) arrives
        # here as _to_copy, and the fallback cannot take it either.
        aten.impl("_to_copy", _to_copy_into_device, "PrivateUse1")  # type: ignore[no-untyped-call]
        aten.impl("scalar_tensor", _scalar_tensor, "PrivateUse1")  # type: ignore[no-untyped-call]
        aten.impl("_local_scalar_dense", _read_scalar, "PrivateUse1")  # type: ignore[no-untyped-call]
        # Before autograd, where ctc_loss would decompose: CUDA reads the lengths first
        aten.impl("ctc_loss.Tensor", _ctc_loss_reading_lengths, "AutogradPrivateUse1")  # type: ignore[no-untyped-call]
    _libraries.extend((fallback, aten))
