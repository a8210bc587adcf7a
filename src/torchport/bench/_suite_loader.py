"""Suite ``loader``: does a prefetching loader hide the copy behind compute?

A training step copies a batch host-to-device and computes on it (a chain of
matmuls sized so that copy/compute is 0.25, 1 or 4). Strategies: no prefetch
(``.to(device)`` then compute, what a plain loop does); ``torchport.DeviceLoader``
(the default way), fed pageable batches as it is meant to be and, for
comparison, pinned ones; and a timm-style prefetcher written here (side stream
plus ``wait_stream``, the pattern of ``timm.data.loader.PrefetchLoader``) fed
pinned batches; and, where it is installed, Accelerate's prepared loader over a
``DataLoader(pin_memory=True)``. Step time is compared with max(copy, compute), the best any
overlap can do (target ≤ 1.1x); the pinned host bytes DeviceLoader holds are
compared with depth x batch bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

import torch

from torchport import hardware
from torchport._sizes import format_bytes
from torchport.bench._competitors import optional_import, version_of
from torchport.bench._model import Check, Row, SuiteResult
from torchport.bench._random_inputs import KIB, MIB, random_tensor
from torchport.bench._timing import Stats, rotating, time_interleaved
from torchport.feed import DeviceLoader

RATIOS = (0.25, 1.0, 4.0)
DEPTH = 2
BOUND_TARGET = 1.1
PINNED_TARGET = 1.05  # pinned host bytes held <= depth x batch + 5%
Batch = dict[str, torch.Tensor]


class TimmStylePrefetcher:
    """Copies the next batch on a side stream while the current one is consumed.

    A baseline written the way users write it, in plain ``torch.cuda`` (not through
    torchport's hardware floor): what DeviceLoader is measured against.

    The consumer's stream waits on the side stream before it gets a batch.
    Unlike timm, each yielded tensor is marked with ``record_stream`` so the
    caching allocator cannot hand its memory to the next copy while the
    consumer's kernels still read it.
    """

    def __init__(self, loader: Iterable[Batch], device: torch.device) -> None:
        self.loader = loader
        self.device = device
        self.stream = cast(Any, torch.cuda).Stream(device=device)  # unannotated in torch

    def __iter__(self) -> Iterator[Batch]:
        stream = self.stream
        consumer = torch.cuda.current_stream(self.device)
        current: Batch | None = None
        for batch in self.loader:
            with torch.cuda.stream(stream):
                upcoming = {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}
            if current is not None:
                yield current
            consumer.wait_stream(stream)
            for tensor in upcoming.values():
                tensor.record_stream(consumer)
            current = upcoming
        if current is not None:
            yield current


def _accelerate_loader(batches: list[Batch], device: torch.device) -> tuple[str, Any] | None:
    """Accelerate's prepared loader over ``batches``, as its users write it; None without it.

    A ``DataLoader(pin_memory=True)`` handed to ``prepare_data_loader``, which moves
    each batch to ``device`` with ``non_blocking=True`` on the current stream (it
    prefetches the next host batch, not its copy).
    """
    top, loaders = optional_import("accelerate"), optional_import("accelerate.data_loader")
    if top is None or loaders is None:
        return None
    # a list serves as a map-style dataset; torch's stubs want a Dataset
    dataset = cast("torch.utils.data.Dataset[Batch]", batches)
    plain: torch.utils.data.DataLoader[Batch] = torch.utils.data.DataLoader(
        dataset, batch_size=None, pin_memory=True
    )
    prepared = loaders.prepare_data_loader(
        plain,
        device=device,
        num_processes=1,
        process_index=0,
        put_on_device=True,
        non_blocking=True,
    )
    return f"accelerate {version_of(top)} prepared loader, pinned source", prepared


def _host_batches(batch_bytes: int, count: int, *, pin: bool) -> list[Batch]:
    labels = 8 * KIB
    return [
        {
            "x": random_tensor(batch_bytes - labels, pin=pin),
            "y": random_tensor(labels, dtype=torch.int64, pin=pin),
        }
        for _ in range(count)
    ]


class _Compute:
    """A chain of ``iters`` matmuls that reads the batch first, so it depends on the copy."""

    def __init__(self, device: torch.device) -> None:
        self.a = torch.randn(1536, 1536, device=device)
        self.out = torch.empty_like(self.a)
        self.iters = 1

    def __call__(self, batch: Batch) -> None:
        self.out[0, 0] = batch["x"].sum()
        for _ in range(self.iters):
            torch.mm(self.a, self.a, out=self.out)


def _pinned_held(loader: DeviceLoader[Batch], compute: _Compute) -> float:
    """Most pinned staging bytes ``loader`` holds over one epoch.

    Sampled from ``loader.stats.pinned_bytes`` after each step and once more after
    a final synchronization, when every staging slot is back in its pool.
    """
    held = 0
    for batch in loader:
        compute(batch)
        held = max(held, loader.stats.pinned_bytes)
    hardware.synchronize(loader.device)
    return float(max(held, loader.stats.pinned_bytes))


def loader_overlap(
    device: torch.device, *, quick: bool = False, on_case: Callable[[str], None] | None = None
) -> SuiteResult:
    """Measure step time of each loading strategy at each copy/compute ratio on ``device``.

    Needs a CUDA (or ROCm) device. Every sample synchronizes the host with it.
    """
    batch_bytes = (32 if quick else 128) * MIB
    steps = 12 if quick else 32
    pinned = _host_batches(batch_bytes, 4, pin=True)
    pageable = _host_batches(batch_bytes, 4, pin=False)
    epoch_pinned = [pinned[i % 4] for i in range(steps)]
    epoch_pageable = [pageable[i % 4] for i in range(steps)]
    compute = _Compute(device)

    def copy(i: int) -> object:
        return {k: v.to(device, non_blocking=True) for k, v in pinned[i % 4].items()}

    def copy_pageable(i: int) -> object:
        return {k: v.to(device, non_blocking=True) for k, v in pageable[i % 4].items()}

    copies = time_interleaved(
        {"pinned": copy, "pageable": copy_pageable}, device, warmup=2, repeats=9, events=True
    )
    copy_stats = copies["pinned"]
    one_mm = time_interleaved(
        {"mm": lambda i: torch.mm(compute.a, compute.a, out=compute.out)},
        device,
        warmup=3,
        repeats=9,
        events=True,
        inner=10,
    )["mm"].median
    on_device = [copy(i) for i in range(2)]

    def no_prefetch(i: int) -> None:
        for batch in epoch_pinned:
            compute({k: v.to(device) for k, v in batch.items()})

    def run_epoch(loader: Iterable[Batch]) -> Callable[[int], None]:
        def run(i: int) -> None:
            for batch in loader:
                compute(batch)

        return run

    device_loaders: dict[str, Callable[[], DeviceLoader[Batch]]] = {
        f"DeviceLoader(depth={DEPTH}), pageable source": lambda: DeviceLoader(
            epoch_pageable, device, depth=DEPTH
        ),
        f"DeviceLoader(depth={DEPTH}), pinned source": lambda: DeviceLoader(
            epoch_pinned, device, depth=DEPTH
        ),
    }
    # Built once and iterated once per sample, as a training loop iterates its
    # loader once per epoch: stream and staging buffers persist across epochs.
    loaders: dict[str, Iterable[Batch]] = {label: make() for label, make in device_loaders.items()}
    loaders["timm-style prefetcher, pinned source"] = TimmStylePrefetcher(epoch_pinned, device)
    accelerated = _accelerate_loader(epoch_pinned, device)
    if accelerated is not None:
        loaders[accelerated[0]] = accelerated[1]
    rows: list[Row] = []
    checks: list[Check] = []
    for ratio in RATIOS:
        case = f"copy/compute {ratio:g}"
        if on_case is not None:
            on_case(case)
        compute.iters = max(1, round(copy_stats.median / ratio / one_mm))
        compute_stats = time_interleaved(
            {"compute": rotating(compute, on_device)},
            device,
            warmup=2,
            repeats=9,
            events=True,
        )["compute"]
        bound = max(copy_stats.median, compute_stats.median)
        runs: dict[str, Callable[[int], object]] = {"no prefetch (.to then compute)": no_prefetch}
        runs.update({label: run_epoch(loader) for label, loader in loaders.items()})
        stats = time_interleaved(runs, device, warmup=1, repeats=3 if quick else 5)
        rows.append(Row(case, "copy alone (pinned, events)", copy_stats))
        rows.append(Row(case, "copy alone (pageable, events)", copies["pageable"]))
        rows.append(Row(case, f"compute alone ({compute.iters} matmuls, events)", compute_stats))
        for label, got in stats.items():
            per_step: Stats = got.scaled(1.0 / steps)
            metrics = {"vs_bound": per_step.median / bound}
            if label in device_loaders:
                metrics["pinned_peak_bytes"] = _pinned_held(device_loaders[label](), compute)
                metrics["pinned_budget_bytes"] = float(DEPTH * batch_bytes)
                checks.append(
                    Check(
                        f"{label} pinned bytes held / (depth x batch), {case}",
                        metrics["pinned_peak_bytes"] / metrics["pinned_budget_bytes"],
                        PINNED_TARGET,
                    )
                )
            rows.append(Row(case, label, per_step, metrics))
            if label in device_loaders:
                checks.append(
                    Check(
                        f"{label} step / max(copy, compute), {case}",
                        metrics["vs_bound"],
                        BOUND_TARGET,
                    )
                )
    notes = (
        f"batch {format_bytes(batch_bytes)}, {steps} steps per sample; step times per step",
        "bound = max(pinned copy, compute): the link limit, stricter than a pageable source allows",
        "pinned peak: most DeviceLoader.stats.pinned_bytes seen over one epoch of a fresh loader",
    )
    return SuiteResult("loader", tuple(rows), tuple(checks), notes)
