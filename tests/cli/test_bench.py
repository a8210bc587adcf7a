"""`torchport bench`: arguments, exit codes, --json, --plot and the --quick overhead run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from torchport.bench import SUITE_NAMES
from torchport.cli import bench as bench_cli
from torchport.cli._main import main


def test_cli_suite_list_matches_the_registry() -> None:
    assert bench_cli.SUITE_NAMES == SUITE_NAMES


def test_bad_suite_name_exits_2_listing_suites(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "nope"]) == 2
    err = capsys.readouterr().err
    assert "'nope'" in err
    assert all(name in err for name in SUITE_NAMES)


def test_quick_overhead_json_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "overhead", "--quick", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)  # stdout is pure JSON; progress is on stderr
    assert data["quick"] is True
    (suite,) = data["suites"]
    assert suite["name"] == "overhead" and suite["skipped"] is None
    cases = {row["case"] for row in suite["rows"]}
    assert {"no-op move t.to('cpu')", "work t.to('meta')"} <= cases
    assert any(case.startswith("tiny MLP step") for case in cases)
    for row in suite["rows"]:
        assert set(row) == {"case", "strategy", "status", "stats", "metrics"}
        if row["status"] == "ok":
            assert set(row["stats"]) == {"median_s", "q1_s", "q3_s", "iqr_s", "min_s", "n"}
            assert row["stats"]["median_s"] > 0
        else:
            assert row["stats"] is None
    baseline = [r for r in suite["rows"] if r["strategy"] == "baseline"]
    assert len(baseline) == 2 and all(r["metrics"]["vs_baseline"] == 1.0 for r in baseline)
    for check in suite["checks"]:
        assert check["passed"] == (check["value"] <= check["target"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU behaviour")
def test_skipped_suite_is_reported_in_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "link"]) == 0
    out = capsys.readouterr().out
    assert "link: skipped" in out and "CUDA" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU behaviour")
def test_plot_with_nothing_measured_says_so_writes_nothing_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "bw.png"
    assert main(["bench", "link", "--plot", str(out)]) == 2
    assert "nothing to plot: no suite measured anything (link: " in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU behaviour")
def test_plot_on_a_cpu_draws_the_suites_that_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "bench.png"
    assert main(["bench", "link", "overhead", "--quick", "--plot", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # None: import raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert main(["bench", "link", "--plot", str(tmp_path / "bw.png")]) == 2
    assert "pip install 'torchport[bench]'" in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_quick_link_plot_on_cuda(tmp_path: Path) -> None:
    out = tmp_path / "bw.png"
    assert main(["bench", "link", "--quick", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_building_the_bench_parser_does_not_import_torch() -> None:
    import subprocess

    code = (
        "import argparse, sys; import torchport.cli.bench as b; "
        "b.register(argparse.ArgumentParser().add_subparsers()); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
