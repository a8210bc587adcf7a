"""The facts a bench run produces: rows, target checks, suite results, the run.

Suites build these; :mod:`torchport.bench._render` turns them into a table,
JSON or a plot. Nothing here measures or prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from torchport.bench._timing import Stats


@dataclass(frozen=True)
class Row:
    """One strategy measured on one case.

    Attributes:
        case: What was measured, e.g. ``"h2d pinned 64 MiB"``.
        strategy: How, e.g. ``"torchport.to_device"`` or ``"accelerate send_to_device"``.
        stats: Seconds per call; ``None`` when the strategy could not run.
        metrics: Derived numbers keyed by a name from ``METRIC_LABELS``.
        status: ``"ok"``, or why there is no measurement (``"not installed: accelerate"``).
    """

    case: str
    strategy: str
    stats: Stats | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    status: str = "ok"


@dataclass(frozen=True)
class Check:
    """A measured ratio against the project's target for it (lower is better).

    Attributes:
        name: What is compared, e.g. ``"to_device / accelerate (no-op move)"``.
        value: The measured ratio.
        target: The largest acceptable ratio.
    """

    name: str
    value: float
    target: float

    @property
    def passed(self) -> bool:
        """Whether the measured ratio is within the target."""
        return self.value <= self.target


@dataclass(frozen=True)
class SuiteResult:
    """Everything one suite found, or why it did not run.

    Attributes:
        name: The suite name (``"link"``, ``"overhead"``, ...).
        rows: The measurements.
        checks: Ratios compared with their targets.
        notes: Facts a reader needs to interpret the rows (sizes, which library
            version stood in for which).
        skipped: Why the suite did not run; ``None`` when it ran.
    """

    name: str
    rows: tuple[Row, ...] = ()
    checks: tuple[Check, ...] = ()
    notes: tuple[str, ...] = ()
    skipped: str | None = None


@dataclass(frozen=True)
class BenchRun:
    """One ``torchport bench`` invocation.

    Attributes:
        suites: The results, in the order they ran.
        device: The device the accelerator suites used, or ``"cpu"``.
        quick: Whether the reduced sizes and repeats were used.
        started: UTC time the run began, ISO 8601.
        machine: ``platform.platform()`` and the processor, for the record.
        torch_version: ``torch.__version__``.
        torchport_version: ``torchport.__version__``.
    """

    suites: tuple[SuiteResult, ...]
    device: str
    quick: bool
    started: str
    machine: str
    torch_version: str
    torchport_version: str

    def to_dict(self) -> dict[str, Any]:
        """Return the run as plain JSON-ready data (schema version 1).

        Each row's ``stats`` becomes ``{median_s, q1_s, q3_s, iqr_s, min_s, n}``
        or ``null``; each check gains ``passed``.
        """
        return {
            "schema": 1,
            "device": self.device,
            "quick": self.quick,
            "started": self.started,
            "machine": self.machine,
            "torch_version": self.torch_version,
            "torchport_version": self.torchport_version,
            "suites": [_suite_dict(suite) for suite in self.suites],
        }


def _stats_dict(stats: Stats | None) -> dict[str, float] | None:
    if stats is None:
        return None
    return {
        "median_s": stats.median,
        "q1_s": stats.q1,
        "q3_s": stats.q3,
        "iqr_s": stats.iqr,
        "min_s": stats.minimum,
        "n": stats.n,
    }


def _suite_dict(suite: SuiteResult) -> dict[str, Any]:
    return {
        "name": suite.name,
        "skipped": suite.skipped,
        "notes": list(suite.notes),
        "rows": [
            {
                "case": row.case,
                "strategy": row.strategy,
                "status": row.status,
                "stats": _stats_dict(row.stats),
                "metrics": dict(row.metrics),
            }
            for row in suite.rows
        ],
        "checks": [{**asdict(check), "passed": check.passed} for check in suite.checks],
    }


# Metric key -> column heading. Keys are stable (they are the JSON schema);
# headings are for people.
METRIC_LABELS: dict[str, str] = {
    "bytes": "bytes",
    "gb_per_s": "GB/s",
    "us_per_leaf": "µs/leaf",
    "us_per_call": "µs/call",
    "us_per_batch": "µs/batch",
    "us_over_bare": "µs over bare",
    "us_per_tensor": "µs/tensor",
    "vs_accelerate": "x accelerate",
    "vs_optree": "x optree",
    "vs_baseline": "x baseline",
    "share_of_raw": "% of raw pinned",
    "vs_bound": "x max(copy,compute)",
    "pinned_peak_bytes": "pinned peak",
    "pinned_budget_bytes": "depth x batch",
    "vs_per_tensor": "x per-tensor",
}
