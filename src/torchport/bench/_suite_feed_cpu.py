"""Suite ``feed-cpu``: what the feed pillar costs where nothing crosses a link.

Two questions, on the CPU, process CPU time (the feed pillar's targets):

* ``DeviceLoader(loader, "cpu")`` over the bare loader, per batch: over a list
  of ready ``(x, y)`` batches (the wrapper's cost alone), over ready dict batches
  that also hold non-tensor leaves (a nested dict with an index and a file name, a
  list of tags, as ``default_collate`` gives them) and over a small-batch ``DataLoader`` (what a
  user sees). Target: at most 5 µs per batch more, 2 µs for the dict batches.
* packing where packing cannot pay: ``to_device(batch, "meta", pack=True)``
  against ``pack=False`` and the default ``pack=None``, per tensor. The default
  must never choose the slower one; it packs only for CUDA targets (see
  ``torchport.hardware.should_pack``), so here it must match ``pack=False``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import torch

from torchport._device_types import CPU, META
from torchport.bench._model import Check, Row, SuiteResult
from torchport.bench._timing import rotating, time_interleaved
from torchport.feed import DeviceLoader
from torchport.place import to_device

LOADER_TARGET_US = 5.0
# Dict batches that also hold non-tensor leaves (issue 33): the common collated batch.
DICT_LOADER_TARGET_US = 2.0
BATCHES = 200
PACK_COUNTS = (8, 64)


def _epoch(loader: Iterable[object]) -> Callable[[int], object]:
    def run(_: int) -> object:
        last = None
        for batch in loader:
            last = batch
        return last

    return run


def loader_rows(*, quick: bool) -> tuple[list[Row], list[Check]]:
    """Per-batch cost of ``DeviceLoader(..., "cpu")`` over the bare loader."""
    from torch.utils.data import DataLoader, TensorDataset

    ready = [(torch.randn(4, 8), torch.randint(0, 4, (4,))) for _ in range(BATCHES)]
    records = [
        {
            "image": torch.randn(4, 8),
            "label": torch.randint(0, 4, (4,)),
            "metadata": {"index": i, "path": f"images/{i:05d}.jpg"},
            "tags": ["train", "augmented"],
        }
        for i in range(BATCHES)
    ]
    dataset = TensorDataset(torch.randn(BATCHES * 4, 8), torch.randint(0, 4, (BATCHES * 4,)))
    data_loader = DataLoader(dataset, batch_size=4)
    repeats = 7 if quick else 31
    rows: list[Row] = []
    checks: list[Check] = []
    sources: tuple[tuple[str, Iterable[object]], ...] = (
        (f"{BATCHES} ready (x, y) batches", ready),
        (f"{BATCHES} ready dict batches with non-tensor leaves", records),
        (f"DataLoader, {BATCHES} batches of 4", data_loader),
    )
    for case, source in sources:
        strategies = {
            "bare loader": _epoch(source),
            'DeviceLoader(loader, "cpu")': _epoch(DeviceLoader(source, CPU)),
        }
        stats = time_interleaved(
            strategies, torch.device(CPU), warmup=2, repeats=repeats, clock=time.process_time
        )
        bare = stats["bare loader"].median
        for label, got in stats.items():
            metrics = {"us_per_batch": got.median / BATCHES * 1e6}
            metrics["us_over_bare"] = (got.median - bare) / BATCHES * 1e6
            rows.append(Row(case, label, got, metrics))
        over = (stats['DeviceLoader(loader, "cpu")'].median - bare) / BATCHES * 1e6
        target = DICT_LOADER_TARGET_US if "dict" in case else LOADER_TARGET_US
        checks.append(Check(f"DeviceLoader cpu µs/batch over bare, {case}", over, target))
    return rows, checks


def _mover(pack: bool | None) -> Callable[[object], object]:
    return lambda batch: to_device(batch, META, pack=pack)


def pack_rows(*, quick: bool) -> tuple[list[Row], list[Check]]:
    """Per-tensor cost of packing to meta against copying one by one, and the default."""
    repeats = 7 if quick else 25
    rows: list[Row] = []
    checks: list[Check] = []
    for count in PACK_COUNTS:
        batches = [[torch.randn(256) for _ in range(count)] for _ in range(2)]
        strategies: dict[str, Callable[[int], object]] = {
            f"to_device(pack={pack!r})": rotating(_mover(pack), batches)
            for pack in (True, False, None)
        }
        stats = time_interleaved(
            strategies,
            torch.device(CPU),
            warmup=2,
            repeats=repeats,
            inner=20,
            clock=time.process_time,
        )
        case = f"{count} x 1 KiB to meta"
        unpacked = stats["to_device(pack=False)"].median
        for label, got in stats.items():
            metrics = {"us_per_tensor": got.median / count * 1e6}
            metrics["vs_per_tensor"] = got.median / unpacked
            rows.append(Row(case, label, got, metrics))
        chosen = stats["to_device(pack=None)"].median
        fastest = min(unpacked, stats["to_device(pack=True)"].median)
        # A tie within 25% is noise on a shared machine; the default must not be the slow one.
        checks.append(Check(f"pack=None / the faster choice, {case}", chosen / fastest, 1.25))
    return rows, checks


def feed_cpu(*, quick: bool = False) -> SuiteResult:
    """Both measurements as one suite result (used by ``benchmarks/bench_feed_cpu.py``)."""
    rows, checks = loader_rows(quick=quick)
    more_rows, more_checks = pack_rows(quick=quick)
    return SuiteResult(
        "feed-cpu",
        (*rows, *more_rows),
        (*checks, *more_checks),
        notes=("CPU only; process CPU time; ratios within ~15% are ties on a shared machine",),
    )
