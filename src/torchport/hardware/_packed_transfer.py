"""Staged copies: many host tensors written into one buffer, sent in one copy, split on arrival.

Each host->device copy has a fixed cost (a driver call, a DMA descriptor:
several microseconds on PCIe) that dwarfs the transfer time of a small tensor,
so many small tensors bound for CUDA are packed: laid out in one host staging
buffer (pinned, from a :class:`StagingPool`) and moved with one copy.
:mod:`torchport.hardware._copy` decides which tensors come here; this module
lays them out and sends them.

A packed result must behave as the tensor ``.to`` would give: its own storage
(``r[0].resize_(100); r[0].fill_(7)`` must not reach ``r[1]``, and
``torch.save(r[0])`` must not write the whole batch) and the same strides
(``channels_last`` and transposed layouts are kept, as ``.to`` keeps those of
dense tensors). So each tensor is written into the staging buffer in the layout
``.to`` would give it, and on arrival the device buffer is split into one
allocation per tensor; the packed device buffer is temporary.

The host cost per tensor is what limits a packed copy (the bytes of a thousand
small tensors cross in a fraction of a millisecond), so the common case, a
contiguous tensor of a 1-, 2-, 4- or 8-byte dtype, goes in batches of one dtype:
one ``torch.cat`` of their flat views writes them all into the group's stretch
of the staging buffer (casting on the way); on the device each tensor is viewed
in the same-width integer dtype and one out-of-place ``torch._foreach_add(views,
0)`` allocates every result and copies into it in one fused kernel on CUDA.
Integer addition of 0 is the identity on every bit pattern, so floats keep NaN
payloads and signed zeros; each result is then viewed back as its dtype (float32
and float64 skip the round trip where ``torch._foreach_clamp_min(views, -inf)`` is
measured bit-exact, see ``_CLAMP_EXACT_DEVICES``). Other
tensors (non-contiguous, complex128, empty) take the general path: a slot each
at a 64-byte aligned offset, one ``torch._foreach_copy_`` into fresh allocations.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import torch
from torch._C._nn import unflatten_dense_tensors

from torchport._device_types import CPU, CUDA, META
from torchport.hardware._pinned import pins_for
from torchport.hardware._staging_pool import StagingPool, default_pool
from torchport.hardware._sync import current_stream, new_event
from torchport.hardware._torch_features import dtypes_named

__all__ = [
    "ALIGN",
    "PACK_MAX_MEAN_BYTES",
    "PACK_MAX_TOTAL_BYTES",
    "PACK_MIN_COUNT",
    "cast_of",
    "run_staged",
    "same_device",
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
# measured 9-14x slower per tensor there, benchmarks/RESULTS.md), and MPS/XPU are not
# measured yet.
PACK_MIN_COUNT = 4
PACK_MAX_MEAN_BYTES = 256 * 1024
PACK_MAX_TOTAL_BYTES = 64 * 1024 * 1024

# Dtypes whose bytes can be copied into a uint8 buffer and viewed back. Quantized,
# sub-byte (uint1..7, float4) and bit types are moved one by one instead.
_PACKABLE_DTYPES: frozenset[torch.dtype] = dtypes_named(
    (
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
)


def cast_of(t: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype | None:
    """The dtype ``t`` is cast to, or None: ``dtype`` applies to floating tensors only."""
    return dtype if dtype is not None and t.is_floating_point() and t.dtype != dtype else None


def same_device(a: torch.device, b: torch.device) -> bool:
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
class _Entry:
    """Where one staged tensor lives in the staging buffer, and in which layout."""

    index: int
    offset: int
    nbytes: int
    shape: torch.Size
    stride: tuple[int, ...]
    dtype: torch.dtype

    def view(self, buffer: torch.Tensor) -> torch.Tensor:
        """The tensor this entry holds in ``buffer`` (a byte buffer from its offset on)."""
        raw = buffer[self.offset : self.offset + self.nbytes]
        return raw.view(self.dtype).as_strided(self.shape, self.stride)

    def alone(self, device: torch.device) -> torch.Tensor:
        """A fresh tensor of this entry's shape, strides and dtype, in storage of its own."""
        return torch.empty_strided(self.shape, self.stride, dtype=self.dtype, device=device)


def strides_after_to(t: torch.Tensor, dtype: torch.dtype) -> tuple[int, ...]:
    """The strides ``t.to(device, dtype)`` gives: ``t``'s own for a dense tensor, else contiguous.

    Asked of the meta device, which computes the layout without memory, once per
    (shape, strides, dtype): a loader's batches repeat their layouts.
    """
    if t.is_contiguous():
        return tuple(t.stride())  # dense: .to keeps the strides as they are
    return _meta_strides(tuple(t.shape), tuple(t.stride()), dtype)


@lru_cache(maxsize=1024)
def _meta_strides(
    shape: tuple[int, ...], stride: tuple[int, ...], dtype: torch.dtype
) -> tuple[int, ...]:
    like = torch.empty_strided(shape, stride, dtype=dtype, device=META)
    return tuple(torch.empty_like(like).stride())


# The integer dtype of each width that a group is split through on the device.
_SAME_WIDTH_INT: dict[int, torch.dtype] = {
    1: torch.uint8,
    2: torch.int16,
    4: torch.int32,
    8: torch.int64,
}


@lru_cache(maxsize=4096)
def _row_major(shape: torch.Size) -> tuple[tuple[int, ...], int]:
    """The strides torch gives a fresh contiguous tensor of ``shape``, and its element count."""
    strides: list[int] = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides)), step if all(shape) else 0


# Where ``torch._foreach_clamp_min(views, -inf)`` gives back every bit of a float32 or
# float64 view, NaN payloads and signed zeros too: the kernel returns its input itself
# when that is NaN or above the bound (-0.0 > -inf), and -inf for -inf, so the results
# come out in the float dtype with no Python ``view`` per tensor (0.7 us each on the
# H200's host). Measured bit for bit on random patterns (benchmarks/bench_gpu_pack_phases.py):
# CUDA on the H200 and the CPU. float16 and bfloat16 pass through float32 arithmetic,
# which quiets NaNs, so they keep the integer path, as do the devices not measured (MPS,
# XPU, out-of-tree backends and the simulated accelerator, whose end-to-end pack test
# therefore checks the integer path; tests/hardware/test_packed_groups.py checks this one
# on the CPU, tests/feed/test_cuda.py on CUDA).
_CLAMP_EXACT_DEVICES = frozenset({CPU, CUDA})
_CLAMP_EXACT_DTYPES = frozenset({torch.float32, torch.float64})
_MINUS_INF = float("-inf")


@dataclass(slots=True)
class _Group:
    """Contiguous tensors of one dtype staged in one dtype, back to back from ``offset``."""

    dtype: torch.dtype
    flat_only: bool  # every tensor 1-d: split on the device with no reshaping
    offset: int = 0
    indices: list[int] = field(default_factory=list)
    sources: list[torch.Tensor] = field(default_factory=list)
    flat: list[torch.Tensor] = field(default_factory=list)  # the sources as 1-d views
    numels: list[int] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return sum(self.numels) * self.dtype.itemsize


def run_staged(
    tensors: Sequence[torch.Tensor],
    staged: Sequence[int],
    target: torch.device,
    dtype: torch.dtype | None,
    *,
    packed: bool,
    nb: bool,
    pool: StagingPool | None,
    out: list[torch.Tensor],
    fresh: list[torch.Tensor],
) -> tuple[int, int, torch.Event | None]:
    """Write ``tensors[i]`` for ``i`` in ``staged`` into one host buffer and copy it over.

    Fills ``out`` at those positions and appends the device allocations to
    ``fresh``; returns (bytes crossed, copies issued, the event recorded after
    asynchronous copies from pinned memory). Packed, the buffer crosses in one
    copy and is split on the device into one allocation per tensor; unpacked,
    each tensor gets its own allocation and copy from the (pinned) buffer. Either
    way every result has a storage of its own and the strides ``.to`` would give.
    The host waits on an earlier copy's event only when the staging slot it needs
    is still read.
    """
    # Batched where the device's foreach kernels are compiled: meta's are Python meta
    # functions, one per tensor, dearer than the general path's single call.
    batched = packed and target.type != CPU and target.type != META
    groups, entries, total = _layout(tensors, staged, dtype, batched=batched)
    if target.type == CPU:
        # Nothing to cross: each tensor is copied into a fresh tensor of its own.
        for entry in entries:
            result = entry.alone(target)
            result.copy_(_readable(tensors[entry.index], entry.dtype))
            out[entry.index] = result
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
        _gather_groups(groups, host)
        _gather(tensors, entries, host)
        copies = 0
        if packed:
            if total:
                dev = torch.empty(total, dtype=torch.uint8, device=target)
                dev.copy_(host, non_blocking=nb)
                copies = 1
                _split_groups(dev, groups, out, fresh)
                _split(dev, entries, target, out, fresh)
            else:
                for entry in entries:
                    out[entry.index] = result = entry.alone(target)
                    fresh.append(result)
            nbytes = total  # the whole buffer crosses, alignment padding included
        else:
            nbytes = 0
            for entry in entries:
                dst = entry.alone(target)
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
            if pool is None:
                # The process-wide pool has no pass that ends (a loader trims its own
                # pool then): free slots it parked when a batch outgrew them. Growth is
                # geometric, so this unpins a few times in a run, not per batch.
                lender.trim()
    return nbytes, copies, event


def _split(
    dev: torch.Tensor,
    entries: list[_Entry],
    target: torch.device,
    out: list[torch.Tensor],
    fresh: list[torch.Tensor],
) -> None:
    """Copy each entry out of the packed device buffer into an allocation of its own.

    One ``torch._foreach_copy_`` over byte views: one fused kernel on CUDA (a
    launch or two per hundred tensors), queued on the current stream after the
    packed copy, so the packed buffer may be freed as soon as this returns.
    """
    pieces: list[torch.Tensor] = []
    sources: list[torch.Tensor] = []
    for entry in entries:
        result = entry.alone(target)
        out[entry.index] = result
        fresh.append(result)
        if entry.nbytes:
            pieces.append(_bytes_of(result))
            sources.append(dev[entry.offset : entry.offset + entry.nbytes])
    if pieces:
        torch._foreach_copy_(pieces, sources)


def _bytes_of(t: torch.Tensor) -> torch.Tensor:
    """A fresh dense tensor's storage as a flat byte tensor (a view, no copy)."""
    # A view of the whole storage in elements, then in bytes: no new tensor is pointed at
    # the storage (``set_``), which a device whose tensors wrap another's refuses.
    elements = t.untyped_storage().nbytes() // t.element_size()
    return t.as_strided((elements,), (1,), 0).view(torch.uint8)


def _layout(
    tensors: Sequence[torch.Tensor],
    staged: Sequence[int],
    dtype: torch.dtype | None,
    *,
    batched: bool,
) -> tuple[list[_Group], list[_Entry], int]:
    """Assigns offsets: groups first, then one aligned slot per other tensor.

    With ``batched``, non-empty tensors of a 1-, 2-, 4- or 8-byte (target) dtype
    whose strides are exactly those of a fresh contiguous tensor (so ``.to``, a view
    of a flat buffer and any allocating op all give those strides back) are grouped
    by their own dtype, that dtype and whether they are 1-d; a group starts at an
    aligned offset and holds its tensors back to back in row-major order. The total
    is exact (no padding after the last byte).
    """
    # Keyed by (source dtype, staged dtype, 1-d): ``cat`` promotes mixed inputs (float8 not
    # at all), and 1-d tensors are split on the device without views of their shape.
    groups: dict[tuple[torch.dtype, torch.dtype, bool], _Group] = {}
    rest: list[int] = []
    for i in staged:
        t = tensors[i]
        dt = source = t.dtype
        src = t
        if dtype is not None and dt != dtype and dt.is_floating_point:
            dt = dtype
            if t.is_neg():
                src = t.resolve_neg()  # see _readable
        if batched and dt.itemsize in _SAME_WIDTH_INT:
            shape = t.shape
            strides, n = _row_major(shape)
            if n and t.stride() == strides:
                flat_only = len(shape) == 1
                group = groups.get((source, dt, flat_only))
                if group is None:
                    group = groups[source, dt, flat_only] = _Group(dt, flat_only)
                group.indices.append(i)
                group.sources.append(src)
                group.flat.append(src if flat_only else src.view(-1))
                group.numels.append(n)
                continue
        rest.append(i)
    end = 0
    for group in groups.values():
        group.offset = -(-end // ALIGN) * ALIGN
        end = group.offset + group.nbytes
    entries: list[_Entry] = []
    for i in rest:
        t = tensors[i]
        dt = cast_of(t, dtype) or t.dtype
        nbytes = t.numel() * dt.itemsize
        # Empty tensors take no room: a zero-length slice anywhere views back fine.
        offset = -(-end // ALIGN) * ALIGN if nbytes else 0
        entries.append(_Entry(i, offset, nbytes, t.shape, strides_after_to(t, dt), dt))
        end = max(end, offset + nbytes)
    return list(groups.values()), entries, end


def _gather_groups(groups: list[_Group], host: torch.Tensor) -> None:
    """Writes each group with one ``torch.cat`` of its tensors' flat views into the buffer.

    ``cat`` casts as ``copy_`` does and resolves lazy conjugates and negative views
    (a negative view that is cast was resolved by :func:`_layout`, see :func:`_readable`).
    """
    for group in groups:
        region = host[group.offset : group.offset + group.nbytes].view(group.dtype)
        torch.cat(group.flat, out=region)


def _split_groups(
    dev: torch.Tensor, groups: list[_Group], out: list[torch.Tensor], fresh: list[torch.Tensor]
) -> None:
    """Copy each group's tensors out of the packed device buffer, each into its own allocation.

    Each tensor is viewed (row-major, as ``.to`` gives it) in the integer dtype of
    its width, all with one ``unflatten_dense_tensors`` (``split_with_sizes`` for a
    1-d group); ``torch._foreach_add(views, 0)`` allocates one contiguous result per
    view and fills it, bit for bit, in one fused kernel on CUDA; a float result is
    then viewed back as its dtype. A float32 or float64 group on a device where
    clamping is exact is viewed in its own dtype and copied by
    ``torch._foreach_clamp_min(views, -inf)`` instead (see ``_CLAMP_EXACT_DEVICES``).
    """
    clamp_exact = dev.device.type in _CLAMP_EXACT_DEVICES
    for group in groups:
        clamped = clamp_exact and group.dtype in _CLAMP_EXACT_DTYPES
        as_int = group.dtype if clamped else _SAME_WIDTH_INT[group.dtype.itemsize]
        region = dev[group.offset : group.offset + group.nbytes].view(as_int)
        if group.flat_only:
            views = list(region.split_with_sizes(group.numels))
        else:
            views = unflatten_dense_tensors(region, group.sources)
        moved: list[torch.Tensor]
        if clamped:
            moved = list(torch._foreach_clamp_min(views, _MINUS_INF))
        else:
            moved = list(torch._foreach_add(views, 0))
            if as_int != group.dtype:
                moved = [m.view(group.dtype) for m in moved]
        deque(map(out.__setitem__, group.indices, moved), maxlen=0)
        fresh.extend(moved)


def _gather(tensors: Sequence[torch.Tensor], entries: list[_Entry], host: torch.Tensor) -> None:
    """Writes each source into its place; one pass casts, makes contiguous, resolves conj/neg."""
    for entry in entries:
        if entry.nbytes:
            entry.view(host).copy_(_readable(tensors[entry.index], entry.dtype))


def _readable(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t`` as a ``copy_`` into ``dtype`` reads it right: a negative view resolved for a cast.

    torch's CPU ``copy_`` between float16 and float32 drops the sign bit of a
    negative view (``torch._neg_view``, ``z.conj().imag``: the values come out
    negated), and into a float8 dtype it raises; ``Tensor.to`` resolves it first.
    """
    return t.resolve_neg() if dtype != t.dtype and t.is_neg() else t
