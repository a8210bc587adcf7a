"""Drawing the diagnose pillar's reports for people: rich renderables and their plain text.

The reports (:class:`~torchport.AuditReport`, :class:`~torchport.DoctorReport`,
:class:`~torchport.MemoryReport`, :class:`~torchport.OomExplanation`) are dataclasses of
facts; this module draws them (the audit's, the memory report and the OOM explanation
here, the doctor's tables in :mod:`._doctor_drawing`): no other module of diagnose
draws with rich (:mod:`._rich_quietly` only imports it, keeping the program's random
state), and every report's ``str()`` and ``__rich__`` come to one of the two
(``tests/test_claims.py``). :func:`render` and :func:`render_text` draw any report. Both
modules read the reports' attributes and import none of their modules at run time, so the
reports can delegate ``str()`` and ``__rich__`` here without an import circle.
Plain text fits the terminal (between 80 and 120 columns) unless a width is given; a
source location is never cut to fit.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from torchport._device_types import CPU
from torchport._origin import installed_path
from torchport._sizes import format_bytes
from torchport.diagnose._doctor_drawing import render_doctor

if TYPE_CHECKING:
    from torchport.diagnose._audit import AuditEntry, AuditReport
    from torchport.diagnose._memory import MemoryReport
    from torchport.diagnose._oom_causes import OomExplanation

__all__ = [
    "oom_text",
    "render",
    "render_audit",
    "render_memory",
    "render_text",
    "short_path",
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

    Nothing is cropped: a line that cannot wrap (an audit location longer than the
    width) is printed whole and may run past the width.

    Args:
        report: A diagnose report or a rich renderable.
        width: Columns; ``None`` fits the terminal, kept between 80 and 120.
    """
    name = type(report).__name__
    if name == "AuditReport":
        renderable = render_audit(report, fold=False)
    else:
        renderable = render(report) if name in _DRAWERS else report
    if width is None:
        columns = shutil.get_terminal_size(fallback=(100, 24)).columns
        width = min(max(columns, _MIN_WIDTH), _MAX_WIDTH)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False)
    console.print(renderable, crop=False)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").splitlines())


# -- audit ----------------------------------------------------------------------------


def short_path(path: str, *, cwd: str | None = None) -> str:
    """``path`` as a reader finds it: relative to the working directory when inside it,
    from the package folder for installed code (``transformers/modeling_utils.py``),
    from the standard library's folder for its modules, else from ``~`` or whole.

    Only the part a reader does not need is dropped, and only from the left.
    """
    if path.startswith("<"):
        return path
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:  # another drive on Windows
        rel = ".."
    if not rel.startswith(".."):
        return rel
    installed = installed_path(path)
    if installed is not None:
        return installed
    home = os.path.expanduser("~") + os.sep
    if home != os.sep and path.startswith(home):
        return "~" + os.sep + path[len(home) :]
    return path


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
    if report.other_threads:
        line += (
            f"; {_plural(report.other_threads, 'other thread', 'other threads')} ran meanwhile: "
            "the audit watches only its own thread, so their copies and reads are not counted"
        )
    if report.dropped:
        line += f"; {report.dropped} op(s) could not be described (please report this)"
    for note, times in report.unpredicted.items():
        line += f"; not predicted ({times}×): {note}"  # noqa: RUF001
    return line


def _location(path: str, line: int, tail: str, *, fold: bool, before: str = "") -> Text:
    """``path:line`` and what follows it, on one line that is never cut.

    Plain text leaves a long line whole (the terminal wraps it, and it stays one line
    to copy or click); a rich console, which crops what it does not wrap, folds it.
    """
    text = Text(before, style="dim")
    text.append(f"{short_path(path)}:{line}" if line else short_path(path), style="bold")
    text.append(tail)
    if fold:
        text.overflow = "fold"
    else:
        text.no_wrap, text.overflow = True, "ignore"
    return text


def _entry_block(entry: AuditEntry, *, fold: bool, host_work: bool) -> list[RenderableType]:
    """One entry: its location line, the code, what happened and how often, indented."""
    function = f" in {entry.function}" if entry.function else ""
    block: list[RenderableType] = [_location(entry.file, entry.line, function, fold=fold)]
    if entry.code:
        # Text, not str: source such as "x[x > 0]" must not be read as rich markup
        block.append(Padding(Text(entry.code, style="dim", overflow="fold"), (0, 0, 0, 4)))
    if entry.via:
        via_path, _, via_line = entry.via.rpartition(":")
        # indented by hand: Padding crops what it cannot wrap
        block.append(_location(via_path, int(via_line), "", fold=fold, before="    through "))
    what = Text(f"{entry.count} × {entry.label}", overflow="fold")  # noqa: RUF001
    what.append(f" · {entry.device}")
    if entry.bytes:
        what.append(f" · {format_bytes(entry.bytes)}")
    if entry.would_sync:
        wait = "copy" if entry.kind == "transfer" else "sync"
        what.append(f" — would {wait} on an accelerator", style="dim")
    elif entry.phase and not host_work:
        what.append(f" — made during {entry.phase}", style="dim")
    block.append(Padding(what, (0, 0, 0, 4)))
    return block


def _loading_summary(report: AuditReport) -> str:
    events = sum(e.count for e in report.data_loading)
    lines = len({(e.file, e.line) for e in report.data_loading})
    return (
        f"data loading (host): {_plural(events, 'event', 'events')} at "
        f"{_plural(lines, 'line', 'lines')}, made while a DataLoader fetched batches; they "
        "run on the host in an accelerator run too, so no total above counts them"
    )


def render_audit(report: AuditReport, *, fold: bool = True) -> RenderableType:
    """The report's entries, costliest first, each under its ``path:line``, then the totals;
    then the data-loading part, apart.

    The location is never cut: paths are shortened from the left only (relative to
    the working directory, from ``site-packages``), and a location longer than the
    width is folded (``fold=True``, for rich consoles, which crop what they do not
    wrap) or left whole on its line (``fold=False``, for plain text).
    """
    parts: list[RenderableType] = []
    if report.entries:
        parts.append(Text("torchport audit: copies and host syncs by source line, costliest first"))
        for entry in report.entries:
            parts += _entry_block(entry, fold=fold, host_work=False)
    else:
        parts.append(Text("torchport audit: no copies between devices and no host syncs."))
    parts.append(Text(_audit_summary(report)))
    if report.data_loading:
        parts.append(Text(""))
        parts.append(Text(_loading_summary(report)))
        for entry in report.data_loading:
            parts += _entry_block(entry, fold=fold, host_work=True)
    return Group(*parts)


# -- out of memory --------------------------------------------------------------------


def oom_text(explanation: OomExplanation) -> str:
    """One paragraph: the numbers the message stated, each with its label, the cause and the
    next step."""
    e = explanation
    facts = [f"{e.backend.upper()} out of memory on {e.device or e.backend}"]
    if e.requested is not None:
        facts.append(f"tried to allocate {format_bytes(e.requested)}")
    memory = "RAM" if e.backend == CPU else "memory"
    free_word = "available" if e.backend == CPU else "free"
    if e.total is not None and e.free is not None:
        facts.append(f"{format_bytes(e.free)} {free_word} of {format_bytes(e.total)} {memory}")
    elif e.total is not None:
        facts.append(f"{format_bytes(e.total)} {memory} in all")
    elif e.free is not None:
        facts.append(f"{format_bytes(e.free)} {memory} {free_word}")
    if e.allowed is not None:
        by = f" by {e.allowed_by}" if e.allowed_by else ""
        facts.append(f"{format_bytes(e.allowed)} allowed to this process{by}")
    if e.this_process is not None:
        verb = "mapped" if e.allowed_by and "RLIMIT_AS" in e.allowed_by else "in use"
        facts.append(f"{format_bytes(e.this_process)} {verb} by this process")
    if e.allocated is not None:
        facts.append(f"{format_bytes(e.allocated)} in PyTorch tensors")
    if e.reserved_unallocated is not None:
        facts.append(f"{format_bytes(e.reserved_unallocated)} reserved by PyTorch but unallocated")
    if e.other_processes:
        facts.append(f"{format_bytes(e.other_processes_total)} held by other processes")
    return f"{', '.join(facts)}. Cause: {e.case.value}. {e.next_step}"


# -- memory ---------------------------------------------------------------------------


def _host_total(report: MemoryReport) -> str:
    """ "total RAM", or the limit the total is (a process under ``ulimit -v`` has no more)."""
    if report.total_is in (None, "RAM"):
        return "total RAM"
    return f"total (this process's limit: {report.total_is})"


def render_memory(report: MemoryReport) -> RenderableType:
    """A table with human-readable sizes; rows the backend did not report are left out."""
    table = Table(title=f"memory on {report.device}", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("size", justify="right")
    host = report.device.startswith(CPU)  # a device name (str), as memory_report writes it
    rows = (
        ("allocated (live tensors)", report.allocated),
        ("reserved by the allocator", report.reserved),
        ("peak allocated", report.peak_allocated),
        (
            ("available RAM" if report.total_is in (None, "RAM") else "available")
            if host
            else "free",
            report.free,
        ),
        (_host_total(report) if host else "total", report.total),
        ("process RSS", report.process_rss),
        ("process peak RSS", report.process_peak_rss),
    )
    for label, value in rows:
        if value is not None:
            table.add_row(label, format_bytes(value))
    for note in report.notes:
        table.add_row("note", note)
    return table


_DRAWERS: dict[str, Callable[[Any], RenderableType]] = {
    "AuditReport": render_audit,
    "DoctorReport": render_doctor,
    "MemoryReport": render_memory,
}
