"""The pytest plugin users get: `device` fixture, `devices` marker, skips with reasons.

Each scenario runs pytest in a subprocess on a throwaway project (the plugin is
loaded there through its ``pytest11`` entry point, as in a user's project) and
reads the JUnit XML it writes.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

from torchport.testing import default_devices, missing_reason

USER_TESTS = """
import pytest
import torch

@pytest.mark.devices("cpu", "meta", "cuda", "cuda:1")
def test_marked(device):
    assert isinstance(device, torch.device)
    assert torch.ones(2, device=device).device.type == device.type

def test_unmarked(device):
    assert device.type in ("cpu", "cuda", "mps", "xpu")

def test_plain():
    pass
"""

OWN_FIXTURE = """
import pytest

@pytest.fixture
def device():
    return "the project's own"

def test_keeps_its_fixture(device):
    assert device == "the project's own"

@pytest.mark.parametrize("x, device", [(1, "given")])
def test_direct_parametrize_wins(x, device):
    assert device == "given"
"""


def run_pytest(
    tmp_path: Path,
    base_env: dict[str, str],
    files: dict[str, str],
    env: dict[str, str] | None = None,
    args: list[str] | None = None,
) -> tuple[int, dict[str, str], str]:
    """Run pytest on ``files``; return exit code, {test id: outcome or skip reason}, output."""
    for name, source in files.items():
        (tmp_path / name).write_text(textwrap.dedent(source))
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    report = tmp_path / "report.xml"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            *(args or []),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**base_env, "PYTHONWARNINGS": "ignore", **(env or {})},
        timeout=120,
    )
    outcomes: dict[str, str] = {}
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            skipped = case.find("skipped")
            failed = case.find("failure")
            outcome = "passed"
            if skipped is not None:
                outcome = "skipped: " + skipped.get("message", "")
            elif failed is not None:
                outcome = "failed"
            outcomes[case.get("name", "")] = outcome
    return result.returncode, outcomes, result.stdout + result.stderr


def expected_outcome(name: str) -> str:
    reason = missing_reason(name)
    return f"skipped: {reason}" if reason else "passed"


@pytest.mark.slow  # a user's test suite, run by pytest in a child process
def test_marker_parametrizes_and_skips_missing_devices_with_reasons(
    tmp_path: Path, child_pytest_env: dict[str, str]
) -> None:
    code, outcomes, output = run_pytest(
        tmp_path, child_pytest_env, {"test_user.py": USER_TESTS, "test_own.py": OWN_FIXTURE}
    )
    assert code == 0, output
    unmarked = {f"test_unmarked[{name}]": "passed" for name in default_devices()}
    assert outcomes == {
        "test_marked[cpu]": "passed",
        "test_marked[meta]": "passed",
        "test_marked[cuda]": expected_outcome("cuda"),
        "test_marked[cuda:1]": expected_outcome("cuda:1"),
        **unmarked,
        "test_plain": "passed",
        "test_keeps_its_fixture": "passed",
        "test_direct_parametrize_wins[1-given]": "passed",
    }


@pytest.mark.slow  # pytest in child processes
def test_environment_variable_and_misuse(tmp_path: Path, child_pytest_env: dict[str, str]) -> None:
    # One pytest run for both, to pay for one torch import: collection errors in
    # two modules must not stop the third from running.
    marked = 'import pytest\n@pytest.mark.devices("{}")\ndef {}:\n    pass\n'
    code, outcomes, output = run_pytest(
        tmp_path,
        child_pytest_env,
        {
            "test_user.py": USER_TESTS,
            "test_no_arg.py": marked.format("cpu", "test_a()"),
            "test_typo.py": marked.format("gpu9", "test_b(device)"),
        },
        env={"TORCHPORT_TEST_DEVICES": "cpu, meta"},
        args=["--continue-on-collection-errors"],
    )
    assert code == 1, output
    # The variable replaced the default list; test_unmarked rejects meta, so [meta] fails.
    assert outcomes["test_unmarked[cpu]"] == "passed"
    assert outcomes["test_unmarked[meta]"] == "failed"
    assert "test_a is marked devices(...) but takes no 'device' argument" in output
    assert "devices() got 'gpu9', which is not a device" in output
    assert "Traceback" not in output


def test_loading_the_plugin_does_not_import_torch() -> None:
    code = "import sys, torchport.testing._plugin; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.devices("cpu", "meta")
def test_our_own_tests_get_a_torch_device(device: torch.device) -> None:
    assert device.type in ("cpu", "meta")
    assert torch.empty(3, device=device).device == device


@pytest.mark.parametrize(
    ("name", "available"),
    [("cpu", True), ("meta", True), ("cuda", torch.cuda.is_available()), ("cuda:99", False)],
)
def test_missing_reason_names_the_device(name: str, available: bool) -> None:
    reason = missing_reason(name)
    assert (reason is None) == available
    if reason is not None:
        assert reason.startswith(name.split(":")[0])
        assert "not available on this machine" in reason


def test_default_devices_start_with_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHPORT_TEST_DEVICES", raising=False)
    names = default_devices()
    assert names[0] == "cpu" and len(names) == len(set(names))
    monkeypatch.setenv("TORCHPORT_TEST_DEVICES", "meta,cpu,")
    assert default_devices() == ["meta", "cpu"]
