"""Turn a :class:`BenchRun` into rich tables (for people) or JSON (for programs)."""

from __future__ import annotations

import json
import math

from rich.console import Console
from rich.table import Table

from torchport._sizes import format_bytes
from torchport.bench._model import METRIC_LABELS, BenchRun, Check, Row, SuiteResult


def format_seconds(seconds: float) -> str:
    """``0.000123`` -> ``"123 µs"``: three significant figures in the nearest unit."""
    if math.isnan(seconds):
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_metric(key: str, value: float) -> str:
    """Render one metric for a table cell, in the unit its key implies."""
    if math.isnan(value):
        return "n/a"
    if key.endswith("bytes") or key == "bytes":
        return format_bytes(value)
    if key == "share_of_raw":
        return f"{value:.1f}%"
    if key.startswith("vs_"):
        return f"{value:.2f}x"
    return f"{value:.3g}"


def suite_tables(suite: SuiteResult) -> list[Table]:
    """One table per case: strategy, median, IQR, min, then every metric its rows carry.

    Splitting by case keeps each table narrow enough for an 80-column terminal.
    """
    cases: dict[str, list[Row]] = {}
    for row in suite.rows:
        cases.setdefault(row.case, []).append(row)
    tables = []
    for case, rows in cases.items():
        keys = list(dict.fromkeys(key for row in rows for key in row.metrics))
        table = Table(title=f"{suite.name}: {case}", title_justify="left")
        table.add_column("strategy")
        table.add_column("median", justify="right")
        table.add_column("IQR", justify="right")
        table.add_column("min", justify="right")
        for key in keys:
            table.add_column(METRIC_LABELS.get(key, key), justify="right")
        for row in rows:
            table.add_row(*_cells(row, keys))
        tables.append(table)
    return tables


def _cells(row: Row, keys: list[str]) -> list[str]:
    if row.stats is None:
        return [row.strategy, f"[dim]{row.status}[/dim]", "", "", *([""] * len(keys))]
    metrics = [format_metric(k, row.metrics[k]) if k in row.metrics else "" for k in keys]
    return [
        row.strategy,
        format_seconds(row.stats.median),
        format_seconds(row.stats.iqr),
        format_seconds(row.stats.minimum),
        *metrics,
    ]


def _check_line(check: Check) -> str:
    mark = "[green]PASS[/green]" if check.passed else "[red]MISS[/red]"
    # A check on an absolute time names its unit (µs) in its name; others are ratios.
    unit = " µs" if "µs" in check.name else "x"
    return f"{mark} {check.name}: {check.value:.2f}{unit} (target ≤ {check.target:g}{unit})"


def render_text(run: BenchRun, console: Console) -> None:
    """Print a header, then per suite its table, target checks and notes (or why it was skipped)."""
    console.print(
        f"torchport {run.torchport_version} bench on {run.device}; torch {run.torch_version}; "
        f"{run.machine}; {run.started}{' (quick)' if run.quick else ''}",
        highlight=False,
    )
    for suite in run.suites:
        if suite.skipped is not None:
            console.print(
                f"[yellow]{suite.name}: skipped[/yellow]: {suite.skipped}", highlight=False
            )
            continue
        for table in suite_tables(suite):
            console.print(table)
        for check in suite.checks:
            console.print(_check_line(check), highlight=False)
        for note in suite.notes:
            console.print(f"[dim]{note}[/dim]", highlight=False)


def render_json(run: BenchRun) -> str:
    """The run as indented JSON (see :meth:`BenchRun.to_dict` for the schema)."""
    return json.dumps(run.to_dict(), indent=2, ensure_ascii=False)
