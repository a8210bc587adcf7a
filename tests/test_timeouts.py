"""No test can hang the run: a hang fails one test with its stack, or ends the run with it.

Each case runs pytest in a child process on a small test file, under this project's own
configuration (pyproject.toml) and conftest.py, with the limits shortened.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SLEEPS = """
import time

def test_hangs():
    time.sleep(120)  # the line the stack must name

def test_after_the_hang():
    assert True
"""

# libc's sleep called through PyDLL keeps the GIL, as a C-level deadlock does.
HOLDS_THE_GIL = """
import ctypes

def test_hangs_holding_the_gil():
    ctypes.PyDLL(None).sleep(120)  # the line the stack must name
"""


def _pytest(
    tmp_path: Path, env: dict[str, str], source: str, *options: str
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_case.py").write_text(source, encoding="utf-8")
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    env = {**env, "TORCHPORT_TEST_HANG_GRACE": "1"}
    command = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml")]
    command += ["--rootdir", str(tmp_path), "-p", "no:cacheprovider", "-q", *options]
    return subprocess.run(
        [*command, str(tmp_path / "test_case.py")],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=100,
    )  # fmt: skip


def test_the_default_run_has_a_per_test_limit() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    options = config["tool"]["pytest"]["ini_options"]
    assert 0 < options["timeout"] <= 600
    assert options["timeout_method"] == "signal"  # fails the one test; the run goes on
    assert any(
        need.startswith("pytest-timeout")
        for need in config["project"]["optional-dependencies"]["test"]
    )


@pytest.mark.slow  # waits out a shortened limit in a child pytest
def test_a_hang_fails_that_test_with_its_stack_and_the_run_goes_on(
    tmp_path: Path, child_pytest_env: dict[str, str]
) -> None:
    done = _pytest(tmp_path, child_pytest_env, SLEEPS, "-o", "timeout=1")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "Timeout" in out and "the line the stack must name" in out, out


@pytest.mark.slow  # waits out the watchdog in a child pytest
def test_a_hang_holding_the_gil_ends_the_run_with_every_stack(
    tmp_path: Path, child_pytest_env: dict[str, str]
) -> None:
    done = _pytest(tmp_path, child_pytest_env, HOLDS_THE_GIL, "-o", "timeout=1")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "Timeout" in out or "most recent call first" in out, out
    assert "test_case.py" in out and "test_hangs_holding_the_gil" in out, out
