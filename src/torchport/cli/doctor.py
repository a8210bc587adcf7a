"""`torchport doctor`: report torch's build, drivers, devices and copy bandwidth on this machine."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "doctor",
        help="check torch, drivers and devices on this machine",
        description=(
            "Report torchport's, torch's, Python's and NumPy's versions, the OS, CPUs and "
            "torch's threads, the CUDA/ROCm runtime against the driver, visible devices and "
            "their free memory, MPS/XPU, the device torchport picks and why, and any problems "
            "with what to do about them. Exit 0 when no problem is an error, 1 otherwise."
        ),
    )
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the report as JSON")
    form.add_argument(
        "--markdown",
        action="store_true",
        help="print the report as a Markdown list to paste into a bug report",
    )
    parser.add_argument(
        "--bandwidth",
        action="store_true",
        help="measure pinned and pageable host<->device copy bandwidth (a few seconds)",
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    # torch is imported here, not at module level, so other subcommands never pay for it.
    from rich.console import Console

    from torchport.diagnose import doctor, render_doctor

    report = doctor(bandwidth=args.bandwidth)
    if args.json:
        print(report.to_json())
    elif args.markdown:
        print(report.to_markdown())
    else:
        Console().print(render_doctor(report, bandwidth_hint="run `torchport doctor --bandwidth`"))
    return 0 if report.ok else 1
