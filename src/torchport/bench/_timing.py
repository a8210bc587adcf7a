"""Timing and summary statistics for the bench suites.

Every suite times through :func:`time_interleaved`: strategies are run round-robin
within each repeat, so slow drift of a shared machine (other processes, clock
boost, thermal) lands on all of them alike instead of on whichever ran last.
Each call receives the repeat index so it can pick a fresh input: a strategy is
never handed the same buffer twice in a row, where a cache could flatter it.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torchport._device_types import CUDA

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Stats:
    """Summary of repeated timings, in seconds.

    Attributes:
        median: The median sample.
        q1: The first quartile (linear interpolation, as numpy's default).
        q3: The third quartile.
        minimum: The fastest sample.
        n: How many samples were summarized.
    """

    median: float
    q1: float
    q3: float
    minimum: float
    n: int

    @property
    def iqr(self) -> float:
        """The interquartile range ``q3 - q1``: the spread of the middle half."""
        return self.q3 - self.q1

    def scaled(self, factor: float) -> Stats:
        """The same summary with every time multiplied by ``factor`` (e.g. per step)."""
        return Stats(
            median=self.median * factor,
            q1=self.q1 * factor,
            q3=self.q3 * factor,
            minimum=self.minimum * factor,
            n=self.n,
        )


def quantile(sorted_samples: Sequence[float], q: float) -> float:
    """Return the ``q`` quantile of already sorted samples, interpolating linearly.

    Args:
        sorted_samples: Samples in ascending order; at least one.
        q: The quantile, between 0 and 1.

    Raises:
        ValueError: If there are no samples or ``q`` is outside [0, 1].
    """
    if not sorted_samples:
        raise ValueError("quantile of no samples; time at least one repeat")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside [0, 1]")
    pos = q * (len(sorted_samples) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_samples) - 1)
    frac = pos - lo
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * frac


def summarize(samples: Sequence[float]) -> Stats:
    """Summarize timing samples as median, quartiles and minimum.

    Raises:
        ValueError: If ``samples`` is empty.
    """
    ordered = sorted(samples)
    if not ordered:
        raise ValueError("no timing samples to summarize; time at least one repeat")
    return Stats(
        median=quantile(ordered, 0.5),
        q1=quantile(ordered, 0.25),
        q3=quantile(ordered, 0.75),
        minimum=ordered[0],
        n=len(ordered),
    )


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block with ``count`` intra-op torch threads, restoring the old count after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def synchronize(device: torch.device) -> None:
    """Wait until all work queued on ``device`` has finished (a no-op for CPU and meta).

    This synchronizes the host with the device.
    """
    from torchport import hardware

    hardware.synchronize(device)


def time_once(
    fn: Callable[[], object],
    device: torch.device,
    *,
    events: bool = False,
    inner: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Time ``inner`` calls of ``fn`` and return the seconds per call.

    With ``events=True`` on CUDA the span is measured by device events recorded on
    the current stream, which excludes the host's wake-up latency after the work
    ends; otherwise by ``clock`` (wall time, ``time.perf_counter``, unless told
    otherwise) between two synchronizations, which
    includes every host-side cost the caller would see.

    This synchronizes the host with ``device`` before and after the calls.
    """
    synchronize(device)
    if events and device.type == CUDA:
        from torchport import hardware

        start = hardware.new_event(timing=True)
        end = hardware.new_event(timing=True)
        # record on `device`'s stream, which need not be the current device's
        stream = hardware.current_stream(device)
        start.record(stream)
        for _ in range(inner):
            fn()
        end.record(stream)
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0 / inner
    begin = clock()
    for _ in range(inner):
        fn()
    synchronize(device)
    return (clock() - begin) / inner


def rotating(fn: Callable[[Any], object], inputs: Sequence[Any]) -> Callable[[int], object]:
    """A strategy for :func:`time_interleaved` that calls ``fn`` on ``inputs`` in turn.

    With two or more inputs no call sees the input the previous call saw, so a
    cache (allocator, walker memo, page cache) cannot flatter a repeat.
    """
    return lambda i: fn(inputs[i % len(inputs)])


def time_interleaved(
    strategies: Mapping[str, Callable[[int], object]],
    device: torch.device,
    *,
    warmup: int,
    repeats: int,
    events: bool = False,
    inner: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Stats]:
    """Time each strategy ``repeats`` times, round-robin, after ``warmup`` untimed rounds.

    Args:
        strategies: Name to a function of the repeat index (so it can choose a
            fresh input for that repeat).
        device: Where the work runs; synchronized around every sample.
        warmup: Untimed rounds first (allocator, caches, lazy initialization).
        repeats: Timed rounds; each gives one sample per strategy.
        events: Use device events on CUDA (see :func:`time_once`).
        inner: Calls per sample, for work too short to time one at a time.
        clock: Host clock for samples not timed by events. CPU-only suites pass
            ``time.process_time``: CPU time this process used, which other
            processes on a shared machine cannot inflate (wall time can be
            several times the work when cores are oversubscribed).

    Returns:
        Name to the summary of its samples, in seconds per call.

    This synchronizes the host with ``device`` around every sample.
    """
    samples: dict[str, list[float]] = {name: [] for name in strategies}
    for round_index in range(warmup + repeats):
        for name, fn in strategies.items():

            def call(fn: Callable[[int], object] = fn, i: int = round_index) -> object:
                return fn(i)

            seconds = time_once(call, device, events=events, inner=inner, clock=clock)
            if round_index >= warmup:
                samples[name].append(seconds)
    return {name: summarize(values) for name, values in samples.items()}
