"""Where does a packed copy of 1,000 small tensors spend its time on a GPU? (issue 36)

``torchport bench pack`` gives the end-to-end figure (``to_device(pack=True)``
against one ``.to()`` per tensor); this script splits the packed path into its
steps and times each on the device, wall clock, the device synchronized before
and after every step, medians of ``--repeats``:

* the whole call, ``to_device(list, dev, pack=True)``, and one ``.to()`` per tensor;
* ``to_device`` over tensors already there (the walk and the plan, nothing moves);
* each step of :func:`torchport.hardware._packed_transfer.run_staged` for one
  dtype group: planning, layout, the staging lease, the gather (one ``torch.cat``
  into pinned memory), the one host-to-device copy, the device views, the fused
  ``torch._foreach_add(views, 0)`` that gives each result a storage of its own, and
  the ``view`` back to the float dtype;
* what the alternatives would cost: ``torch.empty`` per tensor, the views alone (no
  storage of their own, as tensordict's ``consolidate`` gives), a float
  ``torch._foreach_mul(views, 1)`` (no view back, but not bit-exact for signalling NaNs);
* the kernels one call launches (``torch.profiler``) and the host functions
  dearest in it (``cProfile``, by own time).

Without CUDA it runs every step on the simulated accelerator (a rehearsal: its
figures charge each device op a Python dispatch and mean nothing for a GPU).
This checkout's private functions are used, so run it from the checkout it measures.

Run: ``PYTHONPATH=src python benchmarks/bench_gpu_pack_phases.py [--repeats N] [--json OUT]``
(``--dry-run``: check the arguments and imports only).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import time
from collections.abc import Callable

import torch

import torchport as tp
from torchport.hardware import plan_copy
from torchport.hardware._packed_transfer import _gather_groups, _layout
from torchport.hardware._staging_pool import default_pool
from torchport.hardware._sync import current_stream, new_event, synchronize

COUNT = 1000
NUMEL = 1024  # 4 KiB of float32


def _timed(step: Callable[[], object], device: torch.device, repeats: int) -> float:
    """Median wall seconds of ``step``, the device synchronized before and after."""
    step()
    synchronize(device)
    took = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        step()
        synchronize(device)
        took.append(time.perf_counter() - start)
    return statistics.median(took)


def _steps(device: torch.device) -> dict[str, Callable[[], object]]:
    sources = [torch.randn(NUMEL) for _ in range(COUNT)]
    moved = [t.to(device) for t in sources]
    groups, _, total = _layout(sources, range(COUNT), None, batched=True)
    pool = default_pool()
    slot = pool.acquire(total, pinned=device.type == "cuda")
    host = slot.buffer[:total]
    dev = torch.empty(total, dtype=torch.uint8, device=device)
    region = dev.view(torch.int32)
    floats = dev.view(torch.float32)
    numels = [NUMEL] * COUNT
    views = list(region.split_with_sizes(numels))
    float_views = list(floats.split_with_sizes(numels))
    results = torch._foreach_add(views, 0)

    def lease() -> None:
        leased = pool.acquire(total, pinned=device.type == "cuda")
        pool.release(leased, None)

    def record() -> None:
        new_event().record(current_stream(device))

    return {
        "one .to() per tensor": lambda: [t.to(device) for t in sources],
        "to_device(pack=True), whole call": lambda: tp.to_device(sources, device, pack=True),
        "to_device(pack=False), whole call": lambda: tp.to_device(sources, device, pack=False),
        "to_device of tensors already there": lambda: tp.to_device(moved, device, pack=True),
        "step plan_copy": lambda: plan_copy(sources, device, pack=True),
        "step layout": lambda: _layout(sources, range(COUNT), None, batched=True),
        "step staging lease + release": lease,
        "step gather (torch.cat into pinned)": lambda: _gather_groups(groups, host),
        "step device buffer + one copy": lambda: torch.empty(
            total, dtype=torch.uint8, device=device
        ).copy_(host, non_blocking=True),
        "step device views (split_with_sizes)": lambda: region.split_with_sizes(numels),
        "step _foreach_add(views, 0)": lambda: torch._foreach_add(views, 0),
        "step view back to float32": lambda: [r.view(torch.float32) for r in results],
        "step event record": record,
        "alt torch.empty per tensor": lambda: [
            torch.empty(NUMEL, device=device) for _ in range(COUNT)
        ],
        "alt views alone (no own storage)": lambda: floats.split_with_sizes(numels),
        "alt _foreach_mul(float views, 1)": lambda: torch._foreach_mul(float_views, 1.0),
        "alt _foreach_clamp_min(float views, -inf)": lambda: torch._foreach_clamp_min(
            float_views, float("-inf")
        ),
        "alt _foreach_copy_ into fresh empties": lambda: torch._foreach_copy_(
            [torch.empty(NUMEL, device=device) for _ in range(COUNT)], float_views
        ),
    }


_SAME_WIDTH = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def _exactness(device: torch.device) -> dict[str, bool]:
    """Which out-of-place float foreach ops give back every bit pattern (NaN payloads too)."""
    ops: dict[str, Callable[[list[torch.Tensor]], list[torch.Tensor]]] = {
        "clamp_min(-inf)": lambda v: list(torch._foreach_clamp_min(v, float("-inf"))),
        "add(-0.0)": lambda v: list(torch._foreach_add(v, -0.0)),
        "mul(1)": lambda v: list(torch._foreach_mul(v, 1.0)),
    }
    found = {}
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        as_int = _SAME_WIDTH[dtype.itemsize]
        info = torch.iinfo(as_int)
        # Every sign, exponent extreme and payload: random bits plus each exponent-all-ones one.
        bits = torch.randint(info.min, info.max, (4096,), dtype=as_int)
        floats = bits.view(dtype)
        nan_bits = bits[torch.isnan(floats)]
        sample = torch.cat([bits, nan_bits, torch.tensor([0, info.min], dtype=as_int)])
        views = [sample.view(dtype).to(device)] * 3
        for name, op in ops.items():
            got = [r.cpu().view(as_int) for r in op(views)]
            found[f"{name} {dtype}"] = all(torch.equal(g, sample) for g in got)
    return found


def _kernels(device: torch.device, sources: list[torch.Tensor]) -> list[tuple[str, int]]:
    """Kernel and memcpy names one packed call launches on CUDA, with their counts."""
    if device.type != "cuda":
        return []
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        tp.to_device(sources, device, pack=True)
        synchronize(device)
    counts: dict[str, int] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            counts[event.name[:80]] = counts.get(event.name[:80], 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


def _host_profile(device: torch.device, sources: list[torch.Tensor], calls: int) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        tp.to_device(sources, device, pack=True)
    profiler.disable()
    synchronize(device)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21, help="samples per figure (median)")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument(
        "--dry-run", action="store_true", help="check the arguments and imports, touch no device"
    )
    args = parser.parse_args(argv)
    if args.dry_run:
        print(json.dumps({"dry_run": True, "repeats": args.repeats}))
        return 0
    if torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
        name = torch.cuda.get_device_name(device)
    else:
        from torchport.testing import simulate_accelerator

        device = simulate_accelerator()
        name = "simulated accelerator (rehearsal: figures mean nothing for a GPU)"
    print(f"torch {torch.__version__}, device {device} ({name}), {COUNT} x {NUMEL * 4} B float32")
    figures: dict[str, float] = {}
    for label, step in _steps(device).items():
        figures[label] = seconds = _timed(step, device, args.repeats)
        print(f"{label:45s} {seconds * 1e3:8.3f} ms  {seconds / COUNT * 1e6:6.2f} us/tensor")
    exact = _exactness(device)
    for label, same in exact.items():
        print(f"bit-exact {label}: {same}")
    sources = [torch.randn(NUMEL) for _ in range(COUNT)]
    kernels = _kernels(device, sources)
    for kernel, n in kernels:
        print(f"kernel x{n}: {kernel}")
    print(_host_profile(device, sources, calls=20))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"device": name, "figures": figures, "exact": exact, "kernels": kernels},
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
