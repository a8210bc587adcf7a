"""`torchport check`: report device-hard-coded and slow PyTorch patterns in source files.

Exit codes: 0 clean (or ``--exit-zero``), 1 findings, 2 when a file could not be
read or parsed (it is named on stderr), a given folder held no Python file, or
the configuration or arguments are wrong.
"""

from __future__ import annotations

import contextlib
import gc
import sys

from torchport.cli._options import add_output, add_paths, add_selection, run_paths, settings
from torchport.cli._output import ProgressLine, report_stream

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator
    from typing import Any

# == torchport.check.FORMATS (tested); a copy, so that `--help` imports no checker
FORMATS = ("text", "concise", "grouped", "json", "sarif", "github", "gitlab", "junit")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "check",
        help="find device-hard-coded and slow PyTorch code",
        description="Report device-hard-coded, slow and unsafe-loading PyTorch patterns in "
        ".py, .pyi and .ipynb files (notebooks cell by cell: nb.ipynb:cell 3:2:5). "
        "Silence one line with '# noqa: TP101'. Exit 0 clean, 1 findings, 2 errors.",
    )
    add_paths(parser, jobs="1: each worker would read the whole project again")
    add_selection(parser)
    add_output(parser)
    parser.add_argument(
        "--format", choices=FORMATS, default="text",
        help="text: each finding with its source line marked; concise: one line each; "
        "grouped: by file; json; sarif; github: Actions annotations; gitlab: Code Quality "
        "JSON; junit: JUnit XML",
    )  # fmt: skip
    parser.add_argument(
        "--statistics", action="store_true", help="print the count per code instead of findings"
    )
    parser.add_argument(
        "--show-fixes", action="store_true",
        help="under each finding, the lines its fix writes and what it changes",
    )  # fmt: skip
    parser.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when there are findings"
    )
    parser.add_argument(
        "--add-noqa", action="store_true",
        help="append '# noqa: CODE' to every line with a finding, so that only new code is held "
        "to the rules (adopting torchport on an existing codebase)",
    )  # fmt: skip
    parser.add_argument(
        "--unused-noqa", action="store_true",
        help="also report '# noqa: TP...' codes that silence nothing any more",
    )  # fmt: skip
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument(
        "--cache-dir", metavar="DIR",
        help="keep the cache in DIR (default: .torchport_cache beside the configuration; "
        "also $TORCHPORT_CACHE_DIR)",
    )  # fmt: skip
    parser.add_argument(
        "--diff", action="store_true",
        help="print the diff a plain `torchport fix` would apply, and write nothing",
    )  # fmt: skip
    parser.add_argument(
        "--show-settings", action="store_true",
        help="print the settings the one PATH is checked with (its config, rules, target torch)",
    )  # fmt: skip
    parser.add_argument(
        "--show-files", action="store_true", help="print the files a check of PATH... covers"
    )
    parser.add_argument(
        "--explain", metavar="CODE", help="describe one rule, with examples (ALL lists them all)"
    )
    parser.set_defaults(handler=_run)


AS_PROGRAM = False  # set by cli/_main.main for the program's own check (no argv)
PAUSED: list[bool] = []  # the program's check left the collector paused for the exit (_run)


@contextlib.contextmanager
def _imports_kept() -> Iterator[None]:
    """``with _imports_kept(): import ...``: modules that live as long as the process.

    The checker's ~100 modules are a small check's start-up, and while they load the
    cyclic collector runs ~17 times, scanning every object they made so far (2-3 ms of a
    ~45 ms run); each later collection scanned them again. Run as the program, the
    collector is paused while they load and what they made is then frozen (``gc.freeze``:
    held for the process's life, as module objects are anyway, and never scanned).
    In-process (``main([...])``, the tests) nothing changes: a freeze would keep the
    caller's own garbage too.
    """
    if not (AS_PROGRAM and gc.isenabled()):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _pause_for_the_exit() -> None:
    """Run as the program, the process ends after this check (cli/_main.exit_now). The run
    pauses the cyclic collector while it checks (files/_work.no_cycle_scans); resumed, its
    first scan went over everything the run still held (every kept tree and answer: ~0.16 s
    on a 300-file tree) to free almost nothing the exit does not. So it stays paused."""
    if AS_PROGRAM and gc.isenabled():
        gc.disable()
        PAUSED.append(True)


def _run(args: argparse.Namespace) -> int:
    if args.jobs is None:  # one process, --diff and --add-noqa too (check_paths says why)
        args.jobs = 1
    if args.explain:
        from torchport.cli.rule import describe

        return describe(args.explain, args.format)
    if args.add_noqa:
        from torchport.cli.noqa import add_noqa

        return add_noqa(args)
    if args.show_settings or args.show_files:
        from torchport.cli._plan_output import show

        return show(args)
    if args.diff:  # what `fix` would change: fix's own dry run, with check's selection
        from torchport.cli import fix

        _pause_for_the_exit()
        args.unsafe = args.speed = False
        return fix.run(args)
    with _imports_kept():
        from torchport.check import check_paths, render, render_statistics

    paths, stdin, _ = run_paths(args)
    _pause_for_the_exit()
    with report_stream(args, sys.stdout) as (out, colour):
        progress = ProgressLine("Checking", args)
        try:
            result = check_paths(
                paths,
                stdin=stdin,
                select=args.select,
                ignore=args.ignore,
                extend_select=args.extend_select,
                config=settings(args, paths),
                jobs=args.jobs,
                cache=False if args.no_cache else (args.cache_dir or True),
                progress=progress,
                target_torch=args.target_torch,
                exits_after=AS_PROGRAM,  # (cli/_main.exit_now)
            )
        finally:
            progress.close()
        findings = result.findings
        if args.unused_noqa:
            findings = sorted([*findings, *result.unused_noqa], key=lambda f: (f.path, f.line))
        for error in result.errors:
            print(error, file=sys.stderr)
        if args.statistics:
            out.write(
                render_statistics(
                    findings,
                    args.format,
                    result.rules,
                    result.errors,
                    plain=result.plain_fix,
                    held=result.held,
                )
            )
        else:
            out.write(
                render(
                    args.format,
                    findings,
                    result.rules,
                    result.errors,
                    sources=result.sources,
                    color=colour,
                    show_fixes=args.show_fixes,
                    summary=not args.quiet,
                    plain=result.plain_fix,
                    held=result.held,
                )
            )
    if result.errors:
        return 2
    return 1 if findings and not args.exit_zero else 0
