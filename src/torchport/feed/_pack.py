"""Packed host-to-device copies: many tensors staged in one buffer, one copy, views out.

Each host->device copy has a fixed cost (a driver call, a DMA descriptor: several
microseconds on PCIe) that dwarfs the transfer time of a small tensor. A batch of
many small tensors is therefore laid out in one host staging buffer, moved with one
copy, and handed back as views of the one device buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from torchport.feed._staging import StagingPool, default_pool

__all__ = ["StagingPool", "pack_to_device", "should_pack"]

# Offsets into the packed buffer are multiples of 64 bytes. That is a multiple of
# every element size (complex128 is the widest at 16), so each slice can be viewed
# back as its dtype; it meets the 16-byte alignment that vectorized CUDA kernels
# check before taking their fast path; and it keeps two tensors off one CPU cache
# line while the host writes them. 256 would waste up to 255 bytes per tensor, which
# for a batch of a thousand tiny tensors is a quarter of a megabyte for nothing.
_ALIGN = 64

# should_pack thresholds. One cudaMemcpyAsync costs about 5-10 us of fixed overhead;
# PCIe 4.0 x16 moves about 25 GB/s, so 10 us is ~256 KiB of payload. Below that mean
# size the per-copy overhead dominates and packing wins; above it the extra host
# memcpy into the staging buffer costs more than the launches it saves. Packing has
# its own fixed cost (pool lease, one device allocation, one event, Python layout
# work) of a few launches, hence a minimum count. Past 64 MiB in total the host
# gather is long enough to stall the producer, and the pinned slot it needs is held
# for good, so large batches go per tensor. These are estimates from the link
# figures above; `torchport bench` measures the crossover on a real machine.
_PACK_MIN_COUNT = 4
_PACK_MAX_MEAN_BYTES = 256 * 1024
_PACK_MAX_TOTAL_BYTES = 64 * 1024 * 1024

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


def _target_dtype(t: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype:
    """``dtype`` casts floating tensors only (integers, bools, complex keep theirs)."""
    return dtype if dtype is not None and t.is_floating_point() else t.dtype


def _packable(t: torch.Tensor, dtype: torch.dtype | None) -> bool:
    """Whether ``t`` can go through a host staging buffer without changing meaning.

    Tensors that require grad keep their autograd edge through ``Tensor.to``;
    subclasses (Parameter, FakeTensor, DTensor...) keep their own ``to``.
    """
    return (
        type(t) is torch.Tensor
        and t.device.type == "cpu"
        and t.layout == torch.strided
        and not t.requires_grad
        and not t.is_nested
        and t.dtype in _PACKABLE_DTYPES
        and _target_dtype(t, dtype) in _PACKABLE_DTYPES
    )


def _resolve(device: torch.device | str) -> torch.device:
    """Gives a bare ``cuda`` the current index, so ``t.device == device`` tests hold."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return device


def _pinned_target(device: torch.device) -> bool:
    """Staging is pinned only where a DMA engine reads it asynchronously: CUDA (and ROCm)."""
    return device.type == "cuda" and torch.cuda.is_available()


def should_pack(tensors: Sequence[torch.Tensor], device: torch.device | str) -> bool:
    """The ``pack=None`` heuristic: many small host tensors bound for another device.

    True when at least 4 tensors can be staged, their mean size is at most 256 KiB and
    their total at most 64 MiB (see the module constants for why), and the target is
    not the CPU (a CPU target needs no copy at all). Never synchronizes.
    """
    device = torch.device(device)
    if device.type == "cpu":
        return False
    sizes = [t.numel() * t.element_size() for t in tensors if _packable(t, None)]
    if len(sizes) < _PACK_MIN_COUNT:
        return False
    total = sum(sizes)
    return total <= _PACK_MAX_TOTAL_BYTES and total <= _PACK_MAX_MEAN_BYTES * len(sizes)


@dataclass(frozen=True, slots=True)
class _Entry:
    """Where one staged tensor lives in the packed buffer."""

    offset: int
    nbytes: int
    shape: torch.Size
    dtype: torch.dtype

    def view(self, buffer: torch.Tensor) -> torch.Tensor:
        raw = buffer[self.offset : self.offset + self.nbytes]
        return raw.view(self.dtype).view(self.shape)


@dataclass(frozen=True, slots=True)
class Transfer:
    """The outcome of :func:`transfer`.

    Attributes:
        tensors: the moved tensors, in input order.
        nbytes: bytes that crossed to the device (0 when nothing had to move).
        copies: how many copy calls were issued.
        event: recorded on the current CUDA stream after the copies, when they are
            asynchronous; ``None`` otherwise.
    """

    tensors: list[torch.Tensor]
    nbytes: int
    copies: int
    event: torch.cuda.Event | None


def _layout(
    tensors: Sequence[torch.Tensor], staged: Sequence[int], dtype: torch.dtype | None
) -> tuple[dict[int, _Entry], int]:
    """Assigns aligned offsets; the total is exact (no padding after the last byte)."""
    entries: dict[int, _Entry] = {}
    end = 0
    for i in staged:
        t = tensors[i]
        dt = _target_dtype(t, dtype)
        nbytes = t.numel() * dt.itemsize
        # Empty tensors take no room: a zero-length slice anywhere views back fine.
        offset = -(-end // _ALIGN) * _ALIGN if nbytes else 0
        entries[i] = _Entry(offset, nbytes, t.shape, dt)
        end = max(end, offset + nbytes)
    return entries, end


def _gather(
    tensors: Sequence[torch.Tensor], entries: dict[int, _Entry], host: torch.Tensor
) -> None:
    """Writes each source into its place; one pass casts, makes contiguous, resolves conj/neg."""
    for i, entry in entries.items():
        if entry.nbytes:
            entry.view(host).copy_(tensors[i])


def _copy_out(
    entries: dict[int, _Entry],
    host: torch.Tensor,
    device: torch.device,
    out: list[torch.Tensor | None],
    non_blocking: bool,
    *,
    packed: bool,
) -> int:
    """Issues the staged bytes' copies to ``device``, fills ``out``; returns the copy count."""
    total = host.numel()
    if packed:
        dev = torch.empty(total, dtype=torch.uint8, device=device)
        if total:
            dev.copy_(host, non_blocking=non_blocking)
        for i, entry in entries.items():
            out[i] = entry.view(dev)
        return 1 if total else 0
    copies = 0
    for i, entry in entries.items():
        dst = torch.empty(entry.shape, dtype=entry.dtype, device=device)
        if entry.nbytes:
            dst.copy_(entry.view(host), non_blocking=non_blocking)
            copies += 1
        out[i] = dst
    return copies


def _new_event() -> torch.cuda.Event:
    """A CUDA event (torch leaves its constructor unannotated)."""
    return cast(Any, torch.cuda).Event()  # type: ignore[no-any-return]


def _sync_after(device: torch.device) -> None:
    """Makes a blocking copy to MPS visibly complete before its views are read."""
    if device.type == "mps":
        torch.mps.synchronize()


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

    With ``packed`` the staging buffer goes over in one copy and the results are views
    of one device buffer. Without it each tensor gets its own device allocation and
    copy; for a CUDA target, pageable sources are still read from the pinned staging
    buffer so the copies can be asynchronous, while already-pinned sources are copied
    directly. Tensors that cannot be staged (on another device, requiring grad,
    subclasses, odd dtypes) are moved with ``Tensor.to``. A tensor object given twice
    is moved once and both positions get the same result.

    Synchronization: see :func:`pack_to_device`.
    """
    device = _resolve(device)
    pinned = _pinned_target(device)
    out: list[torch.Tensor | None] = [None] * len(tensors)
    first: dict[int, int] = {}  # id(tensor) -> first index, so duplicates stay shared
    staged: list[int] = []
    nbytes = 0
    copies = 0
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"tensors[{i}] is a {type(t).__name__}, not a torch.Tensor")
        if id(t) in first:
            continue
        first[id(t)] = i
        # Unpacked, a staging buffer only pays where it turns a pageable source into
        # a pinned one for an asynchronous copy.
        if _packable(t, dtype) and (packed or (pinned and not t.is_pinned())):
            staged.append(i)
            continue
        moved = t.to(device, dtype=_target_dtype(t, dtype), non_blocking=non_blocking)
        if t.device != device and t.numel():
            nbytes += t.numel() * t.element_size()
            copies += 1
        out[i] = moved

    event: torch.cuda.Event | None = None
    entries, total = _layout(tensors, staged, dtype)
    if device.type == "cpu":
        # Nothing to cross: the gather itself is the one copy, into a fresh buffer
        # the caller owns.
        host = torch.empty(total, dtype=torch.uint8)
        _gather(tensors, entries, host)
        for i, entry in entries.items():
            out[i] = entry.view(host)
    elif entries:
        # Reusing a buffer is safe when the copy from it is tracked by an event
        # (CUDA) or finished before we return (blocking copies). An asynchronous copy
        # elsewhere (MPS, XPU) cannot be tracked here, so it gets a fresh buffer.
        slot = None
        lender = pool if pool is not None else default_pool()
        if pinned or not non_blocking:
            slot = lender.acquire(total, pinned=pinned)
            host = slot.buffer[:total]
        else:
            host = torch.empty(total, dtype=torch.uint8)
        try:
            _gather(tensors, entries, host)
            copies += _copy_out(entries, host, device, out, non_blocking, packed=packed)
            # Packed, the whole buffer crosses (alignment padding included).
            nbytes += total if packed else sum(e.nbytes for e in entries.values())
            if pinned and non_blocking:
                event = _new_event()
                event.record(torch.cuda.current_stream(device))
        finally:
            if slot is not None:
                lender.release(slot, event)
    if copies and not non_blocking:
        _sync_after(device)
    result: list[torch.Tensor] = []
    for t, got in zip(tensors, out, strict=True):
        done = got if got is not None else out[first[id(t)]]
        assert done is not None  # every first occurrence was filled above
        result.append(done)
    return Transfer(result, nbytes, copies, event)


def pack_to_device(
    tensors: Sequence[torch.Tensor],
    device: torch.device | str,
    *,
    non_blocking: bool,
    dtype: torch.dtype | None = None,
    pool: StagingPool | None = None,
) -> list[torch.Tensor]:
    """Moves many tensors to ``device`` with one copy; returns views in input order.

    Every host (CPU) tensor that can be staged is written into one host buffer
    (made contiguous, cast to ``dtype`` if it is floating, at 64-byte aligned
    offsets), the buffer crosses in one copy, and each result is a view of the one
    device buffer. Other tensors (on another device, requiring grad, subclasses) are
    moved with ``Tensor.to``. With a CPU target the gather is the only copy and the
    results are views of a fresh host buffer.

    The cast happens on the host during the gather: the gather is a full pass over
    the bytes anyway, so the cast rides along for free, and the usual case (float32
    to bfloat16/float16) halves the bytes over the link and needs no device kernels.

    The views share one storage: it is freed when the last view is, and
    ``torch.save`` on one view writes the whole buffer (``.clone()`` first).

    Args:
        tensors: the tensors to move; any dtypes, shapes and devices.
        device: the one target device for all of them.
        non_blocking: issue an asynchronous copy where the target allows it.
        dtype: cast floating tensors to this dtype; others keep theirs.
        pool: the staging pool; ``None`` uses the process-wide default.

    Synchronization: the host waits on an earlier copy's CUDA event only when the
    staging slot it needs is still being read (see :meth:`StagingPool.acquire`).
    CUDA with ``non_blocking=True``: returns at once; the copy is ordered on the
    current stream, so work queued on that stream sees the data. CUDA with
    ``non_blocking=False``: the host waits for the copy. CPU, MPS and other
    targets: the host waits for the copy before returning, unless
    ``non_blocking=True`` is passed, in which case the caller must synchronize the
    device before reading the results.
    """
    return transfer(
        tensors, device, non_blocking=non_blocking, dtype=dtype, pool=pool, packed=True
    ).tensors
