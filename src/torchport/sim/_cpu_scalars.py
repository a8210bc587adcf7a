"""Where CUDA takes a 0-dim CPU tensor beside device tensors, class by class.

CUDA refuses a tensor of another device, with one exception: TensorIterator's
``compute_types`` (``ATen/TensorIterator.cpp``) lets one 0-dim CPU *input* through when
the op builds its iterator with ``allow_cpu_scalars`` (the binary and comparison
configs do) and its kernel reads it as a scalar (``gpu_kernel_with_scalars``); a second
one raises "Trying to pass too many CPU scalars", and an output (``out=``, the ``self`` of
an in-place op) is never one. :func:`refused` applies the rules in this order, each
checked against ``tests/sim/data/cuda_device_rules.json`` (recorded on an H200, torch 2.11):

1. The dispatcher wrapper. Ops without ``device_check: NoCheck`` get a CUDA wrapper that
   compares every out and positional tensor before the kernel runs, 0-dim CPU tensors
   included (:func:`~torchport.sim._wrapper_check.wrapper_checks`): ``nextafter(t, s)``,
   ``clamp(t, min=s)``, ``t.clamp_(max=s)``, ``clamp(s, min=u)``, ``clamp_min(t, s)`` raise.
2. Outputs: a written tensor on the host raises (``s.add_(u)``, ``add(t, s, out=c)``).
3. Kernels with their own rule (:data:`_KERNELS`, by op name): which arguments may be a
   0-dim host tensor, and how many. ``addcmul`` reads only ``tensor2`` as a scalar
   (``addcmul_cuda_kernel`` refuses ``self``/``tensor1``), ``addcdiv`` none (its ternary
   iterator lacks ``allow_cpu_scalars``: "TODO: add support for cpu_scalar in addcdiv",
   ``PointwiseOps.cpp``), ``lerp`` only ``weight``; ``clamp``'s iterator (``CLAMP_CONFIG``,
   ``TensorCompare.cpp``) has no ``allow_cpu_scalars``, so its ``out=`` form refuses too;
   ``masked_fill_``/``index_fill_``/``fill_`` read ``value`` with ``.item()`` and want the
   mask and indices on the device (``masked_fill__cuda``: "expected self and mask to be on
   the same device");
   ``where`` moves every 0-dim operand to the device (``where_self_out``).
   ``logical_and``/``or``/``xor`` allocate their output from ``self.options()``
   (``BinaryOps.cpp``'s ``comparison_op``): a host ``self`` puts the output on the host,
   which the iterator refuses beside device inputs (``logical_and(s, t)`` raises,
   ``logical_and(t, s)`` runs; structured ``lt(s, t)`` allocates on the device and runs).
   ``ldexp`` of a floating ``self`` by an integral exponent runs ``_ldexp_int_exponent``,
   an iterator without ``allow_cpu_scalars`` (``ldexp(t, si)`` raises); other dtypes run
   ``mul(self, pow(2, other))``, which takes the scalar.
4. Binary iterator ops: an op PyTorch tags ``pointwise``, or the in-place/out twin of one
   (``t.copysign_(s)``, ``t.lt_(s)``), or one of :data:`_UNTAGGED_BINARY` (``floor_divide``
   and ``rsub`` build ``TensorIterator::binary_op``; ``dist`` is ``norm(self - other)``):
   one 0-dim host input, anywhere.

Every other op refuses a tensor of another device. Where CUDA copies host indices or
lengths itself is :mod:`torchport.sim._rules`' (it asks this module for the rest).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch

from torchport.sim._wrapper_check import wrapper_checks

__all__ = ["refused"]

_ANY = None
"""Any argument may be the 0-dim host tensor."""


def _no_scalar(func: Any, tensors: Sequence[torch.Tensor]) -> tuple[frozenset[str], int]:
    return frozenset(), 0


def _only(*names: str, limit: int | None = 1) -> Any:
    def rule(func: Any, tensors: Sequence[torch.Tensor]) -> tuple[frozenset[str], int | None]:
        return frozenset(names), limit

    return rule


def _first_operand_allocates(
    func: Any, tensors: Sequence[torch.Tensor]
) -> tuple[frozenset[str] | None, int]:
    # Only the functional form allocates; logical_and_ and logical_and.out write a given tensor.
    functional = not any(argument.is_write for argument in func._schema.arguments)
    return (frozenset({"other"}) if functional else _ANY), 1


def _ldexp(func: Any, tensors: Sequence[torch.Tensor]) -> tuple[frozenset[str] | None, int]:
    self, other = tensors[0], tensors[1]
    integral = not other.is_floating_point() and not other.is_complex()
    if integral and self.is_floating_point():
        return frozenset(), 0  # _ldexp_int_exponent: no allow_cpu_scalars
    return _ANY, 1


# Ops whose CUDA kernel decides which arguments may be a 0-dim host tensor, by name.
_KERNELS: dict[str, Any] = {
    "addcmul": _only("tensor2"),
    "addcdiv": _no_scalar,
    "lerp": _only("weight"),
    "clamp": _no_scalar,
    "clamp_min": _no_scalar,
    "clamp_max": _no_scalar,
    "clip": _no_scalar,
    "masked_fill": _only("value", limit=None),
    "index_fill": _only("value", limit=None),
    "fill": _only("value", limit=None),
    "where": _only("condition", "self", "other", limit=None),
    "logical_and": _first_operand_allocates,
    "logical_or": _first_operand_allocates,
    "logical_xor": _first_operand_allocates,
    "ldexp": _ldexp,
}

# Binary TensorIterator ops that PyTorch does not tag pointwise.
_UNTAGGED_BINARY = frozenset({"floor_divide", "rsub", "dist"})


def _name(func: Any) -> str:
    """The op's name without the in-place underscore: ``copysign_`` -> ``copysign``."""
    name: str = func._schema.name.removeprefix("aten::")
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


@functools.cache
def _binary_iterator(func: Any) -> bool:
    name = _name(func)
    if name in _UNTAGGED_BINARY or torch.Tag.pointwise in func.tags:
        return True
    try:
        packet = getattr(torch.ops.aten, name)
    except AttributeError:
        return False
    return any(torch.Tag.pointwise in getattr(packet, o).tags for o in packet.overloads())


@functools.cache
def _written(func: Any) -> frozenset[str]:
    return frozenset(
        argument.name
        for argument in func._schema.arguments
        if argument.alias_info is not None and argument.alias_info.is_write
    )


def _scalars(
    func: Any, tensors: Sequence[torch.Tensor]
) -> tuple[frozenset[str] | None, int | None]:
    """The arguments that may be a 0-dim host tensor (``_ANY``: every input) and how many."""
    kernel = _KERNELS.get(_name(func))
    if kernel is not None:
        allowed: tuple[frozenset[str] | None, int | None] = kernel(func, tensors)
        return allowed
    if _binary_iterator(func):
        return _ANY, 1
    return frozenset(), 0


def _words(func: Any, name: str, device: torch.device) -> str | None:
    """CUDA's kernel's own words for a 0-dim host tensor it refuses as ``name``."""
    op = _name(func)
    if op == "addcmul":  # addcmul_cuda_kernel
        swap = (
            " However, CPU Scalar support for tensor2 is supported, please swap your tensor1 "
            "and tensor2 terms."
        )
        return (
            f"CPU Scalar support for {name} argument is not supported when calling addcmul "
            f"on CUDA tensors.{swap if name == 'tensor1' else ''}"
        )
    if op == "masked_fill" and name == "mask":  # masked_fill__cuda
        return (
            "expected self and mask to be on the same device, but got mask on cpu and self "
            f"on {device}"
        )
    return None


def refused(
    func: Any,
    tensors: Sequence[torch.Tensor],
    names: Sequence[str],
    device: torch.device,
) -> tuple[int, str | None] | None:
    """The first of ``func``'s tensors CUDA refuses beside ``device``, and CUDA's words.

    Checked in CUDA's order: the dispatcher wrapper, then TensorIterator's operands (an
    output or a tensor with dimensions on the host; a CPU scalar past the count), then the
    kernel's own rule on which argument it reads as a scalar.

    Args:
        func: The aten overload about to run.
        tensors: Its tensor arguments, in the order the simulator collects them.
        names: The schema name of each tensor (``""`` where unknown).
        device: The simulated device.

    Returns:
        ``None`` where CUDA runs the op; else the refused tensor's position and the message
        CUDA's kernel raises (``None`` where it is the wrapper's or TensorIterator's words).
    """
    foreign = [p for p, tensor in enumerate(tensors) if tensor.device != device]
    if not foreign:
        return None
    named = [names[p] if p < len(names) else "" for p in foreign]
    checked = wrapper_checks(func)
    for position, name in zip(foreign, named, strict=True):
        if name in checked:
            return position, None
    written = _written(func)
    allowed, limit = _scalars(func, tensors)
    for taken, (position, name) in enumerate(zip(foreign, named, strict=True), start=1):
        tensor = tensors[position]
        if name in written or tensor.dim() > 0 or not tensor.is_cpu:
            return position, None
        if limit is not None and taken > limit:
            words = "Trying to pass too many CPU scalars to non-CPU kernel!" if limit else None
            return position, words
    for position, name in zip(foreign, named, strict=True):
        if allowed is not _ANY and name not in allowed:
            return position, _words(func, name, device)
    return None
