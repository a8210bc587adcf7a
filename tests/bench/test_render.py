"""Results model, JSON schema, table rendering and the bandwidth plot."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from torchport.bench import (
    BenchRun,
    Check,
    Row,
    SuiteResult,
    nothing_to_plot,
    plot_run,
    plotted_suites,
    render_json,
    render_text,
    require_matplotlib,
    summarize,
)
from torchport.bench._render import format_metric, format_seconds
from torchport.errors import ConfigError


def _run(*suites: SuiteResult) -> BenchRun:
    return BenchRun(
        suites=suites,
        device="cuda:0 (test)",
        quick=True,
        started="2026-01-01T00:00:00+00:00",
        machine="test machine",
        torch_version="2.x",
        torchport_version="0.1.0",
    )


def _link_suite() -> SuiteResult:
    rows = []
    for strategy, scale in (("h2d pinned", 1.0), ("h2d pageable", 0.5)):
        for size, seconds in ((4096, 1e-5), (1 << 20, 1e-4), (1 << 26, 3e-3)):
            stats = summarize([seconds / scale, seconds / scale * 1.1])
            metrics = {"bytes": float(size), "gb_per_s": size / stats.median / 1e9}
            rows.append(Row(f"{size} B", strategy, stats, metrics))
    rows.append(Row("latency 4 B", "d2h .item()", summarize([2e-5])))
    return SuiteResult("link", tuple(rows), notes=("peak h2d pinned: ...",))


def test_check_passes_at_or_under_target() -> None:
    assert Check("x", 1.05, 1.05).passed
    assert not Check("x", 1.06, 1.05).passed


def test_json_schema() -> None:
    suite = SuiteResult(
        "overhead",
        rows=(
            Row("case", "mine", summarize([1.0, 2.0, 3.0]), {"vs_accelerate": 0.5}),
            Row("case", "accelerate", status="not installed: accelerate"),
        ),
        checks=(Check("mine / accelerate", 0.5, 0.8),),
        notes=("n",),
    )
    data = json.loads(render_json(_run(suite, SuiteResult("link", skipped="no GPU"))))
    assert data["schema"] == 1
    assert set(data) >= {"device", "quick", "started", "machine", "torch_version", "suites"}
    overhead, link = data["suites"]
    assert link == {"name": "link", "skipped": "no GPU", "notes": [], "rows": [], "checks": []}
    measured, missing = overhead["rows"]
    assert measured["stats"] == {
        "median_s": 2.0,
        "q1_s": 1.5,
        "q3_s": 2.5,
        "iqr_s": 1.0,
        "min_s": 1.0,
        "n": 3,
    }
    assert measured["metrics"] == {"vs_accelerate": 0.5}
    assert missing["stats"] is None and missing["status"] == "not installed: accelerate"
    assert overhead["checks"] == [
        {"name": "mine / accelerate", "value": 0.5, "target": 0.8, "passed": True}
    ]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(2.5, "2.5 s"), (0.0123, "12.3 ms"), (4.56e-5, "45.6 µs"), (3e-8, "30 ns")],
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


def test_format_metric_units() -> None:
    assert format_metric("bytes", 4096.0) == "4 KiB"
    assert format_metric("pinned_peak_bytes", 3 * 2**20 / 2) == "1.5 MiB"
    assert format_metric("share_of_raw", 93.14) == "93.1%"
    assert format_metric("vs_optree", 1.234) == "1.23x"
    assert format_metric("gb_per_s", 12.345) == "12.3"


def test_render_text_shows_tables_checks_skips_and_missing_rows() -> None:
    suite = SuiteResult(
        "overhead",
        rows=(
            Row("noop", "torchport.to_device", summarize([1e-3]), {"vs_accelerate": 0.7}),
            Row("noop", "accelerate send_to_device", status="not installed: accelerate"),
        ),
        checks=(Check("to_device / accelerate", 0.7, 0.8), Check("strict", 1.2, 1.05)),
        notes=("a note",),
    )
    console = Console(record=True, width=200)
    render_text(_run(suite, SuiteResult("link", skipped="needs a CUDA or ROCm GPU")), console)
    text = console.export_text()
    assert "overhead: noop" in text
    assert "torchport.to_device" in text and "0.70x" in text
    assert "not installed: accelerate" in text
    assert "PASS to_device / accelerate: 0.70x (target ≤ 0.8x)" in text
    assert "MISS strict: 1.20x (target ≤ 1.05x)" in text
    assert "link: skipped: needs a CUDA or ROCm GPU" in text
    assert "a note" in text


def _overhead_suite() -> SuiteResult:
    rows = tuple(
        Row(case, strategy, summarize([t, t * 1.2, t * 0.9]))
        for case, t in (("noop", 1e-6), ("work", 3e-5))
        for strategy in ("torchport.to_device", "accelerate send_to_device")
    )
    return SuiteResult("overhead", (*rows, Row("noop", "absent", None, status="not installed")))


def _png(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_plot_draws_a_panel_per_suite_that_measured_something(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    skipped = SuiteResult("pack", skipped="needs a CUDA or ROCm GPU")
    both = _run(_link_suite(), _overhead_suite(), skipped)
    assert [s.name for s in plotted_suites(both)] == ["link", "overhead"]
    assert nothing_to_plot(both) is None
    plot_run(both, tmp_path / "both.png")
    cpu = _run(SuiteResult("link", skipped="needs a CUDA or ROCm GPU"), _overhead_suite())
    assert [s.name for s in plotted_suites(cpu)] == ["overhead"]  # what a CPU machine runs
    plot_run(cpu, tmp_path / "cpu.png")
    (_, tall), (_, short) = _png(tmp_path / "both.png"), _png(tmp_path / "cpu.png")
    assert tall > short  # two panels against one


@pytest.mark.parametrize(
    ("suites", "reason"),
    [
        ((), "no suite was run"),
        ((SuiteResult("link", skipped="needs a CUDA or ROCm GPU"),), "link: needs a CUDA"),
        ((SuiteResult("link"),), "link: measured nothing"),
    ],
)
def test_nothing_to_plot_says_why_and_writes_nothing(
    tmp_path: Path, suites: tuple[SuiteResult, ...], reason: str
) -> None:
    pytest.importorskip("matplotlib")
    run = _run(*suites)
    why = nothing_to_plot(run)
    assert why is not None and reason in why
    out = tmp_path / "bw.png"
    with pytest.raises(ConfigError, match="nothing to plot"):
        plot_run(run, out)
    assert not out.exists()


def test_missing_matplotlib_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # a None entry in sys.modules makes `import` raise ImportError, as if uninstalled
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ConfigError, match=r"pip install 'torchport\[bench\]'"):
        require_matplotlib()
