"""`torchport fix`: apply the checker's fixes in place, safely; idempotent.

A plain fix applies the fixes of DEVICE and SAFETY rules; SPEED rules' fixes
only with ``--speed`` or for rules named in ``--select``/the config's select.

``torchport fix -`` fixes stdin and prints the result. Exit codes: 0 when
everything left is clean (with ``--diff``: nothing would change), 1 when
findings remain (or a diff was shown), 2 on errors.
"""

from __future__ import annotations

import argparse
import sys

from torchport.cli._change_report import report_changes
from torchport.cli._options import add_output, add_paths, add_selection, run_paths, settings
from torchport.cli._output import ProgressLine, report_stream

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "fix",
        help="fix device-hard-coded PyTorch code in place",
        description="Apply safe fixes in place (and unsafe ones with --unsafe). "
        "Exit 0 when nothing is left, 1 when findings remain, 2 on errors.",
    )
    add_paths(parser)
    add_selection(parser)
    add_output(parser)
    parser.add_argument(
        "--unsafe", action="store_true", help="also apply fixes that may change behaviour"
    )
    parser.add_argument(
        "--diff", action="store_true", help="print a unified diff and write nothing"
    )
    parser.add_argument(
        "--speed",
        action="store_true",
        help="also apply speed fixes (non_blocking, pin_memory, ...: the SPEED rules), "
        "which a plain fix applies only to rules named in --select or the config",
    )
    parser.add_argument(
        "--show-fixes", action="store_true", help="list each file's fixes by rule, with names"
    )
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """`torchport fix` (and `check --diff`, which sets ``diff``, ``unsafe`` and ``speed``)."""
    from torchport.check import fix_paths

    paths, stdin, encoding = run_paths(args)
    # With --diff, stdout is a clean patch; with -, the fixed text; the report goes to stderr.
    default = sys.stderr if args.diff or stdin is not None else sys.stdout
    with report_stream(args, default) as (report, _):  # before any file is written
        progress = ProgressLine("Fixing", args)
        try:
            result = fix_paths(
                paths,
                stdin=stdin,
                unsafe=args.unsafe,
                diff=args.diff,
                speed=args.speed,
                select=args.select,
                ignore=args.ignore,
                extend_select=args.extend_select,
                config=settings(args, paths),
                target_torch=args.target_torch,
                jobs=args.jobs,
                progress=progress,
            )
        finally:
            progress.close()
        if stdin is not None and not args.diff:  # the fixed text, in stdin's own encoding
            text = (result.changed[0].text or "") if result.changed else stdin
            sys.stdout.flush()
            sys.stdout.buffer.write(text.encode(encoding, "surrogateescape"))
            sys.stdout.buffer.flush()
        chosen = {"speed": args.speed, "unsafe": args.unsafe}
        applied = {"safe", *(kind for kind, on in chosen.items() if on)}
        report_changes(result, args, report, applied, verbs=("fixed", "would fix", "Fixed"))
    if result.errors:
        return 2
    return 0 if args.exit_zero else result.exit_code
