"""Drawing the doctor's facts for people: rich tables, and Markdown for a bug report.

Reads the report's attributes and imports none of the report modules at run time (see
:mod:`._drawing`, which every report's ``str()`` goes through).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from torchport._sizes import format_bytes
from torchport.diagnose._bandwidth import NOT_REQUESTED
from torchport.diagnose._findings import Severity

if TYPE_CHECKING:
    from torchport.diagnose._doctor import DoctorReport

__all__ = ["doctor_markdown", "render_doctor"]

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _facts_table(title: str) -> Table:
    """A two-column table of name and value; long values fold, none is cut."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("what", overflow="fold")
    table.add_column("value", overflow="fold")
    return table


def render_doctor(
    report: DoctorReport, *, bandwidth_hint: str = "pass bandwidth=True to doctor()"
) -> RenderableType:
    """The doctor report as rich tables: versions, host, devices, environment, bandwidth,
    findings. Every value folds to the width; nothing is cut.

    Args:
        report: The facts.
        bandwidth_hint: How the reader asks for the bandwidth measurement when it was not
            made; the CLI names its ``--bandwidth`` flag.
    """
    env = _facts_table("environment")
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


def _facts(report: DoctorReport) -> list[tuple[str, str]]:
    """(name, value) of the report's versions and host facts, in reading order.

    One list for the table and the paste-ready Markdown, so the two never disagree.
    """
    rows: list[tuple[str, str]] = []
    host = report.host
    build = report.torch
    if host is not None:
        rows.append(("torchport", host.torchport))
    if build is not None:
        rows.append(("torch", f"{build.version} ({build.kind})"))
        rows.append(("Python", build.python))
    if host is not None:
        rows.append(("NumPy", host.numpy or "not installed"))
        others = [f"{name} {version}" for name, version in host.libraries if name != "numpy"]
        rows.append(("libraries", ", ".join(others) or "none of the companions"))
        rows.append(("OS", host.os))
        rows.append(("CPU", host.cpu_model or "unknown"))
        toolkit = host.cuda_toolkit
        if toolkit is not None:
            beside = (
                "; torch is a CPU-only build"
                if build is not None and not (build.cuda or build.hip)
                else ""
            )
            rows.append(
                (
                    "host CUDA toolkit",
                    f"{toolkit.version or 'release unknown'} ({toolkit.nvcc}, via "
                    f"{toolkit.found_by}){beside}",
                )
            )
        else:
            rows.append(("host CUDA toolkit", "none found (nvcc not on PATH or CUDA_HOME)"))
    if build is not None:
        rows.append(("platform", build.platform))
        if build.arch_list:
            rows.append(("compiled for", " ".join(build.arch_list)))
        if build.cudnn is not None:
            rows.append(("cuDNN", str(build.cudnn)))
    if host is not None:
        usable = []
        if host.usable_cpus is not None:
            usable.append(f"{host.usable_cpus} usable by this process")
        if host.cpu_quota is not None:
            usable.append(f"container quota {host.cpu_quota:g}")
        detail = f" ({', '.join(usable)})" if usable else ""
        rows.append(("CPUs", f"{host.cpu_count if host.cpu_count is not None else '?'}{detail}"))
        rows.append(
            (
                "torch threads",
                f"{host.torch_threads} per op, {host.torch_interop_threads} between ops",
            )
        )
    driver = report.driver
    if driver is not None and driver.runtime is not None:
        ok = {True: "supports it", False: "does NOT support it", None: "unknown"}
        rows.append(
            (
                "driver",
                f"{driver.version or 'not found'} for runtime {driver.runtime}: "
                f"{ok[driver.supports_runtime]}",
            )
        )
    acc = report.accelerators
    if acc is not None:
        rows.append(("accelerator", f"{acc.current or 'none'} ({acc.count} device(s))"))
        rows.append(("MPS / XPU", f"{_yes(acc.mps_available)} / {_yes(acc.xpu_available)}"))
    ram = report.host_memory
    if ram is not None:
        rows.append(
            ("host RAM", f"{format_bytes(ram.free)} available of {format_bytes(ram.total)}")
        )
    if report.choice is not None:
        choice = report.choice
        rows.append(("pick_device()", f"{choice.device or 'fails'}: {choice.reason}"))
    rows.append(("CUDA context created", _yes(report.cuda_context_created)))
    return rows


def _doctor_build(report: DoctorReport) -> Table:
    table = _facts_table("versions and host")
    for name, value in _facts(report):
        table.add_row(name, value)
    return table


def _doctor_devices(report: DoctorReport) -> RenderableType:
    if not report.gpus:
        return Text("no CUDA/ROCm GPU visible")
    table = Table(title="GPUs", title_justify="left")
    for column in ("device", "name", "capability", "in build", "free", "total"):
        table.add_column(column, overflow="fold")
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
        table.add_column(column, overflow="fold")
    for name, pinned, pageable in (
        (f"host -> {bw.device}", bw.h2d_pinned, bw.h2d_pageable),
        (f"{bw.device} -> host", bw.d2h_pinned, bw.d2h_pageable),
    ):
        table.add_row(name, _gbps(pinned), _gbps(pageable))
    notes = [Text(bw.reason)] if bw.reason else []
    if bw.link is not None and bw.link_peak is not None:
        notes.append(Text(f"link: {bw.link}, peak {_gbps(bw.link_peak)} GB/s each way"))
    return Group(table, *notes) if notes else table


def _doctor_findings(report: DoctorReport) -> RenderableType:
    if not report.findings:
        return Text("no problems found", style="green")
    lines = Text(overflow="fold")
    for finding in report.findings:
        lines.append(f"{finding.severity.value}: ", style=_STYLE[finding.severity])
        lines.append(f"{finding.message}\n  fix: {finding.fix}\n")
    return lines


def doctor_markdown(report: DoctorReport) -> str:
    """The report as a Markdown list to paste into a bug report, one fact per line.

    Plain ``- name: value`` lines: they read as text too, and no line is wrapped or cut
    (a pasted report is re-wrapped by whatever shows it).
    """
    lines = [f"- {name}: {value}" for name, value in _facts(report)]
    for gpu in report.gpus:
        in_build = {True: "in build", False: "NOT in build", None: "build support unknown"}
        lines.append(
            f"- GPU {gpu.device}: {gpu.name}, capability {gpu.capability or '?'} "
            f"({in_build[gpu.supported_by_build]}), {format_bytes(gpu.free_memory)} free of "
            f"{format_bytes(gpu.total_memory)}"
        )
    set_vars = {name: value for name, value in report.environment.items() if value is not None}
    shown = ", ".join(f"{name}={value!r}" for name, value in set_vars.items()) or "none set"
    lines.append(f"- environment: {shown}")
    bw = report.bandwidth
    if bw.device is not None:
        lines.append(
            f"- copy bandwidth to {bw.device} (GB/s, pinned/pageable): "
            f"{_gbps(bw.h2d_pinned)}/{_gbps(bw.h2d_pageable)}; back: "
            f"{_gbps(bw.d2h_pinned)}/{_gbps(bw.d2h_pageable)}"
            + (f"; link {bw.link}, peak {_gbps(bw.link_peak)}" if bw.link_peak else "")
        )
    if report.findings:
        lines.append("- findings:")
        lines += [f"  - {f.severity.value}: {f.message} (fix: {f.fix})" for f in report.findings]
    else:
        lines.append("- findings: none")
    return "\n".join(lines)
