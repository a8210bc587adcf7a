"""Draw the ``link`` suite's bandwidth against copy size, peaks marked (needs matplotlib)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from torchport._sizes import format_bytes
from torchport.bench._competitors import optional_import
from torchport.bench._model import BenchRun, Row
from torchport.errors import ConfigError


def require_matplotlib() -> ModuleType:
    """Return ``matplotlib.figure``.

    Raises:
        ConfigError: matplotlib is not installed; the message says how to install it.
    """
    figure = optional_import("matplotlib.figure")
    if figure is None:
        raise ConfigError(
            "--plot needs matplotlib, which is not installed; "
            "install it with: pip install 'torchport[bench]'"
        )
    return figure


def nothing_to_plot(run: BenchRun) -> str | None:
    """Why ``run`` has no bandwidth data to plot, or ``None`` when it has some."""
    link = next((suite for suite in run.suites if suite.name == "link"), None)
    if link is None:
        return "nothing to plot: the link suite was not run (add 'link' to the suites)"
    if link.skipped is not None:
        return f"nothing to plot: the link suite was skipped ({link.skipped})"
    if not _bandwidth_rows(run):
        return "nothing to plot: the link suite measured no bandwidth"
    return None


def _bandwidth_rows(run: BenchRun) -> list[Row]:
    return [
        row
        for suite in run.suites
        if suite.name == "link"
        for row in suite.rows
        if row.stats is not None and "gb_per_s" in row.metrics and "bytes" in row.metrics
    ]


def plot_bandwidth(run: BenchRun, path: Path) -> None:
    """Write a PNG of bandwidth (GB/s) against copy size (log scale), one line per
    direction and host memory kind, each line's peak circled and given in the legend.

    Raises:
        ConfigError: matplotlib is missing, or ``run`` has nothing to plot
            (the message says why; see :func:`nothing_to_plot`).
    """
    figure_module = require_matplotlib()
    reason = nothing_to_plot(run)
    if reason is not None:
        raise ConfigError(reason)
    series: dict[str, list[Row]] = {}
    for row in _bandwidth_rows(run):
        series.setdefault(row.strategy, []).append(row)
    figure = figure_module.Figure(figsize=(8, 5), layout="constrained")
    axes = figure.subplots()
    ticks: set[float] = set()
    for label, rows in series.items():
        rows.sort(key=lambda row: row.metrics["bytes"])
        sizes = [row.metrics["bytes"] for row in rows]
        speeds = [row.metrics["gb_per_s"] for row in rows]
        ticks.update(sizes)
        best = max(range(len(rows)), key=speeds.__getitem__)
        # the peak goes in the legend: annotations of close curves would overlap
        (line,) = axes.plot(
            sizes, speeds, marker="o", label=f"{label} (peak {speeds[best]:.1f} GB/s)"
        )
        axes.scatter(
            [sizes[best]], [speeds[best]], s=160, facecolors="none", edgecolors=line.get_color()
        )
    axes.set_xscale("log", base=2)
    axes.set_xticks(sorted(ticks), [format_bytes(size) for size in sorted(ticks)], rotation=45)
    axes.set_xlabel("copy size (log scale); circles mark each line's peak")
    axes.set_ylabel("bandwidth (GB/s)")
    axes.set_title(f"host<->device copy bandwidth, {run.device}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.savefig(path, dpi=120)
