"""README.md stays true: its quickstart is exactly two commands, and CI runs the second."""

from __future__ import annotations

import re
from pathlib import Path

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
