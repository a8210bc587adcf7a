"""`torchport port`: rewrite CPU-only PyTorch code to run on the accelerator when there is one.

Exit codes: 0 when everything was ported (with ``--diff``/``--check``: nothing
would change), 1 when something could not be ported (or, with ``--diff`` and
``--check``, when files would change), 2 on errors (a file that does not parse
is left as it is).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "port",
        help="port CPU-only PyTorch code to the accelerator, in place",
        description="Rewrite code that names no device into device-agnostic plain PyTorch: "
        "one `device`, the model and every batch moved to it, `map_location`, pinned "
        "loaders. Same results on the CPU. Exit 0 when all is ported, 1 when something "
        "could not be (or would change, with --diff/--check), 2 on errors.",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH",
        help="files or folders (default: .); - ports stdin to stdout",
    )  # fmt: skip
    parser.add_argument(
        "--diff", action="store_true", help="print a unified diff and write nothing"
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a file would change"
    )
    parser.add_argument(
        "--config", metavar="FILE", help="a TOML file with a [tool.torchport] table"
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from torchport.check import port_paths, render_text
    from torchport.cli.check import read_stdin
    from torchport.cli.fix import write_stdin_result

    dry = args.diff or args.check
    stdin = read_stdin(args.paths)
    result = port_paths(args.paths or ["."], diff=dry, config=args.config, stdin=stdin)
    # With --diff, stdout is a clean patch; with -, the ported text; the report goes to stderr.
    report = sys.stderr if args.diff or stdin is not None else sys.stdout
    if stdin is not None and not dry:
        write_stdin_result(result.changed[0] if result.changed else None, stdin)
    for change in result.changed:
        counts = ", ".join(f"{code} x{n}" for code, n in change.fixed.items())
        if args.diff:
            sys.stdout.write(change.diff)
        print(f"{'would port' if dry else 'ported'} {change.path}: {counts}", file=report)
    for error in result.errors:
        print(error, file=sys.stderr)
    if result.remaining:
        print("Could not port (move these yourself):", file=report)
        report.write(render_text(result.remaining))
    files = len(result.changed)
    print(
        f"{'Would port' if dry else 'Ported'} {files} file{'s' * (files != 1)}; "
        f"{len(result.remaining)} finding{'s' * (len(result.remaining) != 1)} left.",
        file=report,
    )
    if result.errors:
        return 2
    return 1 if result.remaining or (dry and result.changed) else 0
