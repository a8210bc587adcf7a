"""What does a packed copy cost the host per tensor? (issue 36; CPU only, on the simulator)

Packing exists to save per-copy overhead, so its own host work per tensor is what
decides whether it wins (the bytes of 1000 x 4 KiB cross a PCIe link in ~0.1 ms).
Two figures, both taken on the simulated accelerator (``torchport.testing.
simulate_accelerator``, a CPU-backed device whose every op runs through Python):

* calls: the Python-level torch calls per tensor that ``to_device(list, sim,
  pack=True)`` makes, counted with a ``TorchFunctionMode`` (methods and functions
  apart from attribute reads such as ``t.dtype``); deterministic. Calls made inside
  C++ (``torch._foreach_add`` allocating each result) are not Python calls and are
  not counted: that is the point of batching them.
* time: process time of one call moving the whole list, median of ``--repeats``
  (the three calls taken in turn),
  for one ``.to(sim)`` per tensor, ``to_device(pack=True)`` and
  ``to_device(pack=False)``, as ratios to the per-tensor loop within one run.
  Every op on the simulator costs a Python dispatch (tens of microseconds), so this
  ratio charges each device op the packed path issues, fused or not, far above what
  CUDA charges; the GPU figure is ``torchport bench pack --quick`` on a GPU.

* phases (``--phases``, this checkout's private functions): process time per tensor
  of each host step of the packed path for 1000 x 4 KiB (1-d, as the bench's) on
  the CPU: planning, layout, the gather into a staging buffer, the views the device
  side splits its buffer into (metadata only, so the CPU stands for the device),
  and the one Python call per float result left there (``view`` back to its dtype),
  beside a plain ``torch.empty`` per tensor (what any result in storage of its own
  costs at least).

Prints the machine's load beside the figures. Without ``--phases`` it uses only the
public API, so it can be pointed at another checkout (``PYTHONPATH=<src>``) for a
before/after.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/bench_pack_host_cost.py [--repeats N] [--phases]``
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

import torchport as tp
from torchport.testing import simulate_accelerator

SHAPES = [("1000 x 4 KiB", 1000, 1024), ("1000 x 64 B", 1000, 16), ("512 x 64 KiB", 512, 16384)]


class _Count(TorchFunctionMode):
    """Counts the torch calls Python makes: attribute reads apart from the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter[str] = collections.Counter()
        self.reads: collections.Counter[str] = collections.Counter()

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
        if name.startswith("getset_descriptor"):
            self.reads[getattr(getattr(func, "__self__", None), "__name__", name)] += 1
        else:
            self.calls[name] += 1
        return func(*args, **(kwargs or {}))


def _median_process_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def _interleaved(fns: list[Callable[[], object]], repeats: int) -> list[float]:
    """Median process time of each, the calls taken in turn so load drifts hit all alike."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, took in zip(fns, times, strict=True):
            start = time.process_time()
            fn()
            took.append(time.process_time() - start)
    return [statistics.median(took) for took in times]


def _load() -> list[str]:
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def _phases(sim: torch.device, repeats: int) -> None:
    from torch._C._nn import unflatten_dense_tensors

    from torchport.hardware import plan_copy
    from torchport.hardware._packed_transfer import _gather_groups, _layout

    n = 1000
    sources = [torch.randn(1024) for _ in range(n)]
    host = torch.empty(4096 * n, dtype=torch.uint8)
    groups = _layout(sources, range(n), None, batched=True)[0]
    ints = torch.empty(1024 * n, dtype=torch.int32)  # stands for the device buffer
    numels = [1024] * n
    squares = [t.view(32, 32) for t in sources]
    steps: dict[str, Callable[[], object]] = {
        "plan_copy": lambda: plan_copy(sources, sim, pack=True),
        "layout": lambda: _layout(sources, range(n), None, batched=True),
        "gather (one torch.cat)": lambda: _gather_groups(groups, host),
        "device views, 1-d group (split_with_sizes)": lambda: ints.split_with_sizes(numels),
        "device views, 32x32 group (unflatten)": lambda: unflatten_dense_tensors(ints, squares),
        "view to dtype, per result": lambda: [t.view(torch.int32) for t in sources],
        "torch.empty per tensor": lambda: [torch.empty(1024) for _ in range(n)],
        "t.to(sim) per tensor": lambda: [t.to(sim) for t in sources],
    }
    for name, step in steps.items():
        step()
        took = _median_process_time(step, repeats)
        print(f"  phase {name}: {took / n * 1e6:.2f} us per tensor")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="calls per figure (median)")
    parser.add_argument("--phases", action="store_true", help="time the host steps apart")
    args = parser.parse_args()
    sim = simulate_accelerator()
    print(f"torch {torch.__version__}, torchport from {os.path.dirname(tp.__file__)}")
    print(f"load before: {_load()}")
    if args.phases:
        _phases(sim, args.repeats)
        print(f"load after: {_load()}")
        return 0
    for label, count, numel in SHAPES:
        sources = [torch.randn(numel) for _ in range(count)]
        tp.to_device(sources, sim, pack=True)  # warm: imports, the staging pool
        with _Count() as counted:
            tp.to_device(sources, sim, pack=True)
        calls = sum(counted.calls.values()) / count
        reads = sum(counted.reads.values()) / count
        per_tensor, packed, unpacked = _interleaved(
            [
                lambda s=sources: [t.to(sim) for t in s],
                lambda s=sources: tp.to_device(s, sim, pack=True),
                lambda s=sources: tp.to_device(s, sim, pack=False),
            ],
            args.repeats,
        )
        top = ", ".join(f"{n} {k}" for k, n in counted.calls.most_common(4))
        print(f"{label}: calls/tensor {calls:.2f} (+ {reads:.2f} attribute reads); top: {top}")
        print(
            f"  process time per call: .to per tensor {per_tensor * 1e3:.1f} ms | "
            f"pack=True {packed * 1e3:.1f} ms ({packed / per_tensor:.2f}x) | "
            f"pack=False {unpacked * 1e3:.1f} ms ({unpacked / per_tensor:.2f}x)"
        )
    print(f"load after: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
