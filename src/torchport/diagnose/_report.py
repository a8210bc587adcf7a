"""Rendering of diagnose reports for people: rich tables and their plain-text form.

The reports themselves are plain dataclasses (facts); this module only draws them.
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from torchport.diagnose._sizes import format_bytes

if TYPE_CHECKING:
    from torchport.diagnose._audit import AuditEntry, AuditReport

__all__ = ["audit_text", "render_audit", "render_text"]


def _short_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


def _what(entry: AuditEntry) -> Text:
    text = Text(entry.label)
    if entry.would_sync and entry.kind != "transfer":
        text.append(" — would sync on an accelerator", style="dim")
    return text


def _summary(report: AuditReport) -> str:
    transfers, syncs = report.transfers, report.syncs
    copies = sum(e.count for e in transfers)
    waits = sum(e.count for e in syncs if not e.would_sync)
    would = sum(e.count for e in syncs if e.would_sync)
    parts = [
        f"{copies} cop{'y' if copies == 1 else 'ies'} ({format_bytes(report.total_bytes)})",
        f"{waits} host sync{'' if waits == 1 else 's'}",
    ]
    if would:
        parts.append(f"{would} point{'' if would == 1 else 's'} that would sync on an accelerator")
    line = "total: " + ", ".join(parts)
    if report.every > 1:
        line += (
            f"; recorded {report.recorded_steps} of {report.steps} steps (every={report.every}),"
            f" so counts are about 1/{report.every} of the run's"
        )
    if report.dropped:
        line += f"; {report.dropped} op(s) could not be described (please report this)"
    return line


def render_audit(report: AuditReport) -> RenderableType:
    """A table of the report's entries, costliest first, with totals underneath."""
    table = Table(
        title="torchport audit: copies and host syncs by source line", title_justify="left"
    )
    table.add_column("where")
    table.add_column("code")
    table.add_column("what")
    table.add_column("device")
    table.add_column("count", justify="right")
    table.add_column("bytes", justify="right")
    for entry in report.entries:
        table.add_row(
            # Text, not str: source such as "x[x > 0]" must not be read as rich markup
            Text(f"{_short_path(entry.file)}:{entry.line} in {entry.function}"),
            Text(entry.code),
            _what(entry),
            Text(entry.device),
            str(entry.count),
            format_bytes(entry.bytes) if entry.bytes else "-",
        )
    if not report.entries:
        return Group(
            Text("torchport audit: no copies between devices and no host syncs."),
            Text(_summary(report)),
        )
    return Group(table, Text(_summary(report)))


def render_text(renderable: RenderableType, *, width: int = 100) -> str:
    """Render a rich object to plain text (no colour codes) for ``str()`` and logs."""
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, force_terminal=False).print(renderable)
    return buffer.getvalue().rstrip("\n")


def audit_text(report: AuditReport, *, width: int = 160) -> str:
    """The rendered report as plain text (no colour), for ``str(report)`` and logs."""
    return render_text(render_audit(report), width=width)
