"""bench: how fast host<->device copies, packing, loaders and torchport's own walks are.

:func:`run_suites` runs named suites and returns a :class:`BenchRun` of facts;
:func:`render_text`, :func:`render_json` and :func:`plot_run` present it.
The per-suite functions are public so ``benchmarks/`` scripts reuse them
(wrapping their results with :func:`record`) instead of copying them.
"""

from __future__ import annotations

from torchport.bench._benchmark_cli import script_main
from torchport.bench._model import BenchRun, Check, Row, SuiteResult
from torchport.bench._plot import (
    nothing_to_plot,
    plot_bandwidth,
    plot_run,
    plotted_suites,
    require_matplotlib,
)
from torchport.bench._render import render_json, render_text, suite_tables
from torchport.bench._suite_batch import batch_transfer
from torchport.bench._suite_link import link_bandwidth
from torchport.bench._suite_loader import TimmStylePrefetcher, loader_overlap
from torchport.bench._suite_overhead_diagnose import diagnose_overhead
from torchport.bench._suite_overhead_traversal import traversal_overhead
from torchport.bench._suite_pack import pack_small_tensors
from torchport.bench._suites import (
    SUITE_NAMES,
    SUITES,
    accelerator,
    overhead,
    record,
    run_suites,
    select_suites,
)
from torchport.bench._timing import Stats, summarize, time_interleaved

__all__ = [
    "SUITES",
    "SUITE_NAMES",
    "BenchRun",
    "Check",
    "Row",
    "Stats",
    "SuiteResult",
    "TimmStylePrefetcher",
    "accelerator",
    "batch_transfer",
    "diagnose_overhead",
    "link_bandwidth",
    "loader_overlap",
    "nothing_to_plot",
    "overhead",
    "pack_small_tensors",
    "plot_bandwidth",
    "plot_run",
    "plotted_suites",
    "record",
    "render_json",
    "render_text",
    "require_matplotlib",
    "run_suites",
    "script_main",
    "select_suites",
    "suite_tables",
    "summarize",
    "time_interleaved",
    "traversal_overhead",
]
