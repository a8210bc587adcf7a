"""`torchport check`: report device-hard-coded and slow PyTorch patterns in source files.

Exit codes: 0 clean, 1 findings, 2 when a file could not be read or parsed (it is
named on stderr) or the configuration is wrong.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

# == torchport.check.FORMATS (tested); a copy, so that `--help` imports no checker
FORMATS = ("text", "json", "sarif", "github")


def _codes(text: str) -> list[str]:
    return [code.strip() for code in text.split(",") if code.strip()]


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments that `check` and `fix` share: paths, rule selection, config, jobs."""
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or folders (default: .); - reads stdin"
    )
    parser.add_argument(
        "--select", type=_codes, action="extend", metavar="CODES",
        help="comma-separated codes or prefixes to run instead of the defaults (TP1,TP201; ALL)",
    )  # fmt: skip
    parser.add_argument(
        "--ignore", type=_codes, action="extend", default=[], metavar="CODES",
        help="comma-separated codes or prefixes to skip",
    )  # fmt: skip
    parser.add_argument(
        "--extend-select", type=_codes, action="extend", default=[], metavar="CODES",
        help="codes or prefixes to run in addition to the selection (e.g. the noisy TP9xx)",
    )  # fmt: skip
    parser.add_argument(
        "--config", metavar="FILE",
        help="a TOML file with a [tool.torchport] table (default: the nearest pyproject.toml)",
    )  # fmt: skip
    parser.add_argument(
        "--stdin-filename", metavar="PATH", help="the name of the text read with -, for config"
    )
    parser.add_argument(
        "--jobs", "-j", type=int, metavar="N",
        help="worker processes (default: one per core when there are many files)",
    )  # fmt: skip


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "check",
        help="find device-hard-coded and slow PyTorch code",
        description="Report device-hard-coded, slow and unsafe-loading PyTorch patterns in "
        ".py, .pyi and .ipynb files (notebooks cell by cell: nb.ipynb:cell 3:2:5). "
        "Silence one line with '# noqa: TP101'. Exit 0 clean, 1 findings, 2 errors.",
    )
    add_selection_arguments(parser)
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    parser.add_argument(
        "--statistics", action="store_true", help="print the count per code instead of findings"
    )
    parser.add_argument("--explain", metavar="CODE", help="describe one rule, with examples")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.explain:
        from torchport.check import explain

        sys.stdout.write(explain(args.explain).rstrip("\n") + "\n")
        return 0
    from torchport.check import check_paths, render, render_statistics

    if args.statistics and args.format == "sarif":
        print(
            "torchport: error: --statistics prints counts as text, json or github, and SARIF "
            "holds findings: drop --statistics for SARIF, or pick another --format",
            file=sys.stderr,
        )
        return 2
    stdin = sys.stdin.read() if args.paths == ["-"] else None
    result = check_paths(
        [args.stdin_filename or "-"] if stdin is not None else args.paths or ["."],
        stdin=stdin,
        select=args.select,
        ignore=args.ignore,
        extend_select=args.extend_select,
        config=args.config,
        jobs=args.jobs,
    )
    for error in result.errors:
        print(error, file=sys.stderr)
    if args.statistics:
        sys.stdout.write(render_statistics(result.findings, args.format))
    else:
        sys.stdout.write(render(args.format, result.findings, result.rules, result.errors))
    return result.exit_code
