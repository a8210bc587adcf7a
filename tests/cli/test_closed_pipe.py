"""A reader that closes the pipe (`torchport check . | head`) ends every subcommand quietly,
with the exit code it has when all its output is read; `python -m torchport` never imports
the checked project's own modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = "import torch\nx = torch.zeros(3).cuda()\n"
COMMANDS = [
    ["check", "."],
    ["check", "--format", "json", "."],
    ["check", "--format", "concise", "."],
    ["check", "--format", "grouped", "."],
    ["check", "--statistics", "."],
    ["check", "--show-files", "."],
    ["check", "--show-settings", "a0.py"],
    ["check", "--diff", "."],
    ["check", "--explain", "ALL"],
    ["fix", "--diff", "."],
    ["port", "--diff", "."],
    ["rule", "--all"],
    ["rule", "TP101"],
    ["--help"],
    ["check", "--help"],
    ["doctor", "--markdown"],
    # Each of these two costs the default run seconds (an environment report, a measure);
    # the slow run (`-m slow`) holds them to the same rule.
    pytest.param(["doctor", "--json"], marks=pytest.mark.slow),
    pytest.param(["bench", "--quick", "--json", "link"], marks=pytest.mark.slow),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("piped")
    for i in range(40):  # more than a pipe's buffer of report
        (root / f"a{i}.py").write_text(SCRIPT * 20)
    return root


def _run(argv: list[str], cwd: Path, *, closed: bool) -> tuple[int, str]:
    command = [sys.executable, "-m", "torchport", *argv]
    if not closed:
        done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return done.returncode, done.stderr.decode(errors="replace")
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write: every write meets EPIPE
    try:
        done = subprocess.run(command, cwd=cwd, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    return done.returncode, done.stderr.decode(errors="replace")


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_closed_pipe_ends_quietly_with_the_usual_exit_code(
    project: Path, argv: list[str]
) -> None:
    usual, _ = _run(argv, project, closed=False)
    code, stderr = _run(argv, project, closed=True)
    for word in ("Traceback", "internal error", "BrokenPipe", "Exception ignored"):
        assert word not in stderr, stderr
    assert code == usual, stderr


@pytest.mark.parametrize("name", ["tokenize", "torch", "typing", "re", "enum", "inspect"])
def test_python_m_torchport_never_imports_the_projects_modules(tmp_path: Path, name: str) -> None:
    marker = tmp_path / "IMPORTED"
    (tmp_path / f"{name}.py").write_text(
        f"open({str(marker)!r}, 'w').write({name!r})\nraise SystemExit(97)\n"
    )
    (tmp_path / "m.py").write_text(SCRIPT)
    for argv in (["check", "m.py"], ["check", "--add-noqa", "m.py"], ["rule", "--all"]):
        done = subprocess.run(
            [sys.executable, "-m", "torchport", *argv], cwd=tmp_path, capture_output=True
        )
        assert done.returncode in (0, 1), done.stderr
        assert not marker.exists(), (argv, marker.read_text())


def test_run_leaves_a_closed_pipe_to_the_script_as_python_does(tmp_path: Path) -> None:
    """`run`'s script owns its stdout: it meets the closed pipe exactly as under `python`."""
    (tmp_path / "loud.py").write_text("for i in range(100000):\n    print(i)\n")
    read, write = os.pipe()
    os.close(read)
    try:
        ours = subprocess.run(
            [sys.executable, "-m", "torchport", "run", "loud.py"],
            cwd=tmp_path, stdout=write, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        plain = subprocess.run(
            [sys.executable, "loud.py"], cwd=tmp_path, stdout=write, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
    finally:
        os.close(write)
    assert ours.returncode == plain.returncode
    assert "internal error" not in ours.stderr
    assert ("BrokenPipeError" in ours.stderr) == ("BrokenPipeError" in plain.stderr)
