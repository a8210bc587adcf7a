"""Suite ``pack``: moving many small tensors, one copy each versus one packed copy.

Strategies, for N pageable CPU tensors of one size (64 B to 1 MiB): one
``.to(device)`` per tensor (what most code does); ``torchport.to_device`` with
``pack=True`` (pinned staging buffer, one copy, device views) and with the
default ``pack=None`` (packs automatically by count and size); and tensordict's
``TensorDict(...).consolidate().to(device)``. Timed on the host between
synchronizations, so host-side packing cost counts.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchport._sizes import format_bytes
from torchport.bench._competitors import Strategy, tensordict_consolidate, torchport_to_device
from torchport.bench._model import Check, Row, SuiteResult
from torchport.bench._random_inputs import KIB, MIB, random_tensor
from torchport.bench._timing import rotating, time_interleaved

SIZES = (64, KIB, 4 * KIB, 64 * KIB, MIB)
QUICK_SIZES = (64, 4 * KIB, 64 * KIB)
MAX_COUNT = 1000
# Issue target: 1000 x 4 KiB packed at least 10x faster than one .to() each.
PACK_TARGET_SIZE = 4 * KIB
PACK_TARGET = 0.1


def _count(size: int, *, quick: bool) -> int:
    budget = (32 if quick else 256) * MIB
    return max(1, min(MAX_COUNT, budget // size))


def _measure_size(device: torch.device, size: int, *, quick: bool) -> tuple[list[Row], list[Check]]:
    count = _count(size, quick=quick)
    lists = [[random_tensor(size) for _ in range(count)] for _ in range(2)]
    dicts = [{f"t{i}": t for i, t in enumerate(tensors)} for tensors in lists]

    def per_tensor(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        return [t.to(device) for t in tensors]

    strategies = [
        Strategy("one .to() per tensor", per_tensor),
        torchport_to_device(device, pack=True),
        torchport_to_device(device),
        tensordict_consolidate(device),
    ]
    runnable: dict[str, Callable[[int], object]] = {}
    for strategy in strategies:
        if strategy.run is None:
            continue
        inputs = dicts if strategy.label.startswith("tensordict") else lists
        runnable[strategy.label] = rotating(strategy.run, inputs)
    repeats = (5 if quick else 15) if size >= 64 * KIB else (9 if quick else 25)
    stats = time_interleaved(runnable, device, warmup=2, repeats=repeats)
    total = count * size
    case = f"{count}x{format_bytes(size)}"
    base = stats[strategies[0].label].median
    rows = []
    checks = []
    for strategy in strategies:
        got = stats.get(strategy.label)
        if got is None:
            rows.append(Row(case, strategy.label, status=strategy.missing or "unavailable"))
            continue
        metrics = {
            "bytes": float(total),
            "gb_per_s": total / got.median / 1e9,
            "vs_per_tensor": got.median / base,
        }
        rows.append(Row(case, strategy.label, got, metrics))
        if strategy is strategies[1] and size == PACK_TARGET_SIZE and count == MAX_COUNT:
            name = f"to_device(pack=True) / one .to() per tensor, {case}"
            checks.append(Check(name, metrics["vs_per_tensor"], PACK_TARGET))
    return rows, checks


def pack_small_tensors(
    device: torch.device, *, quick: bool = False, on_case: Callable[[str], None] | None = None
) -> SuiteResult:
    """Measure each strategy at each tensor size on ``device``.

    Needs a CUDA (or ROCm) device. Every sample synchronizes the host with it.
    """
    rows: list[Row] = []
    checks: list[Check] = []
    for size in QUICK_SIZES if quick else SIZES:
        if on_case is not None:
            on_case(f"{_count(size, quick=quick)}x{format_bytes(size)}")
        size_rows, size_checks = _measure_size(device, size, quick=quick)
        rows.extend(size_rows)
        checks.extend(size_checks)
    notes = ("sources are pageable CPU tensors; x per-tensor < 1 is faster",)
    return SuiteResult("pack", tuple(rows), tuple(checks), notes=notes)
