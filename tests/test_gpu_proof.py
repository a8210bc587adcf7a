"""benchmarks/gpu_proof.sh cannot rot: its CPU rehearsal (--dry-run) runs in CI (`-m slow`).

The rehearsal checks every step up to the GPU calls: the machine facts, which wheels are
missing, the install (a pip dry run), the gpu tests' collection (of one file here; the
full run collects them all), and every benchmark command's arguments and imports.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROOF = ROOT / "benchmarks" / "gpu_proof.sh"
REPORT = ROOT / "benchmarks" / "gpu_proof_report.py"


def _report_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_proof_report", REPORT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _listed() -> list[str]:
    lines = (ROOT / "benchmarks" / "gpu_wheels.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


@pytest.mark.slow  # the whole prepared script, dry
def test_the_dry_run_checks_every_step_and_writes_its_record(tmp_path: Path) -> None:
    out, wheels = tmp_path / "out", tmp_path / "no-wheels"
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "GPU_PROOF_WHEELS": str(wheels),
        "GPU_PROOF_TESTS": "tests/feed/test_cuda.py",
    }
    done = subprocess.run(
        ["bash", str(PROOF), "--dry-run", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["log.txt", "proof.json", "summary.md"]
    proof = json.loads((out / "proof.json").read_text(encoding="utf-8"))
    parts = {part["name"]: part for part in proof["parts"]}
    assert list(parts) == [
        "env", "wheels-listed", "wheels", "install", "gpu-tests", "suite", "device-rules",
        "bench-args",
    ]  # fmt: skip
    assert proof["dry_run"] is True and all(part["passed"] for part in proof["parts"])
    assert parts["env"]["status"] == "ok" and proof["machine"]["torch"]["version"]
    for wheel in _listed():  # none is in the empty folder: each is named
        assert wheel in parts["wheels-listed"]["status"]
    assert parts["install"]["status"] == "ok"
    assert "collected" in (parts["gpu-tests"]["pytest"] or "")
    bench = parts["bench-args"]["tail"]
    assert bench.count("ok   ") == 8 and "FAIL" not in bench
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("# GPU proof, dry run on the CPU")
    assert "| bench-args | ok |" in summary


def test_the_dry_check_fails_on_arguments_the_gpu_run_would_refuse() -> None:
    done = subprocess.run(
        [sys.executable, str(REPORT), "dry-check",
         "benchmarks/bench_gpu_h2d.py --no-such-option",
         "-m torchport bench no-such-suite",
         "-m torchport doctor --json"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["FAIL", "FAIL", "ok"], done.stdout


def test_a_wheel_on_disk_is_not_listed_as_missing(tmp_path: Path) -> None:
    report = _report_module()
    listing = tmp_path / "wheels.txt"
    listing.write_text("# comment\noptree==0.20.0\npydantic-core==2.50.5\n", encoding="utf-8")
    (tmp_path / "pydantic_core-2.50.5-cp312-cp312-manylinux_2_17_x86_64.whl").write_bytes(b"")
    (tmp_path / "optree-0.19.0-cp312-cp312-manylinux_2_17_x86_64.whl").write_bytes(b"")
    assert report.missing_wheels(tmp_path, listing) == ["optree==0.20.0"]  # another version
    assert report.missing_wheels(tmp_path / "absent", listing) == [
        "optree==0.20.0",
        "pydantic-core==2.50.5",
    ]


def _pytest_children(tree: ast.AST) -> list[ast.Call]:
    """Calls in ``tree`` whose argument list holds ``"-m", "pytest"``: a child pytest."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for argument in node.args:
            if isinstance(argument, ast.List):
                words = [e.value for e in argument.elts if isinstance(e, ast.Constant)]
                if any(words[i : i + 2] == ["-m", "pytest"] for i in range(len(words))):
                    found.append(node)
    return found


def test_no_child_pytest_inherits_an_xdist_workers_identity() -> None:
    """A child pytest gets ``child_pytest_env`` (tests/conftest.py), never ``os.environ``.

    Started from an xdist worker with ``os.environ``, the child believed it was a worker;
    the H200's pytest-benchmark then warned at configure time and ``filterwarnings = error``
    made that an INTERNALERROR (issue 36). This machine has no pytest-benchmark, so only
    reading the tests catches it here.
    """
    offenders = []
    children = 0
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for call in _pytest_children(tree):
            children += 1
            env = next((k.value for k in call.keywords if k.arg == "env"), None)
            if env is None or "os.environ" in ast.unparse(env) or "environ" in ast.unparse(env):
                offenders.append(f"{path.relative_to(ROOT)}:{call.lineno}")
    assert children >= 3  # the scan finds the children it is about
    assert not offenders, offenders


@pytest.mark.slow  # a child pytest run of the proof's suite
def test_a_failure_is_written_down_when_it_happens(
    tmp_path: Path, child_pytest_env: dict[str, str]
) -> None:
    """TORCHPORT_TEST_FAILURES gets each failure's traceback at once, written by one process.

    The proof's suite is cut at its budget before pytest's summary; the file is what tells
    why a test failed there. Two xdist workers: the failure must be written once.
    """
    tests = tmp_path / "test_child.py"
    tests.write_text(
        "def test_passes():\n    assert True\n\n"
        "def test_fails():\n    assert 1 == 2, 'the reason 7231'\n",
        encoding="utf-8",
    )
    failures = tmp_path / "failures.txt"
    env = {**child_pytest_env, "TORCHPORT_TEST_FAILURES": str(failures), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "tests.conftest", "-n", "2", str(tests)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    written = failures.read_text(encoding="utf-8")
    assert written.count("=== ") == 1 and "test_child.py::test_fails (call)" in written, written
    assert "the reason 7231" in written and "test_passes" not in written, written
