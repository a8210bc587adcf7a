"""`torchport port`: rewrite CPU-only PyTorch code to run on the accelerator when there is one.

``torchport port -`` ports stdin and prints the result. Exit codes: 0 when
everything was ported (with ``--diff``/``--check``: nothing would change), 1 when
something could not be ported (or, with ``--diff`` and ``--check``, when files
would change), 2 on errors (a file that does not parse is left as it is).
"""

from __future__ import annotations

import argparse
import os
import sys

from torchport.cli._change_report import report_changes
from torchport.cli._options import add_output, add_paths, run_paths, settings
from torchport.cli._output import ProgressLine, report_stream

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

# What the port's count of findings left cannot promise: it comes from reading the code.
_UNVERIFIED = (
    "Not verified by running: what is left counts only what the port could see in the "
    "code; `torchport port --verify` runs the result on the simulated accelerator."
)


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "port",
        help="port CPU-only PyTorch code to the accelerator, in place",
        description="Rewrite code that names no device into device-agnostic plain PyTorch: "
        "one `device`, the model and every batch moved to it, `map_location`, pinned "
        "loaders. Same results on the CPU. Exit 0 when all is ported, 1 when something "
        "could not be (or would change, with --diff/--check), 2 on errors.",
    )
    add_paths(parser)
    add_output(parser)
    parser.add_argument(
        "--diff", action="store_true", help="print a unified diff and write nothing"
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a file would change"
    )
    parser.add_argument(
        "--verify-timeout", type=float, default=120.0, metavar="S",
        help="with --verify: stop each of its two runs after S seconds (default 120)",
    )  # fmt: skip
    parser.add_argument(
        "--verify", nargs=argparse.REMAINDER, default=None, metavar="-- ARGS",
        help="last: run the ported entry (the file given, or a folder's one script no "
        "other file imports) on the simulated accelerator with ARGS, and report what it "
        "left",
    )  # fmt: skip
    parser.add_argument(
        "--ignore", action="extend", default=[], metavar="CODES",
        type=lambda text: [c.strip() for c in text.split(",") if c.strip()],
        help="comma-separated port rules (TP5xx) to leave out",
    )  # fmt: skip
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from torchport.check import port_paths

    paths, stdin, encoding = run_paths(args)
    dry = args.diff or args.check
    swallowed = _path_after_verify(args)
    if swallowed is not None:
        print(f"torchport port: error: --verify takes the rest of the line as the entry "
              f"script's arguments, so {swallowed!r} would be passed to the script while "
              f"the whole working folder is ported; name the paths first: torchport port "
              f"{swallowed} --verify (or pass it on purpose: --verify -- {swallowed})",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.verify is not None and (dry or stdin is not None):
        print("torchport port: error: --verify runs the ported files: use it without "
              "--diff, --check or stdin", file=sys.stderr)  # fmt: skip
        return 2
    default = sys.stderr if args.diff or stdin is not None else sys.stdout
    with report_stream(args, default) as (report, _):  # before any file is written
        progress = ProgressLine("Porting", args)
        try:
            result = port_paths(
                paths,
                diff=dry,
                ignore=args.ignore,
                config=settings(args, paths),
                target_torch=args.target_torch,
                jobs=args.jobs,
                stdin=stdin,
                progress=progress,
            )
        finally:
            progress.close()
        if stdin is not None and not dry:  # the ported text, in stdin's own encoding
            text = (result.changed[0].text or "") if result.changed else stdin
            sys.stdout.flush()
            sys.stdout.buffer.write(text.encode(encoding, "surrogateescape"))
            sys.stdout.buffer.flush()
        report_changes(
            result, args, report, ("safe", "speed", "unsafe"),
            verbs=("ported", "would port", "Ported"),
            left_title="Could not port (move these yourself):",
        )  # fmt: skip
        verified = None
        if args.verify is not None and not result.errors:
            verified = _verify(paths, args)
            choices = [f"{f.path}:{f.line}" for f in result.remaining if f.code == "TP109"]
            left = len(result.remaining) + result.unplaced
            print(verified.summary(left, choices), file=report)
        elif not args.quiet and not result.errors:
            print(_UNVERIFIED, file=report)
    if result.errors:
        return 2
    if verified is not None and not verified.verified:
        return 1
    return 1 if result.remaining or result.unplaced or (dry and result.changed) else 0


def _path_after_verify(args: argparse.Namespace) -> str | None:
    """The path a user wrote after ``--verify`` meaning it to be ported, or None.

    With no PATH before it, ``port --verify train.py`` would port the working folder
    and hand ``train.py`` to the script as an argument: never what was meant when
    ``train.py`` exists, also behind an option (``port --verify --no-progress
    train.py``). An explicit ``--`` first says the arguments are the script's.
    """
    if args.paths or not args.verify or args.verify[0] == "--":
        return None
    return next((str(a) for a in args.verify if os.path.exists(str(a))), None)


def _verify(paths: list[str], args: argparse.Namespace) -> Any:
    """Run the ported entry on the simulated accelerator (a child process)."""
    from torchport.check import verify_entry

    return verify_entry(paths, list(args.verify), timeout=args.verify_timeout)
