"""`torchport check --add-noqa`: mark each current finding with ``# noqa``, to adopt the checker."""

from __future__ import annotations

import argparse
import sys

from torchport.cli._options import settings
from torchport.cli._output import ProgressLine


def add_noqa(args: argparse.Namespace) -> int:
    """Run :func:`torchport.check.add_noqa_paths` with ``check``'s arguments; report on stderr."""
    from torchport.check import add_noqa_paths
    from torchport.errors import ConfigError

    if args.paths == ["-"]:
        raise ConfigError("--add-noqa writes files in place; give paths, not - (stdin)")
    paths = list(args.paths) or ["."]
    progress = ProgressLine("Marking", args)
    try:
        result = add_noqa_paths(
            paths,
            select=args.select,
            ignore=args.ignore,
            extend_select=args.extend_select,
            config=settings(args, paths),
            jobs=args.jobs,
            progress=progress,
        )
    finally:
        progress.close()
    for error in result.errors:
        print(error, file=sys.stderr)
    if not args.quiet:
        total = sum(result.added.values())
        files = len(result.added)
        print(
            f"Added noqa for {total} finding{'s' * (total != 1)} "
            f"in {files} file{'s' * (files != 1)}.",
            file=sys.stderr,
        )
    return result.exit_code
