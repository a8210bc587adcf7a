"""What do ``audit()``/``strict()`` cost a CUDA step, and does audit count what CUDA counts? (GPU)

In one run on one CUDA device, a training step (an MLP's forward, loss,
backward, SGD update, and the loss's ``.item()``, with its batch copied from the
host each step):

* step time bare (the default: both are opt-in) vs inside ``torchport.strict()``
  vs inside ``torchport.audit()``; medians over the steps, as ratios to bare;
* one recorded host sync (``.item()`` of a device scalar) bare vs under
  ``audit()``, in µs;
* the same steps counted three ways: ``audit()``'s host-device copies and host
  syncs, the warnings of ``torch.cuda.set_sync_debug_mode("warn")``, and the
  memcpy events of ``torch.profiler``; the three should agree.

Prints one JSON object; ``--dry-run`` checks the arguments and imports and exits
before touching a GPU.

Run: ``python benchmarks/bench_gpu_diagnose.py [--steps 50] [--dry-run]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=50, help="timed steps per variant")
    parser.add_argument("--dry-run", action="store_true", help="check arguments and imports only")
    args = parser.parse_args(argv)
    import torch
    from torch import nn

    import torchport as tp

    if args.dry_run:
        print(json.dumps({"dry_run": True, "steps": args.steps}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "needs a CUDA GPU; none is available"}))
        return 0
    device = torch.device("cuda", torch.cuda.current_device())
    model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x_host, y_host = torch.randn(256, 1024), torch.randint(0, 10, (256,))

    def step() -> float:
        x, y = x_host.to(device), y_host.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    def median_ms(run: Callable[[], Any], inside: Callable[[], Any] | None = None) -> float:
        times = []
        for _ in range(args.steps + 3):
            start = time.perf_counter()
            if inside is None:
                run()
            else:
                with inside():
                    run()
            times.append(time.perf_counter() - start)
        return statistics.median(times[3:]) * 1e3

    bare = median_ms(step)
    strict = median_ms(step, tp.strict)
    audited = median_ms(step, tp.audit)
    scalar = torch.ones((), device=device)

    def items() -> None:
        for _ in range(100):
            scalar.item()

    # one recorded sync's cost: 100 reads inside one audit, per read (opening and
    # closing the audit are not in it)
    item_bare = median_ms(items) * 10
    with tp.audit():
        item_audit = median_ms(items) * 10

    steps = 5
    with tp.audit() as report:
        for _ in range(steps):
            step()
    torch.cuda.synchronize(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(steps):
                step()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profile:
        for _ in range(steps):
            step()
        torch.cuda.synchronize(device)
    memcpy = sum(event.count for event in profile.key_averages() if "memcpy" in event.key.lower())
    counts = {
        "steps": steps,
        "audit_transfers": sum(entry.count for entry in report.transfers),
        "audit_syncs": sum(entry.count for entry in report.syncs),
        "sync_debug_warnings": len(caught),
        "profiler_memcpy_events": memcpy,
    }
    result = {
        "device": str(device),
        "step_ms": {"bare": bare, "strict()": strict, "audit()": audited},
        "ratio_to_bare": {"strict()": strict / bare, "audit()": audited / bare},
        "item_us": {"bare": item_bare, "audit()": item_audit, "audit cost": item_audit - item_bare},
        "counts": counts,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
