"""What `fix` and `port` print: each changed file (or its diff), what is left, a summary."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import IO

    from torchport.check import FixResult


def _names() -> dict[str, tuple[str, str]]:
    from torchport.check import RULES

    return {r.code: (r.name, r.fix_safety.value) for r in RULES}


def report_changes(
    result: FixResult,
    args: argparse.Namespace,
    report: IO[str],
    applied: Collection[str],
    *,
    verbs: tuple[str, str, str],
    left_title: str = "",
) -> None:
    """Write diffs to stdout (``--diff``) and the rest of the report to ``report``.

    ``verbs``: (past tense per file, dry-run per file, summary verb), e.g.
    ``("fixed", "would fix", "Fixed")``. Findings left are listed at their place in
    the file as it now is (with ``--diff``: as it is on disk); the ones on lines a
    dry run would write are counted, not placed.
    """
    from torchport.check import quoted, render_text

    dry = bool(getattr(args, "diff", False) or getattr(args, "check", False))
    names = _names() if getattr(args, "show_fixes", False) else {}
    total = 0
    for change in result.changed:
        total += sum(change.fixed.values())
        if getattr(args, "diff", False):  # in the file's own encoding, so the patch applies
            sys.stdout.flush()
            sys.stdout.buffer.write(change.diff.encode(change.encoding, "surrogateescape"))
            sys.stdout.buffer.flush()
        if args.quiet:
            continue
        counts = ", ".join(f"{code} x{n}" for code, n in change.fixed.items())
        print(f"{verbs[1] if dry else verbs[0]} {quoted(change.path)}: {counts}", file=report)
        for code, n in change.fixed.items():
            if code in names:
                name, safety = names[code]
                print(f"    {n} x {code} {name} ({safety} fix)", file=report)
    for error in result.errors:
        print(error, file=sys.stderr)
    listed = bool(result.remaining or result.unplaced)
    if listed:
        if left_title and not args.quiet:
            print(left_title, file=report)
        report.write(
            render_text(
                result.remaining,
                applied=applied,
                unplaced=result.unplaced,
                unplaced_in=result.unplaced_in,
                plain=result.plain_fix,  # a speed rule the selection names needs no --speed
                summary=not args.quiet,
                rules=result.rules,
                held=result.held,  # never "0 left" alone over what a default run left out
            )
        )
    if args.quiet:
        return
    files = len(result.changed)
    verb = verbs[2] if not dry else verbs[1][0].upper() + verbs[1][1:]  # "Would fix"
    left = len(result.remaining) + result.unplaced
    summary = (
        f"{verb} {total} finding{'s' * (total != 1)} in {files} file{'s' * (files != 1)}; "
        f"{left} left"
    )
    if result.errors:  # never "0 left" when a file was refused or could not be read
        n = len(result.errors)
        summary += f"; {n} error{'s' * (n != 1)} (above): those files were not fully fixed"
    print(summary + ".", file=report)
    if result.held and not listed:  # never "0 left" alone over what a default run left out
        report.write(render_text([], applied=applied, held=result.held))
