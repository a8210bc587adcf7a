"""Composite ops that reach the simulated tensor whole, run as CUDA runs them: by their parts.

An op with a ``CompositeImplicitAutograd`` kernel (``narrow``, ``where``, ``one_hot``,
``tensor_split``, ``reshape``, ...) is decomposed by the autograd key before it reaches a
backend, so its parts arrive at ``SimTensor.__torch_dispatch__`` one by one. A tensor
without that key (an inference tensor, made under ``torch.inference_mode()``; a tensor
inside another subclass's dispatch) brings the op whole. Run as one op on the values
inside, it skipped what its parts do on CUDA: the host waits of ``F.one_hot(i)``,
``x.narrow(0, t, n)`` with a tensor start and ``torch.where(mask)``; the 0-dim host
condition that ``torch.where(cond, x, 0.0)`` takes as a scalar; ``tensor_split``'s refusal
of indices on the device. Here such an op runs its composite kernel, whose parts reach
the simulated tensor (and its rules and counts) again.

``aten.to`` among them: its composite kernel returns the tensor itself or calls ``_to_copy``,
which :func:`~torchport.sim._tensor.to_copy` answers (``x.cpu()`` of an inference tensor
stayed on ``sim`` when the op ran whole on the values inside). ``aten.item`` and
``aten.is_nonzero`` are answered before this, in :mod:`torchport.sim._whole_ops`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from torchport.sim._rules import layout_refusal

__all__ = ["composite"]

_COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd
_SPARSE = frozenset(
    {torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc}
)


@functools.cache
def composite(func: Any) -> Callable[..., Any] | None:
    """How to answer ``func`` arriving whole: by its composite kernel; ``None`` if it has none."""
    if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _COMPOSITE.name):
        return _decompose
    return None


def _decompose(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    # The C++ composite kernel, what the dispatcher runs for CUDA; not ``func.decompose``,
    # which prefers a Python one where torch registered it (tensor_split's words differ).
    out = func._op_dk(_COMPOSITE, *args, **kwargs)
    for tensor in out if isinstance(out, list | tuple) else (out,):
        # A sparse tensor built from device parts (a CSR tensor's .to(sim) arrives as
        # _sparse_csr_tensor_unsafe): refused as a sparse tensor's copy is.
        held = isinstance(tensor, torch.Tensor) and tensor.device.type == "sim"
        if held and tensor.layout in _SPARSE:
            raise layout_refusal(tensor.layout)
    return out
