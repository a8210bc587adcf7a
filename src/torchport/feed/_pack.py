"""Packed host-to-device copies: many tensors staged in one buffer, one copy, split on arrival.

Each host->device copy has a fixed cost (a driver call, a DMA descriptor: several
microseconds on PCIe) that dwarfs the transfer time of a small tensor. A batch of
many small tensors is therefore laid out in one host staging buffer and moved with
one copy; on the device fused copies split it into a tensor per input, each in
storage of its own and with the strides ``.to`` would give. The copy engine that
does it lives at the hardware floor (``torchport.hardware``); this module is feed's
public face for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from torchport import hardware
from torchport.hardware import StagingPool, Transfer, parse_device, plan_copy

__all__ = ["StagingPool", "Transfer", "pack_to_device", "should_pack", "transfer"]


def should_pack(tensors: Sequence[torch.Tensor], device: torch.device | str) -> bool:
    """The ``pack=None`` rule: at least 4 small host tensors bound for a CUDA device.

    True when the target is a CUDA (or ROCm) device, at least 4 tensors can be
    staged, their mean size is at most 256 KiB and their total at most 64 MiB.
    Never for the CPU, meta, MPS or XPU: to the CPU and meta packing was measured
    slower than copying tensor by tensor (benchmarks/RESULTS.md), and MPS/XPU
    are not measured yet. Never synchronizes.

    Raises:
        DeviceError: ``device`` is malformed or not present.
    """
    return hardware.should_pack(tensors, parse_device(device, argument="device"))


def transfer(
    tensors: Sequence[torch.Tensor],
    device: torch.device | str,
    *,
    non_blocking: bool,
    dtype: torch.dtype | None = None,
    pool: StagingPool | None = None,
    packed: bool = True,
) -> Transfer:
    """Moves ``tensors`` to ``device`` through one host staging buffer.

    With ``packed`` the staging buffer goes over in one copy and is split on the
    device into one allocation per tensor. Without it each tensor gets its own
    device allocation and copy; for a CUDA target, pageable sources are still read
    from the pinned staging buffer so the copies can be asynchronous, while
    already-pinned sources are copied directly. Tensors that cannot be staged (on
    another device, requiring grad, subclasses, odd dtypes) are moved with
    ``Tensor.to``. A tensor object given twice is moved once and both positions get
    the same result.

    Synchronization: see :func:`pack_to_device`.

    Raises:
        TypeError: an element of ``tensors`` is not a tensor.
        DeviceError: ``device`` is malformed or not present.
    """
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"tensors[{i}] is a {type(t).__name__}, not a torch.Tensor")
    target = parse_device(device, argument="device")
    plan = plan_copy(
        tensors,
        target,
        dtype=dtype,
        pack=packed,
        stage_pageable=not packed,
        gather_host=packed,
    )
    return plan.run(non_blocking=non_blocking, pool=pool)


def pack_to_device(
    tensors: Sequence[torch.Tensor],
    device: torch.device | str,
    *,
    non_blocking: bool,
    dtype: torch.dtype | None = None,
    pool: StagingPool | None = None,
) -> list[torch.Tensor]:
    """Moves many tensors to ``device`` with one copy; returns them in input order.

    Every host (CPU) tensor that can be staged is written into one host buffer
    (in the layout ``.to`` gives it: a dense tensor keeps its strides, so
    ``channels_last`` stays ``channels_last``; cast to ``dtype`` if it is floating;
    contiguous tensors back to back in one stretch per dtype, others at 64-byte
    aligned offsets), the buffer crosses in one copy, and fused copies on the device
    split it into a tensor per input. Other tensors (on another
    device, requiring grad, subclasses) are moved with ``Tensor.to``. With a CPU
    target each tensor is copied into a fresh tensor of its own.

    The cast happens on the host during the gather: the gather is a full pass over
    the bytes anyway, so the cast rides along for free, and the usual case (float32
    to bfloat16/float16) halves the bytes over the link and needs no device kernels.

    Every result has a storage of its own, as from ``.to``: resizing or writing one
    never reaches another, and ``torch.save`` on one writes that tensor alone.

    Args:
        tensors: the tensors to move; any dtypes, shapes and devices.
        device: the one target device for all of them.
        non_blocking: issue an asynchronous copy where the target allows it.
        dtype: cast floating tensors to this dtype; others keep theirs.
        pool: the staging pool; ``None`` uses the process-wide default.

    Synchronization: the host waits on an earlier copy's event only when the
    staging slot it needs is still being read (see :meth:`StagingPool.acquire`).
    CUDA with ``non_blocking=True``: returns at once; the copy is ordered on the
    current stream, so work queued on that stream sees the data. CUDA with
    ``non_blocking=False``: the host waits for the copy. CPU, MPS and other
    targets: the host waits for the copy before returning, unless
    ``non_blocking=True`` is passed, in which case the caller must synchronize the
    device before reading the results.

    Raises:
        TypeError: an element of ``tensors`` is not a tensor.
        DeviceError: ``device`` is malformed or not present.
    """
    return transfer(
        tensors, device, non_blocking=non_blocking, dtype=dtype, pool=pool, packed=True
    ).tensors
