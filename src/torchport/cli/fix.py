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
from typing import Any

from torchport.cli.check import add_selection_arguments, read_stdin


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "fix",
        help="fix device-hard-coded PyTorch code in place",
        description="Apply safe fixes in place (and unsafe ones with --unsafe). "
        "Exit 0 when nothing is left, 1 when findings remain, 2 on errors.",
    )
    add_selection_arguments(parser)
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
    parser.set_defaults(handler=_run)


def write_stdin_result(change: Any, given: bytes) -> None:
    """The fixed text on stdout, in the encoding it came in (the bytes as given if unchanged)."""
    sys.stdout.flush()
    if change is None or change.text is None:
        sys.stdout.buffer.write(given)
    else:
        sys.stdout.buffer.write(change.text.encode(change.encoding, "surrogateescape"))
    sys.stdout.buffer.flush()


def _run(args: argparse.Namespace) -> int:
    from torchport.check import fix_paths, render_text

    stdin = read_stdin(args.paths)
    result = fix_paths(
        [args.stdin_filename or "-"] if stdin is not None else args.paths or ["."],
        stdin=stdin,
        unsafe=args.unsafe,
        diff=args.diff,
        speed=args.speed,
        select=args.select,
        ignore=args.ignore,
        extend_select=args.extend_select,
        config=args.config,
        jobs=args.jobs,
    )
    # With --diff, stdout is a clean patch; with -, the fixed text; the report goes to stderr.
    report = sys.stderr if args.diff or stdin is not None else sys.stdout
    if stdin is not None and not args.diff:
        write_stdin_result(result.changed[0] if result.changed else None, stdin)
    total = 0
    for change in result.changed:
        total += sum(change.fixed.values())
        counts = ", ".join(f"{code} x{n}" for code, n in change.fixed.items())
        if args.diff:  # in the file's own encoding, so the patch applies to its bytes
            sys.stdout.flush()
            sys.stdout.buffer.write(change.diff.encode(change.encoding, "surrogateescape"))
            sys.stdout.buffer.flush()
        print(f"{'would fix' if args.diff else 'fixed'} {change.path}: {counts}", file=report)
    for error in result.errors:
        print(error, file=sys.stderr)
    if result.remaining:
        report.write(render_text(result.remaining))
    verb = "Would fix" if args.diff else "Fixed"  # (stdin: fixed on stdout, files untouched)
    files = len(result.changed)
    summary = (
        f"{verb} {total} finding{'s' * (total != 1)} in {files} file{'s' * (files != 1)}; "
        f"{len(result.remaining)} left"
    )
    if result.errors:  # never "0 left" when a file was refused or could not be read
        n = len(result.errors)
        summary += f"; {n} error{'s' * (n != 1)} (above): those files were not fully fixed"
    print(summary + ".", file=report)
    return result.exit_code
