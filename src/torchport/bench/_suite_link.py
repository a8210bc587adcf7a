"""Suite ``link``: host<->device copy bandwidth by size and memory kind; small-copy latency.

Strategies: host-to-device and device-to-host ``Tensor.copy_``, from or into
pinned (page-locked) and pageable host memory, 4 KiB to 1 GiB (4 KiB to 64 MiB
with ``--quick``), timed with device events. Latency: a 4-byte copy each way
plus ``.item()``, timed on the host between synchronizations, since that is
what a caller waits. Nothing here is a default; the numbers are the link limit
the other suites are measured against.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchport._sizes import format_bytes
from torchport.bench._model import Row, SuiteResult
from torchport.bench._random_inputs import GIB, KIB, MIB, random_tensor
from torchport.bench._timing import time_interleaved

SIZES = (*(4 * KIB * 4**k for k in range(9)), GIB)
QUICK_SIZES = (4 * KIB, 64 * KIB, MIB, 16 * MIB, 64 * MIB)
LATENCY_BYTES = 4


def _bandwidth_rows(device: torch.device, size: int, *, quick: bool) -> list[Row]:
    # two buffers of each kind, alternated, so no copy reads what the last one read
    pinned = [random_tensor(size, pin=True) for _ in range(2)]
    pageable = [random_tensor(size) for _ in range(2)]
    on_device = [random_tensor(size).to(device) for _ in range(2)]
    pinned_out = [torch.empty_like(t, pin_memory=True) for t in pinned]
    pageable_out = [torch.empty_like(t) for t in pageable]
    copies: dict[str, Callable[[int], object]] = {
        "h2d pinned": lambda i: on_device[i % 2].copy_(pinned[i % 2], non_blocking=True),
        "h2d pageable": lambda i: on_device[i % 2].copy_(pageable[i % 2], non_blocking=True),
        "d2h pinned": lambda i: pinned_out[i % 2].copy_(on_device[i % 2], non_blocking=True),
        "d2h pageable": lambda i: pageable_out[i % 2].copy_(on_device[i % 2]),
    }
    if size >= 256 * MIB:
        repeats = 5
    elif size >= 16 * MIB:
        repeats = 7 if quick else 11
    else:
        repeats = 15 if quick else 41
    stats = time_interleaved(copies, device, warmup=2, repeats=repeats, events=True)
    return [
        Row(
            format_bytes(size),
            name,
            got,
            {"bytes": float(size), "gb_per_s": size / got.median / 1e9},
        )
        for name, got in stats.items()
    ]


def _latency_rows(device: torch.device, *, quick: bool) -> list[Row]:
    host = [random_tensor(LATENCY_BYTES, pin=True) for _ in range(2)]
    on_device = [random_tensor(LATENCY_BYTES).to(device) for _ in range(2)]
    host_out = [torch.empty_like(t, pin_memory=True) for t in host]
    calls: dict[str, Callable[[int], object]] = {
        "h2d pinned copy + sync": lambda i: on_device[i % 2].copy_(host[i % 2], non_blocking=True),
        "d2h pinned copy + sync": lambda i: host_out[i % 2].copy_(
            on_device[i % 2], non_blocking=True
        ),
        "d2h .item()": lambda i: on_device[i % 2].item(),
    }
    stats = time_interleaved(calls, device, warmup=5, repeats=51 if quick else 201)
    case = f"latency {LATENCY_BYTES} B"
    return [Row(case, name, got) for name, got in stats.items()]


def link_bandwidth(
    device: torch.device, *, quick: bool = False, on_case: Callable[[str], None] | None = None
) -> SuiteResult:
    """Measure copy bandwidth at each size and the small-copy latency on ``device``.

    Needs a CUDA (or ROCm) device. Every sample synchronizes the host with it.
    """
    rows: list[Row] = []
    for size in QUICK_SIZES if quick else SIZES:
        if on_case is not None:
            on_case(f"bandwidth {format_bytes(size)}")
        rows.extend(_bandwidth_rows(device, size, quick=quick))
    if on_case is not None:
        on_case("latency")
    rows.extend(_latency_rows(device, quick=quick))
    notes = []
    for strategy in ("h2d pinned", "h2d pageable", "d2h pinned", "d2h pageable"):
        series = [row for row in rows if row.strategy == strategy]
        best = max(series, key=lambda row: row.metrics["gb_per_s"])
        notes.append(f"peak {strategy}: {best.metrics['gb_per_s']:.1f} GB/s at {best.case}")
    notes.append("bandwidth from device events; latency is host wall time including the sync")
    return SuiteResult("link", tuple(rows), notes=tuple(notes))
