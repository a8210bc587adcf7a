"""Suite ``batch``: moving one nested training batch host-to-device, against raw pinned copies.

Strategies, for a 256 MiB (64 MiB with ``--quick``) nested batch in pinned
memory (what ``DataLoader(pin_memory=True)`` hands over): ``torchport.to_device``
with its defaults; accelerate ``send_to_device(non_blocking=True)``; Lightning's
``move_data_to_device`` (or lightning-utilities' equivalent, the row says which);
and the ceiling, raw ``copy_(non_blocking=True)`` of each leaf into preallocated
device tensors. Each is reported as a share of the raw copies' bandwidth in the
same run. Timed on the host between synchronizations.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchport._device_types import CUDA
from torchport._sizes import format_bytes
from torchport.bench._competitors import (
    accelerate_send,
    lightning_move,
    torchport_to_device,
)
from torchport.bench._model import Check, Row, SuiteResult
from torchport.bench._random_inputs import (
    MIB,
    batch_bytes,
    misplaced,
    nested_batch,
    tensor_leaves,
)
from torchport.bench._timing import rotating, time_interleaved

BATCH_BYTES = 256 * MIB
QUICK_BATCH_BYTES = 64 * MIB
RAW = "raw pinned copy_ per leaf"
# Issue target: to_device reaches at least 90% of raw pinned-copy bandwidth,
# i.e. takes at most 1/0.9 of the raw copies' time.
SHARE_TARGET = 0.9


def batch_transfer(
    device: torch.device, *, quick: bool = False, on_case: Callable[[str], None] | None = None
) -> SuiteResult:
    """Measure each mover on one nested pinned batch on ``device``.

    Needs a CUDA (or ROCm) device. Every sample synchronizes the host with it.
    """
    size = QUICK_BATCH_BYTES if quick else BATCH_BYTES
    if on_case is not None:
        on_case(f"nested batch {format_bytes(size)}")
    # pinned wherever pinning exists; the CPU run only exercises the code (tests)
    batches = [nested_batch(size, pin=device.type == CUDA) for _ in range(2)]
    sources = [tensor_leaves(batch) for batch in batches]
    targets = [[torch.empty_like(t, device=device) for t in leaves] for leaves in sources]

    def raw(i: int) -> object:
        for dst, src in zip(targets[i % 2], sources[i % 2], strict=True):
            dst.copy_(src, non_blocking=True)
        return targets[i % 2]

    strategies = [
        torchport_to_device(device),
        accelerate_send(device, non_blocking=True),
        lightning_move(device),
    ]
    runnable: dict[str, Callable[[int], object]] = {RAW: raw}
    for strategy in strategies:
        if strategy.run is not None:
            runnable[strategy.label] = rotating(strategy.run, batches)
    stats = time_interleaved(runnable, device, warmup=2, repeats=5 if quick else 15)
    total = batch_bytes(batches[0])
    case = f"nested {format_bytes(total)}"
    raw_median = stats[RAW].median
    rows = []
    checks = []
    for label in [RAW, *(s.label for s in strategies)]:
        got = stats.get(label)
        if got is None:
            missing = next(s.missing for s in strategies if s.label == label)
            rows.append(Row(case, label, status=missing or "unavailable"))
            continue
        wrong = misplaced(runnable[label](0), device, len(sources[0]))
        if wrong is not None:
            rows.append(Row(case, label, status=wrong))
            continue
        metrics = {
            "gb_per_s": total / got.median / 1e9,
            "share_of_raw": raw_median / got.median * 100,
        }
        rows.append(Row(case, label, got, metrics))
        if label == strategies[0].label:
            name = f"{label} time / raw pinned copies (>= 90% of raw bandwidth), {case}"
            checks.append(Check(name, got.median / raw_median, 1 / SHARE_TARGET))
    leaves = len(sources[0])
    notes = (f"{leaves} tensor leaves plus non-tensor metadata; sources pinned; host wall time",)
    return SuiteResult("batch", tuple(rows), tuple(checks), notes=notes)
