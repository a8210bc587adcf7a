"""`torchport bench`: measure copies, packing, loaders and torchport's own overhead.

Thin by design: parse, call :func:`torchport.bench.run_suites`, render. Progress
goes to stderr (so ``--json`` output on stdout stays clean); tables to stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

# Duplicated from torchport.bench.SUITE_NAMES because importing that package
# imports torch, and building the parser must not; a test keeps them equal.
SUITE_NAMES = ("link", "pack", "batch", "loader", "overhead")


def register(sub: Any) -> None:
    """Add the ``bench`` parser to the ``torchport`` subcommands."""
    parser = sub.add_parser(
        "bench",
        help="measure copy bandwidth, packing, loader overlap and torchport's overhead",
        description="Run benchmark suites and print a table (or JSON). "
        "Suites that need a CUDA/ROCm GPU are skipped, with the reason, where there is none.",
    )
    parser.add_argument(
        "suites",
        nargs="*",
        metavar="SUITE",
        help=f"suites to run (default: all): {', '.join(SUITE_NAMES)}",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.png",
        help="draw every suite that ran, one panel each (matplotlib)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats (smoke run)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    """Run the suites with a progress display on stderr, then print results; 0 on success.

    The GPU suites synchronize the host with the device around every sample.
    """
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from torchport import bench

    names = bench.select_suites(args.suites)  # ConfigError (exit 2) lists the suites
    if args.plot is not None:
        bench.require_matplotlib()  # fail before minutes of measuring, not after
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("bench", total=None)

        def report(suite: str, step: str) -> None:
            progress.update(task, description=f"{suite}: {step}")

        run = bench.run_suites(names, quick=args.quick, progress=report)
    if args.json:
        print(bench.render_json(run))
    else:
        bench.render_text(run, Console())
    if args.plot is not None:
        reason = bench.nothing_to_plot(run)
        if reason is not None:  # asked for a picture and none can be drawn: not a success
            print(f"torchport bench: --plot: {reason}; no file written", file=sys.stderr)
            return 2
        bench.plot_run(run, args.plot)
        print(f"torchport bench: wrote {args.plot}", file=sys.stderr)
    return 0
