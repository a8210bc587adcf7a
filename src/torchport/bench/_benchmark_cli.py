"""The command line every ``benchmarks/`` script shares: ``[--quick] [--json]``, then print."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from rich.console import Console

from torchport.bench._model import SuiteResult
from torchport.bench._render import render_json, render_text
from torchport.bench._suites import record


def script_main(
    doc: str,
    measure: Callable[[bool], Sequence[SuiteResult]],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse ``--quick``/``--json``, run ``measure(quick)``, and print tables or JSON.

    Args:
        doc: The script's docstring; its first line is the help text.
        measure: Runs the script's suites; gets whether ``--quick`` was given.
        argv: Arguments to parse instead of ``sys.argv[1:]`` (tests).

    Returns:
        The exit code: 0.
    """
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args(argv)
    run = record(list(measure(args.quick)), quick=args.quick)
    if args.json:
        print(render_json(run))
    else:
        render_text(run, Console())
    return 0
