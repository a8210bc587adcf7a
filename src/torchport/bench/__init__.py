"""bench: how fast host<->device copies, packing, loaders and torchport's own walks are.

:func:`run_suites` runs named suites and returns a :class:`BenchRun` of facts;
:func:`render_text`, :func:`render_json` and :func:`plot_bandwidth` present it.
The per-suite functions are public so ``benchmarks/`` scripts reuse them.
"""

from __future__ import annotations

from torchport.bench._model import BenchRun, Check, Row, SuiteResult
from torchport.bench._plot import nothing_to_plot, plot_bandwidth, require_matplotlib
from torchport.bench._render import render_json, render_text, suite_tables
from torchport.bench._suites import SUITE_NAMES, SUITES, overhead, run_suites, select_suites
from torchport.bench._timing import Stats, summarize, time_interleaved

__all__ = [
    "SUITES",
    "SUITE_NAMES",
    "BenchRun",
    "Check",
    "Row",
    "Stats",
    "SuiteResult",
    "nothing_to_plot",
    "overhead",
    "plot_bandwidth",
    "render_json",
    "render_text",
    "require_matplotlib",
    "run_suites",
    "select_suites",
    "suite_tables",
    "summarize",
    "time_interleaved",
]
