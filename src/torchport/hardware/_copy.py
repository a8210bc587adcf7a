"""The copy engine: one plan per batch of tensors, then one execution.

:func:`plan_copy` looks at each distinct tensor once and decides its route:
it *stays* (already on the target with the right dtype), goes *direct* (one
``Tensor.to``), or is *staged* (written into a host staging buffer that crosses
in one copy, or, unpacked, that turns a pageable source into a pinned one).
:meth:`CopyPlan.run` issues the copies and, in the safe default mode, waits once.
``to_device``, ``DeviceLoader`` and ``pack_to_device`` all go through here, so
the device is normalised once and packability decided once per call.

Each host->device copy has a fixed cost (a driver call, a DMA descriptor:
several microseconds on PCIe) that dwarfs the transfer time of a small tensor,
which is why many small tensors bound for CUDA are packed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from torchport.hardware._pinned import pins_for
from torchport.hardware._staging import StagingPool, default_pool
from torchport.hardware._sync import current_stream, new_event, synchronize, wait_for_copies

__all__ = [
    "ALIGN",
    "CopyPlan",
    "Transfer",
    "copy_tensors",
    "plan_copy",
    "should_pack",
    "stageable",
]

# Offsets into the packed buffer are multiples of 64 bytes. That is a multiple of
# every element size (complex128 is the widest at 16), so each slice can be viewed
# back as its dtype; it meets the 16-byte alignment that vectorized CUDA kernels
# check before taking their fast path; and it keeps two tensors off one CPU cache
# line while the host writes them.
ALIGN = 64

# pack=None thresholds, applied only to CUDA targets. One cudaMemcpyAsync costs about
# 5-10 us of fixed overhead; PCIe 4.0 x16 moves about 25 GB/s, so 10 us is ~256 KiB of
# payload. Below that mean size the per-copy overhead dominates and packing wins;
# above it the extra host memcpy into the staging buffer costs more than the launches
# it saves. Packing has its own fixed cost (pool lease, one device allocation, one
# event, Python layout work) of a few launches, hence a minimum count. Past 64 MiB in
# total the host gather stalls the producer. Other targets are never packed
# automatically: to the CPU and meta there is no link to save launches on (packing
# measured 10x slower per tensor there, benchmarks/RESULTS.md), and MPS/XPU are not
# measured yet.
PACK_MIN_COUNT = 4
PACK_MAX_MEAN_BYTES = 256 * 1024
PACK_MAX_TOTAL_BYTES = 64 * 1024 * 1024

# Dtypes whose bytes can be copied into a uint8 buffer and viewed back. Quantized,
# sub-byte (uint1..7, float4) and bit types are moved one by one instead.
_PACKABLE_DTYPES: frozenset[torch.dtype] = frozenset(
    getattr(torch, name)
    for name in (
        "bool",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "complex32",
        "complex64",
        "complex128",
    )
    if hasattr(torch, name)
)


def _cast(t: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype | None:
    """The dtype ``t`` is cast to, or None: ``dtype`` applies to floating tensors only."""
    return dtype if dtype is not None and t.is_floating_point() and t.dtype != dtype else None


def _same_device(a: torch.device, b: torch.device) -> bool:
    return a.type == b.type and (a.index is None or b.index is None or a.index == b.index)


def stageable(t: torch.Tensor, dtype: torch.dtype | None) -> bool:
    """Whether ``t`` can go through a host staging buffer without changing meaning.

    A plain dense host tensor of a byte-addressable dtype. Tensors that require
    grad keep their autograd edge through ``Tensor.to``; subclasses (Parameter,
    FakeTensor, DTensor...) keep their own ``to``.
    """
    return (
        type(t) is torch.Tensor
        and t.is_cpu
        and t.layout == torch.strided
        and not t.requires_grad
        and not t.is_nested
        and t.dtype in _PACKABLE_DTYPES
        and (dtype is None or not t.is_floating_point() or dtype in _PACKABLE_DTYPES)
    )


def _plain_dense(t: torch.Tensor) -> bool:
    """A plain strided tensor whose copy into a fresh buffer means the same as ``.to``."""
    return (
        type(t) is torch.Tensor
        and t.layout == torch.strided
        and not t.requires_grad
        and not t.is_nested
        and not t.is_quantized
    )


def should_pack(tensors: Sequence[torch.Tensor], device: torch.device) -> bool:
    """The ``pack=None`` rule: at least 4 small stageable host tensors bound for CUDA.

    True when the target is a CUDA (or ROCm) device, at least 4 tensors can be
    staged, their mean size is at most 256 KiB and their total at most 64 MiB
    (see the module constants for why). Never synchronizes.
    """
    if not pins_for(device):
        return False
    sizes = [t.numel() * t.element_size() for t in tensors if stageable(t, None)]
    if len(sizes) < PACK_MIN_COUNT:
        return False
    total = sum(sizes)
    return total <= PACK_MAX_TOTAL_BYTES and total <= PACK_MAX_MEAN_BYTES * len(sizes)


@dataclass(frozen=True, slots=True)
class Transfer:
    """The outcome of :meth:`CopyPlan.run`.

    Attributes:
        tensors: The moved tensors, in input order (a repeated input gets the same result).
        nbytes: Bytes that crossed to the device (0 when nothing had to move).
        copies: How many copy calls were issued; a packed batch costs one.
        event: Recorded on the current stream after asynchronous copies into CUDA
            from pinned staging; ``None`` otherwise.
        fresh: Device tensors this transfer allocated on the current stream (for
            ``record_stream`` when they are handed to another stream).
        packed: Whether the staged tensors crossed in one copy.
    """

    tensors: list[torch.Tensor]
    nbytes: int
    copies: int
    event: torch.Event | None
    fresh: list[torch.Tensor]
    packed: bool


@dataclass(frozen=True, slots=True)
class _Entry:
    """Where one staged tensor lives in the staging buffer."""

    index: int
    offset: int
    nbytes: int
    shape: torch.Size
    dtype: torch.dtype

    def view(self, buffer: torch.Tensor) -> torch.Tensor:
        raw = buffer[self.offset : self.offset + self.nbytes]
        return raw.view(self.dtype).view(self.shape)


class CopyPlan:
    """How each tensor of one call reaches ``target``; decided once by :func:`plan_copy`.

    Attributes:
        target: The normalised target device.
        dtype: The cast for floating tensors, or None.
        stay: Indices of tensors already where they should be.
        direct: Indices of tensors copied one by one with ``Tensor.to``.
        staged: Indices of tensors written into a host staging buffer.
        packed: Whether the staged tensors cross in one copy.
    """

    __slots__ = ("_first", "_tensors", "direct", "dtype", "packed", "stay", "staged", "target")

    def __init__(
        self,
        tensors: Sequence[torch.Tensor],
        target: torch.device,
        dtype: torch.dtype | None,
        first: list[int],
        stay: list[int],
        direct: list[int],
        staged: list[int],
        packed: bool,
    ) -> None:
        self._tensors = tensors
        self._first = first
        self.target = target
        self.dtype = dtype
        self.stay = stay
        self.direct = direct
        self.staged = staged
        self.packed = packed

    @property
    def noop(self) -> bool:
        """Whether nothing has to be copied."""
        return not self.direct and not self.staged

    def run(self, *, non_blocking: bool | None, pool: StagingPool | None = None) -> Transfer:
        """Issue the copies; returns the moved tensors.

        Synchronization with ``non_blocking=None`` ("as fast as is safe"): copies
        into accelerators are asynchronous and not waited for; copies to the CPU
        from an accelerator land in ordinary pageable memory and the host waits
        once per source device before this returns; copies to MPS end with one
        MPS synchronization. ``True``: everything asynchronous, no wait (to the
        CPU torch then returns pinned memory, and the caller must synchronize
        before reading). ``False``: every copy blocking. The host also waits on
        an earlier copy's event when the staging slot it needs is still being read.
        """
        tensors = self._tensors
        target = self.target
        dtype = self.dtype
        out: list[torch.Tensor | None] = [None] * len(tensors)
        for i in self.stay:
            out[i] = tensors[i]
        nb = True if non_blocking is None else non_blocking
        # To the CPU in the safe mode: pageable destinations (torch would pin them
        # under non_blocking=True), filled asynchronously, then one wait below.
        pageable = non_blocking is None and target.type == "cpu"
        sources: set[torch.device] = set()
        fresh: list[torch.Tensor] = []
        nbytes = copies = 0
        for i in self.direct:
            t = tensors[i]
            cast = _cast(t, dtype)
            crosses = not _same_device(t.device, target)
            if pageable and crosses and not t.is_meta:
                sources.add(t.device)
                if _plain_dense(t):
                    moved = torch.empty_like(t, dtype=cast or t.dtype, device=target)
                    moved.copy_(t, non_blocking=True)
                else:
                    moved = t.to(target, cast, False)
            else:
                moved = t.to(target, cast, nb)
            if crosses and t.numel():
                nbytes += t.numel() * t.element_size()
                copies += 1
                fresh.append(moved)
            out[i] = moved
        event: torch.Event | None = None
        if self.staged:
            staged_bytes, staged_copies, event = self._run_staged(out, fresh, nb, pool)
            nbytes += staged_bytes
            copies += staged_copies
        if non_blocking is None and copies:
            wait_for_copies(sources, target)
        elif copies and not nb and target.type == "mps":
            synchronize(target)  # a blocking copy to MPS is visible only after this
        first = self._first
        result = [out[i] if out[i] is not None else out[first[i]] for i in range(len(out))]
        return Transfer(result, nbytes, copies, event, fresh, self.packed)  # type: ignore[arg-type]

    def _run_staged(
        self,
        out: list[torch.Tensor | None],
        fresh: list[torch.Tensor],
        nb: bool,
        pool: StagingPool | None,
    ) -> tuple[int, int, torch.Event | None]:
        tensors = self._tensors
        target = self.target
        entries, total = _layout(tensors, self.staged, self.dtype)
        if target.type == "cpu":
            # Nothing to cross: the gather itself is the one copy, into a fresh buffer
            # the caller owns.
            host = torch.empty(total, dtype=torch.uint8)
            _gather(tensors, entries, host)
            for entry in entries:
                out[entry.index] = entry.view(host)
            return 0, 0, None
        pinned = pins_for(target)
        # Reusing a buffer is safe when the copy from it is tracked by an event
        # (CUDA) or finished before we return (blocking copies). An asynchronous copy
        # elsewhere (MPS, XPU) cannot be tracked here, so it gets a fresh buffer.
        lender = pool if pool is not None else default_pool()
        slot = lender.acquire(total, pinned=pinned) if pinned or not nb else None
        host = slot.buffer[:total] if slot is not None else torch.empty(total, dtype=torch.uint8)
        event: torch.Event | None = None
        try:
            _gather(tensors, entries, host)
            copies = 0
            if self.packed:
                dev = torch.empty(total, dtype=torch.uint8, device=target)
                if total:
                    dev.copy_(host, non_blocking=nb)
                    copies = 1
                fresh.append(dev)
                for entry in entries:
                    out[entry.index] = entry.view(dev)
                nbytes = total  # the whole buffer crosses, alignment padding included
            else:
                nbytes = 0
                for entry in entries:
                    dst = torch.empty(entry.shape, dtype=entry.dtype, device=target)
                    if entry.nbytes:
                        dst.copy_(entry.view(host), non_blocking=nb)
                        copies += 1
                        nbytes += entry.nbytes
                    fresh.append(dst)
                    out[entry.index] = dst
            if pinned and nb:
                event = new_event()
                event.record(current_stream(target))
        finally:
            if slot is not None:
                lender.release(slot, event)
        return nbytes, copies, event


def plan_copy(
    tensors: Sequence[torch.Tensor],
    target: torch.device,
    *,
    dtype: torch.dtype | None = None,
    pack: bool | None = None,
    stage_pageable: bool = False,
) -> CopyPlan:
    """Decide, once, how each tensor reaches ``target``. Never synchronizes.

    Args:
        tensors: The tensors; a tensor object given twice is copied once.
        target: A device as :func:`~torchport.hardware.parse_device` returns it.
        dtype: Cast floating tensors to this dtype in the same copy.
        pack: ``True`` stages every stageable host tensor into one buffer and one
            copy; ``None`` does so where :func:`should_pack` says it pays;
            ``False`` never packs.
        stage_pageable: Unpacked, still stage pageable host tensors bound for CUDA
            through pinned memory so their copies are asynchronous (the loader's
            choice; ``to_device`` leaves them to CUDA's own staging).
    """
    first: list[int] = []
    seen: dict[int, int] = {}
    stay: list[int] = []
    direct: list[int] = []
    candidates: list[int] = []
    for i, t in enumerate(tensors):
        j = seen.setdefault(id(t), i)
        first.append(j)
        if j != i:
            continue
        if _same_device(t.device, target) and _cast(t, dtype) is None:
            stay.append(i)
        elif stageable(t, dtype):
            candidates.append(i)
        else:
            direct.append(i)
    packed = False
    staged: list[int] = []
    if candidates:
        if pack is True:
            packed = True
        elif pack is None and len(candidates) >= PACK_MIN_COUNT:
            packed = should_pack([tensors[i] for i in candidates], target)
        if packed:
            staged = candidates
        elif stage_pageable and pins_for(target):
            staged = [i for i in candidates if not tensors[i].is_pinned()]
            direct += [i for i in candidates if tensors[i].is_pinned()]
        else:
            direct += candidates
    return CopyPlan(tensors, target, dtype, first, stay, direct, staged, packed)


def copy_tensors(
    tensors: Sequence[torch.Tensor],
    target: torch.device,
    *,
    non_blocking: bool | None = None,
    dtype: torch.dtype | None = None,
    pack: bool | None = None,
    pool: StagingPool | None = None,
) -> Transfer:
    """Plan and run in one call; see :func:`plan_copy` and :meth:`CopyPlan.run`.

    Synchronization: as :meth:`CopyPlan.run` says for ``non_blocking``.
    """
    return plan_copy(tensors, target, dtype=dtype, pack=pack).run(
        non_blocking=non_blocking, pool=pool
    )


def _layout(
    tensors: Sequence[torch.Tensor], staged: Sequence[int], dtype: torch.dtype | None
) -> tuple[list[_Entry], int]:
    """Assigns aligned offsets; the total is exact (no padding after the last byte)."""
    entries: list[_Entry] = []
    end = 0
    for i in staged:
        t = tensors[i]
        dt = _cast(t, dtype) or t.dtype
        nbytes = t.numel() * dt.itemsize
        # Empty tensors take no room: a zero-length slice anywhere views back fine.
        offset = -(-end // ALIGN) * ALIGN if nbytes else 0
        entries.append(_Entry(i, offset, nbytes, t.shape, dt))
        end = max(end, offset + nbytes)
    return entries, end


def _gather(tensors: Sequence[torch.Tensor], entries: list[_Entry], host: torch.Tensor) -> None:
    """Writes each source into its place; one pass casts, makes contiguous, resolves conj/neg."""
    for entry in entries:
        if entry.nbytes:
            entry.view(host).copy_(tensors[entry.index])
