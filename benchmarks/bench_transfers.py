"""How close do torchport's host-to-device transfers get to the link? (GPU only)

Questions, each answered by one ``torchport.bench`` suite in one run:

* ``batch``: a 256 MiB nested pinned batch moved by ``torchport.to_device``
  (the default) vs accelerate ``send_to_device(non_blocking=True)`` vs
  Lightning's ``move_data_to_device`` (or lightning-utilities' equivalent) vs
  raw pinned ``copy_`` per leaf; each as a share of the raw copies' bandwidth.
* ``pack``: N small pageable tensors (including 1000 x 4 KiB) moved one
  ``.to()`` each vs ``to_device(pack=True)`` vs ``to_device`` with the default
  ``pack=None`` vs tensordict ``consolidate().to()``.
* ``loader``: step time at copy/compute 0.25, 1 and 4 with no prefetch vs
  ``torchport.DeviceLoader`` (the default) vs a timm-style side-stream
  prefetcher, against max(copy, compute) (target ≤ 1.1x); pinned host bytes
  DeviceLoader holds vs depth x batch bytes.
* ``link`` (with ``--link``): the raw bandwidth curve these are measured against.

Without a CUDA/ROCm GPU it prints why and exits 0 with nothing measured.

Run: ``.venv/bin/python benchmarks/bench_transfers.py [--quick] [--json] [--link]``
"""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from torchport.bench import render_json, render_text, run_suites


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller batches, fewer repeats")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--link", action="store_true", help="also measure the link suite")
    args = parser.parse_args()
    names = ["batch", "pack", "loader"] + (["link"] if args.link else [])
    run = run_suites(names, quick=args.quick)
    skipped = [suite.skipped for suite in run.suites if suite.skipped is not None]
    if skipped and len(skipped) == len(run.suites):
        print(f"bench_transfers: nothing measured: {skipped[0]}", file=sys.stderr)
        return 0
    if args.json:
        print(render_json(run))
    else:
        render_text(run, Console())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
