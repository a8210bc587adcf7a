"""Draw every suite a bench run measured, one panel each (needs matplotlib).

The ``link`` suite is drawn as bandwidth against copy size, each line's peak
marked; every other suite that ran (on a CPU: ``overhead``) as the median time
per call of each strategy on each case, with the interquartile range, on a log
scale. Suites that were skipped (no GPU) are named in the figure's title, so a
CPU run still gives a picture of what ran, and says what did not.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from torchport._sizes import format_bytes
from torchport.bench._competitors import optional_import
from torchport.bench._model import BenchRun, Row, SuiteResult
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


def _measured(suite: SuiteResult) -> list[Row]:
    return [row for row in suite.rows if row.stats is not None]


def plotted_suites(run: BenchRun) -> list[SuiteResult]:
    """The suites of ``run`` that ran and measured something: one panel each."""
    return [s for s in run.suites if s.skipped is None and _measured(s)]


def nothing_to_plot(run: BenchRun) -> str | None:
    """Why ``run`` has nothing to plot (every suite skipped or empty), or ``None``."""
    if plotted_suites(run):
        return None
    if not run.suites:
        return "nothing to plot: no suite was run"
    why = "; ".join(f"{s.name}: {s.skipped or 'measured nothing'}" for s in run.suites)
    return f"nothing to plot: no suite measured anything ({why})"


def _link_panel(axes: Any, rows: list[Row]) -> None:
    series: dict[str, list[Row]] = {}
    for row in rows:
        if "gb_per_s" in row.metrics and "bytes" in row.metrics:
            series.setdefault(row.strategy, []).append(row)
    ticks: set[float] = set()
    for label, points in series.items():
        points.sort(key=lambda row: row.metrics["bytes"])
        sizes = [row.metrics["bytes"] for row in points]
        speeds = [row.metrics["gb_per_s"] for row in points]
        ticks.update(sizes)
        best = max(range(len(points)), key=speeds.__getitem__)
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
    axes.set_title("link: host<->device copy bandwidth")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")


def _timing_panel(axes: Any, suite: SuiteResult) -> None:
    rows = _measured(suite)
    labels = [f"{row.case} | {row.strategy}" for row in rows]
    medians = [row.stats.median * 1e6 for row in rows if row.stats is not None]
    low = [max(0.0, (row.stats.median - row.stats.q1) * 1e6) for row in rows if row.stats]
    high = [max(0.0, (row.stats.q3 - row.stats.median) * 1e6) for row in rows if row.stats]
    cases = list(dict.fromkeys(row.case for row in rows))
    colours = [f"C{cases.index(row.case) % 10}" for row in rows]
    positions = list(range(len(rows)))[::-1]
    axes.barh(positions, medians, xerr=[low, high], color=colours, alpha=0.8)
    axes.set_yticks(positions, labels, fontsize="small")
    axes.set_xscale("log")
    axes.set_xlabel("median time per call (µs, log scale); bars: interquartile range")
    axes.set_title(f"{suite.name}: each strategy on each case")
    axes.grid(True, axis="x", which="both", alpha=0.3)


def plot_run(run: BenchRun, path: Path) -> None:
    """Write a PNG with one panel per suite that measured something.

    Raises:
        ConfigError: matplotlib is missing, or no suite measured anything (the
            message says why; see :func:`nothing_to_plot`).
    """
    figure_module = require_matplotlib()
    reason = nothing_to_plot(run)
    if reason is not None:
        raise ConfigError(reason)
    suites = plotted_suites(run)
    heights = [
        5.0 if s.name == "link" else max(3.0, 0.28 * len(_measured(s)) + 1.5) for s in suites
    ]
    figure = figure_module.Figure(figsize=(11, sum(heights)), layout="constrained")
    panels = figure.subplots(len(suites), 1, squeeze=False, height_ratios=heights)[:, 0]
    for axes, suite in zip(panels, suites, strict=True):
        if suite.name == "link":
            _link_panel(axes, _measured(suite))
        else:
            _timing_panel(axes, suite)
    skipped = [s.name for s in run.suites if s.skipped is not None]
    title = f"torchport bench on {run.device}"
    if skipped:
        title += f" (skipped here: {', '.join(skipped)}, which need a GPU)"
    figure.suptitle(title)
    figure.savefig(path, dpi=110)


def plot_bandwidth(run: BenchRun, path: Path) -> None:
    """The figure of :func:`plot_run` (the name of the link-only figure it grew from)."""
    plot_run(run, path)


__all__ = ["nothing_to_plot", "plot_bandwidth", "plot_run", "plotted_suites", "require_matplotlib"]
