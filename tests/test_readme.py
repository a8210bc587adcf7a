"""README.md stays true: two quickstart commands (CI runs the second), every code block works."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", quickstart, re.S)]


def test_quickstart_has_exactly_two_commands_one_line_each() -> None:
    commands = _quickstart_commands()
    assert len(commands) == 2
    assert all("\n" not in command for command in commands)


def test_ci_runs_the_readme_test_command() -> None:
    _, test_command = _quickstart_commands()
    assert "pytest" in test_command
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


def test_the_demo_command_runs_an_example_that_exists() -> None:
    demo, _ = _quickstart_commands()
    scripts = re.findall(r"examples/\S+\.py", demo)
    assert scripts and all((ROOT / script).is_file() for script in scripts)


# --- every code block says something true ---------------------------------------------


def _blocks(language: str) -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", readme, re.S)


@pytest.mark.slow  # each block in a fresh interpreter importing torch
@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_every_python_block_runs(index: int, tmp_path: Path) -> None:
    """Each block on its own, in a fresh interpreter, warnings as errors."""
    source = _blocks("python")[index]
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", source],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"README python block {index}:\n{source}\n{done.stderr}"


def test_every_toml_block_is_a_valid_configuration(tmp_path: Path) -> None:
    from torchport.check import load_config

    blocks = _blocks("toml")
    assert blocks
    for block in blocks:
        (tmp_path / "pyproject.toml").write_text(block, encoding="utf-8")
        load_config(tmp_path / "pyproject.toml")  # raises on an unknown key or a bad value


def test_every_torchport_command_in_a_bash_block_parses() -> None:
    """Options the README shows exist; scripts it names under examples/ exist."""
    from torchport.cli._main import build_parser

    parser = build_parser()
    commands = 0
    for block in _blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words and "torchport" not in words[0]:
                words = words[1:]  # `python3 -m venv ... && .venv/bin/torchport run ...`
            if not words:
                continue
            argv = words[1 : words.index("&&")] if "&&" in words else words[1:]
            unknown = parser.parse_known_args(argv)[1]
            assert not unknown, f"{line}: {unknown}"
            for word in argv:
                if word.startswith("examples/"):
                    assert (ROOT / word).is_file(), word
            commands += 1
    assert commands >= 8
