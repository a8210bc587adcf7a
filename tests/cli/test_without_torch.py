"""The checker-only install: check, fix, port run without torch; the runtime says what to install.

Each test runs the CLI in a fresh interpreter where importing torch, optree, rich
or numpy fails, as in the pre-commit hook's environment.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_BLOCKED = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in ('torch', 'optree', 'rich', 'numpy'):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
from torchport.cli import main
code = main(sys.argv[1:])
assert not {'torch', 'optree', 'rich', 'numpy'} & set(sys.modules), 'a runtime package loaded'
sys.exit(code)
"""


def _torchport(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCKED, *argv], cwd=cwd, capture_output=True, text=True
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    (tmp_path / "cpu.py").write_text(
        textwrap.dedent("""\
            import torch
            from torch import nn
            model = nn.Linear(2, 1)
            out = model(torch.ones(4, 2))
            """)
    )
    return tmp_path


def test_check_fix_and_port_run_without_torch(project: Path) -> None:
    done = _torchport(project, "check", "train.py")
    assert done.returncode == 1 and "train.py:2:5: TP101" in done.stdout, done.stderr
    done = _torchport(project, "fix", "train.py")
    assert done.returncode in (0, 1), done.stderr
    assert ".cuda()" not in (project / "train.py").read_text()
    done = _torchport(project, "port", "cpu.py")
    assert done.returncode in (0, 1), done.stderr
    assert ".to(device)" in (project / "cpu.py").read_text()
    assert _torchport(project, "--version").stdout.startswith("torchport ")


@pytest.mark.parametrize("argv", [["doctor"], ["bench", "--quick"], ["run", "cpu.py"]])
def test_a_runtime_command_without_torch_says_how_to_install_it(
    project: Path, argv: list[str]
) -> None:
    done = _torchport(project, *argv)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"torchport {argv[0]}: error: `torchport {argv[0]}` needs")
    assert "'torch'" in line and "pip install 'torchport[torch]'" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--format", "grouped", "train.py"],
        ["check", "--format", "gitlab", "train.py"],
        ["check", "--format", "junit", "train.py"],
        ["check", "--show-settings", "train.py"],
        ["check", "--show-files", "."],
        ["check", "--diff", "train.py"],
        ["check", "--target-torch", "2.8", "train.py"],
    ],
)
def test_the_new_checker_options_need_no_torch(project: Path, argv: list[str]) -> None:
    done = _torchport(project, *argv)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr and done.stdout
