"""Does DeviceLoader's pinned staging stay flat over 100 epochs, leaking no streams or events? (GPU)

One ``torchport.DeviceLoader`` (the default depth) over a small loader of
pageable batches, run for ``--epochs`` epochs on one CUDA device. After each
epoch: the pinned bytes its staging pool holds, the staging buffers it has ever
allocated, and the live ``torch.Stream``/``torch.Event`` objects (and their CUDA
twins) the garbage collector can see. Target: after the first epoch all three
stay flat.

Prints one JSON object; ``--dry-run`` checks the arguments and imports and exits
before touching a GPU.

Run: ``python benchmarks/bench_gpu_pool.py [--epochs 100] [--dry-run]``
"""

from __future__ import annotations

import argparse
import gc
import json
import sys


def _live_streams_and_events() -> int:
    import torch

    kinds = (torch.Stream, torch.Event, torch.cuda.Stream, torch.cuda.Event)
    return sum(1 for thing in gc.get_objects() if isinstance(thing, kinds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--epochs", type=int, default=100, help="epochs to run")
    parser.add_argument("--batches", type=int, default=8, help="batches per epoch")
    parser.add_argument("--dry-run", action="store_true", help="check arguments and imports only")
    args = parser.parse_args(argv)
    import torch

    import torchport as tp

    if args.dry_run:
        print(json.dumps({"dry_run": True, "epochs": args.epochs}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "needs a CUDA GPU; none is available"}))
        return 0
    device = torch.device("cuda", torch.cuda.current_device())
    batches = [
        {"x": torch.randn(256, 1024), "y": torch.randint(0, 10, (256,)), "ids": list(range(4))}
        for _ in range(args.batches)
    ]
    loader = tp.DeviceLoader(batches, device)
    pinned, buffers, live = [], [], []
    for _ in range(args.epochs):
        for batch in loader:
            batch["x"].sum()
        torch.cuda.synchronize(device)
        gc.collect()
        stats = loader.stats
        pinned.append(stats.pinned_bytes)
        buffers.append(stats.staging_buffers)
        live.append(_live_streams_and_events())
    flat = {
        "pinned_bytes": len(set(pinned[1:])) == 1,
        "staging_buffers": len(set(buffers[1:])) == 1,
        "streams_and_events": len(set(live[1:])) == 1,
    }
    summary = {
        name: {"first": series[0], "after_first": series[1], "last": series[-1], "max": max(series)}
        for name, series in (("pinned_bytes", pinned), ("staging_buffers", buffers),
                             ("streams_and_events", live))
    }  # fmt: skip
    print(json.dumps({"device": str(device), "epochs": args.epochs, "flat": flat, **summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
