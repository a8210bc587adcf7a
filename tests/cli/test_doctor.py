"""`torchport doctor`: text and JSON output, exit codes, --bandwidth on a CPU machine."""

from __future__ import annotations

import json

import pytest
import torch

from torchport.cli._main import main
from torchport.diagnose import _env

# A CUDA or ROCm wheel on a machine without a GPU (.ci/run's newest-torch leg, a user's
# laptop) is itself an error doctor reports (exit 1): the tests of what doctor prints expect
# the exit code of this machine's verdict, and the healthy report's test a CPU-only build.
GPU_BUILD = torch.version.cuda is not None or torch.version.hip is not None


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _env.ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def verdict(clean_env: None) -> int:
    """The exit code doctor owes this machine: 0 without an error finding, else 1."""
    from torchport.diagnose import doctor

    return 0 if doctor().ok else 1


@pytest.mark.skipif(GPU_BUILD, reason="pins doctor's verdict on a CPU-only torch build")
def test_text_report_exits_zero_when_healthy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert torch.__version__ in out
    assert "pick_device()" in out and "no problems found" in out


def test_json_parses(capsys: pytest.CaptureFixture[str], verdict: int) -> None:
    assert main(["doctor", "--json"]) == verdict
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is (verdict == 0)
    assert data["torch"]["version"] == torch.__version__
    assert data["choice"]["device"] is not None and data["choice"]["reason"]


def test_error_finding_exits_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TORCHPORT_DEVICE", "bogus")
    assert main(["doctor", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert any("TORCHPORT_DEVICE" in f["message"] for f in data["findings"])
    assert main(["doctor"]) == 1
    assert "error: TORCHPORT_DEVICE='bogus'" in capsys.readouterr().out


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU machine measures real bandwidth")
def test_bandwidth_on_cpu_says_not_applicable(
    capsys: pytest.CaptureFixture[str], verdict: int
) -> None:
    assert main(["doctor", "--bandwidth"]) == verdict
    assert "not applicable" in capsys.readouterr().out
    assert main(["doctor", "--bandwidth", "--json"]) == verdict
    bandwidth = json.loads(capsys.readouterr().out)["bandwidth"]
    assert bandwidth["device"] is None and "not applicable" in bandwidth["reason"]
    assert bandwidth["h2d_pinned"] is None


def test_help_names_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["doctor", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--json" in out and "--bandwidth" in out


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_bandwidth_on_gpu_reports_four_figures(capsys: pytest.CaptureFixture[str]) -> None:
    main(["doctor", "--bandwidth", "--json"])
    bandwidth = json.loads(capsys.readouterr().out)["bandwidth"]
    for key in ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable"):
        assert bandwidth[key] > 0


def test_text_tells_a_cli_user_the_flag_not_the_python_argument(
    capsys: pytest.CaptureFixture[str], verdict: int
) -> None:
    assert main(["doctor"]) == verdict
    out = " ".join(capsys.readouterr().out.split())
    assert "torchport doctor --bandwidth" in out
    assert "bandwidth=True" not in out


def test_python_users_are_told_the_argument() -> None:
    from torchport.diagnose import doctor

    assert "pass bandwidth=True" in " ".join(str(doctor()).split())


def test_markdown_for_a_bug_report(capsys: pytest.CaptureFixture[str], verdict: int) -> None:
    import torchport

    assert main(["doctor", "--markdown"]) == verdict
    out = capsys.readouterr().out.splitlines()
    assert f"- torchport: {torchport.__version__}" in out
    assert any(line.startswith(f"- torch: {torch.__version__}") for line in out)


def test_json_and_markdown_are_one_or_the_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--json", "--markdown"])
    assert info.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
