"""Drawing the diagnose pillar's reports for people: rich renderables and their plain text.

The reports (:class:`~torchport.AuditReport`, :class:`~torchport.DoctorReport`,
:class:`~torchport.MemoryReport`) are dataclasses of facts; this is the one module that
draws them. It reads their attributes and imports none of their modules at run time,
so the reports can delegate ``str()`` and ``__rich__`` here without an import circle.
Plain text fits the terminal (between 80 and 120 columns) unless a width is given.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from torchport._sizes import format_bytes
from torchport.diagnose._bandwidth import NOT_REQUESTED
from torchport.diagnose._findings import Severity

if TYPE_CHECKING:
    from torchport.diagnose._audit import AuditEntry, AuditReport
    from torchport.diagnose._doctor import DoctorReport
    from torchport.diagnose._memory import MemoryReport
    from torchport.diagnose._oom import OomExplanation

__all__ = [
    "oom_text",
    "render",
    "render_audit",
    "render_doctor",
    "render_memory",
    "render_text",
]

_MIN_WIDTH, _MAX_WIDTH = 80, 120


def render(report: Any) -> RenderableType:
    """The rich renderable of any diagnose report.

    Raises:
        TypeError: ``report`` is not one of the pillar's reports.
    """
    drawer: Callable[[Any], RenderableType] | None = _DRAWERS.get(type(report).__name__)
    if drawer is None:
        raise TypeError(
            f"render() got a {type(report).__name__}; expected an AuditReport, DoctorReport "
            "or MemoryReport"
        )
    return drawer(report)


def render_text(report: Any, *, width: int | None = None) -> str:
    """A report (or any rich renderable) as plain text without colour, for ``str()`` and logs.

    Args:
        report: A diagnose report or a rich renderable.
        width: Columns; ``None`` fits the terminal, kept between 80 and 120.
    """
    renderable = render(report) if type(report).__name__ in _DRAWERS else report
    if width is None:
        columns = shutil.get_terminal_size(fallback=(100, 24)).columns
        width = min(max(columns, _MIN_WIDTH), _MAX_WIDTH)
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, force_terminal=False).print(renderable)
    return buffer.getvalue().rstrip("\n")


# -- audit ----------------------------------------------------------------------------


def _short_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


def _what(entry: AuditEntry) -> Text:
    text = Text(entry.label)
    if entry.would_sync:
        wait = "copy" if entry.kind == "transfer" else "sync"
        text.append(f" — would {wait} on an accelerator", style="dim")
    return text


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _audit_summary(report: AuditReport) -> str:
    transfers, syncs = report.transfers, report.syncs
    copies = sum(e.count for e in transfers if not e.would_sync)
    would_copy = sum(e.count for e in transfers if e.would_sync)
    waits = sum(e.count for e in syncs if not e.would_sync)
    would = sum(e.count for e in syncs if e.would_sync)
    parts = [
        f"{_plural(copies, 'copy', 'copies')} ({format_bytes(report.total_bytes)})",
        _plural(waits, "host sync", "host syncs"),
    ]
    if would_copy:
        parts.append(
            f"{_plural(would_copy, 'copy', 'copies')} ({format_bytes(report.would_copy_bytes)}) "
            "that would happen on an accelerator"
        )
    if would:
        parts.append(f"{_plural(would, 'point', 'points')} that would sync on an accelerator")
    line = "total: " + ", ".join(parts)
    if report.every > 1 and report.steps == 0:
        line += (
            f"; nothing recorded: audit(every={report.every}) records only steps marked with "
            "`with report.step():` and none was"
        )
    elif report.every > 1:
        line += (
            f"; recorded {report.recorded_steps} of {report.steps} steps (every={report.every}),"
            f" so counts are about 1/{report.every} of the run's"
        )
    if report.dropped:
        line += f"; {report.dropped} op(s) could not be described (please report this)"
    return line


def render_audit(report: AuditReport) -> RenderableType:
    """A table of the report's entries, costliest first, with totals underneath.

    The source line sits under its location rather than in a column of its own,
    so the table reads at 80 columns.
    """
    if not report.entries:
        return Group(
            Text("torchport audit: no copies between devices and no host syncs."),
            Text(_audit_summary(report)),
        )
    table = Table(
        title="torchport audit: copies and host syncs by source line", title_justify="left"
    )
    table.add_column("where / code", ratio=3)
    table.add_column("what", ratio=3)
    table.add_column("device", ratio=1)
    table.add_column("count", justify="right", no_wrap=True)
    table.add_column("bytes", justify="right", no_wrap=True)
    for entry in report.entries:
        # Text, not str: source such as "x[x > 0]" must not be read as rich markup
        where = Text(f"{_short_path(entry.file)}:{entry.line} in {entry.function}")
        if entry.code:
            where.append("\n" + entry.code, style="dim")
        table.add_row(
            where,
            _what(entry),
            Text(entry.device),
            str(entry.count),
            format_bytes(entry.bytes) if entry.bytes else "-",
        )
    return Group(table, Text(_audit_summary(report)))


# -- out of memory --------------------------------------------------------------------


def oom_text(explanation: OomExplanation) -> str:
    """One paragraph: the numbers the message stated, the cause and the next step."""
    e = explanation
    facts = [f"{e.backend.upper()} out of memory on {e.device or e.backend}"]
    if e.requested is not None:
        facts.append(f"tried to allocate {format_bytes(e.requested)}")
    if e.total is not None:
        free = f"{format_bytes(e.free)} free of " if e.free is not None else ""
        facts.append(f"{free}{format_bytes(e.total)}")
    if e.allowed is not None:
        facts.append(f"{format_bytes(e.allowed)} allowed to this process")
    if e.allocated is not None:
        facts.append(f"{format_bytes(e.allocated)} in PyTorch tensors")
    if e.reserved_unallocated is not None:
        facts.append(f"{format_bytes(e.reserved_unallocated)} cached but unusable")
    if e.other_processes:
        facts.append(f"{format_bytes(e.other_processes_total)} held by other processes")
    return f"{', '.join(facts)}. Cause: {e.case.value}. {e.next_step}"


# -- memory ---------------------------------------------------------------------------


def render_memory(report: MemoryReport) -> RenderableType:
    """A table with human-readable sizes; rows the backend did not report are left out."""
    table = Table(title=f"memory on {report.device}", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("size", justify="right")
    host = report.device.startswith("cpu")  # a device name (str), as memory_report writes it
    rows = (
        ("allocated (live tensors)", report.allocated),
        ("reserved by the allocator", report.reserved),
        ("peak allocated", report.peak_allocated),
        ("available RAM" if host else "free", report.free),
        ("total RAM" if host else "total", report.total),
        ("process RSS", report.process_rss),
        ("process peak RSS", report.process_peak_rss),
    )
    for label, value in rows:
        if value is not None:
            table.add_row(label, format_bytes(value))
    for note in report.notes:
        table.add_row("note", note)
    return table


# -- doctor ---------------------------------------------------------------------------

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def render_doctor(
    report: DoctorReport, *, bandwidth_hint: str = "pass bandwidth=True to doctor()"
) -> RenderableType:
    """The doctor report as rich tables: build, devices, environment, bandwidth, findings.

    Args:
        report: The facts.
        bandwidth_hint: How the reader asks for the bandwidth measurement when it was not
            made; the CLI names its ``--bandwidth`` flag.
    """
    env = Table(title="environment", show_header=False, title_justify="left")
    for name, value in report.environment.items():
        env.add_row(name, "(unset)" if value is None else repr(value))
    return Group(
        _doctor_build(report),
        _doctor_devices(report),
        env,
        _doctor_bandwidth(report, bandwidth_hint),
        _doctor_findings(report),
    )


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _gbps(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _doctor_build(report: DoctorReport) -> Table:
    table = Table(title="torch", show_header=False, title_justify="left")
    build = report.torch
    if build is not None:
        table.add_row("version", f"{build.version} ({build.kind})")
        table.add_row("python / platform", f"{build.python} / {build.platform}")
        if build.arch_list:
            table.add_row("compiled for", " ".join(build.arch_list))
        if build.cudnn is not None:
            table.add_row("cuDNN", str(build.cudnn))
    driver = report.driver
    if driver is not None and driver.runtime is not None:
        ok = {True: "supports it", False: "does NOT support it", None: "unknown"}
        table.add_row(
            "driver",
            f"{driver.version or 'not found'} for runtime {driver.runtime}: "
            f"{ok[driver.supports_runtime]}",
        )
    acc = report.accelerators
    if acc is not None:
        table.add_row("accelerator", f"{acc.current or 'none'} ({acc.count} device(s))")
        table.add_row("MPS / XPU", f"{_yes(acc.mps_available)} / {_yes(acc.xpu_available)}")
    host = report.host_memory
    if host is not None:
        table.add_row(
            "host RAM", f"{format_bytes(host.free)} available of {format_bytes(host.total)}"
        )
    if report.choice is not None:
        choice = report.choice
        table.add_row("pick_device()", f"{choice.device or 'fails'}: {choice.reason}")
    table.add_row("CUDA context created", _yes(report.cuda_context_created))
    return table


def _doctor_devices(report: DoctorReport) -> RenderableType:
    if not report.gpus:
        return Text("no CUDA/ROCm GPU visible")
    table = Table(title="GPUs", title_justify="left")
    for column in ("device", "name", "capability", "in build", "free", "total"):
        table.add_column(column)
    for gpu in report.gpus:
        in_build = {True: "yes", False: "NO", None: "?"}[gpu.supported_by_build]
        table.add_row(
            gpu.device,
            gpu.name,
            gpu.capability,
            in_build,
            format_bytes(gpu.free_memory),
            format_bytes(gpu.total_memory),
        )
    return Group(table, Text(f"free memory from: {report.gpus[0].free_memory_source}"))


def _doctor_bandwidth(report: DoctorReport, hint: str) -> RenderableType:
    bw = report.bandwidth
    if bw.device is None and bw.reason == NOT_REQUESTED:
        return Text(f"copy bandwidth: {bw.reason} ({hint})")
    if bw.device is None:
        return Text(f"copy bandwidth: {bw.reason}")
    table = Table(
        title=f"copy bandwidth, {format_bytes(bw.size_bytes)} copies, median of "
        f"{bw.repeats} (GB/s)",
        title_justify="left",
    )
    for column in ("direction", "pinned", "pageable"):
        table.add_column(column)
    for name, pinned, pageable in (
        (f"host -> {bw.device}", bw.h2d_pinned, bw.h2d_pageable),
        (f"{bw.device} -> host", bw.d2h_pinned, bw.d2h_pageable),
    ):
        table.add_row(name, _gbps(pinned), _gbps(pageable))
    return Group(table, Text(bw.reason)) if bw.reason else table


def _doctor_findings(report: DoctorReport) -> RenderableType:
    if not report.findings:
        return Text("no problems found", style="green")
    lines = Text()
    for finding in report.findings:
        lines.append(f"{finding.severity.value}: ", style=_STYLE[finding.severity])
        lines.append(f"{finding.message}\n  fix: {finding.fix}\n")
    return lines


_DRAWERS: dict[str, Callable[[Any], RenderableType]] = {
    "AuditReport": render_audit,
    "DoctorReport": render_doctor,
    "MemoryReport": render_memory,
}
