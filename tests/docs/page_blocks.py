"""Run a documentation page's code blocks in order, in one scratch folder, as a reader would.

Every fenced block of a page is used:

- ``bash``: each command (``\\`` continuations joined) runs in ``bash`` in the folder,
  with this interpreter's ``bin/`` first on ``PATH`` (so ``python`` and ``torchport``
  are the ones under test). It must exit 0, or the code its ``# exit N`` comment names.
- ``python``: runs in a fresh interpreter in the folder, warnings as errors; it must
  exit 0. Python blocks that follow one another with no other block run between them
  share one interpreter (each in a namespace of its own), to import torch once.
- ``toml``: must load as a ``[tool.torchport]`` configuration; ``yaml``: must parse.
- ``text``: output shown to the reader. After ``<!-- output: COMMAND -->`` the command
  runs (as a bash line) and every line of the block but ``...`` must be a line of what
  it prints, in order, so a sample cannot drift from what the command says. Inside a
  line, ``...`` stands for any text, for what changes from run to run (the folder in
  a path); the rest of the line must match.

An HTML comment on the line before a fence changes that: ``<!-- file: NAME -->``
writes the block to ``NAME`` in the folder instead of running it (the files later
commands use), and ``<!-- skip: REASON -->`` leaves it out, with the reason (installs
from the network, a GPU, ...). A ``bash`` or ``python`` block with neither runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

_FENCE = re.compile(r"(?:<!-- (file|skip|output): (.+?) -->\n)?```(\w+)\n(.*?)```", re.S)
_UNSET = ("TORCHPORT_DEVICE", "TORCHPORT_TEST_DEVICES", "CUDA_VISIBLE_DEVICES", "LOCAL_RANK")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    text: str
    directive: str | None  # "file", "skip", "output" or None
    argument: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order, with the directive before each."""
    text = page.read_text(encoding="utf-8")
    name = page.relative_to(ROOT).as_posix()
    return [
        Block(
            name,
            text.count("\n", 0, match.start(3)) + 1,
            match.group(3),
            match.group(4),
            match.group(1),
            match.group(2) or "",
        )
        for match in _FENCE.finditer(text)
    ]


def environment() -> dict[str, str]:
    """The reader's shell: this interpreter first on PATH, no device chosen, no colour."""
    env = {k: v for k, v in os.environ.items() if k not in _UNSET}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env |= {"NO_COLOR": "1", "COLUMNS": "100", "PYTHONDONTWRITEBYTECODE": "1"}
    return env


def commands(block: Block) -> list[tuple[str, int]]:
    """The commands of a bash block with the exit code each must give."""
    out = []
    for line in block.text.replace("\\\n", " ").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        expected = re.search(r"#\s*exit (\d+)", line)
        out.append((line, int(expected.group(1)) if expected else 0))
    return out


_DRIVER = """
for where, source in BLOCKS:
    print(f"--- {where}", flush=True)
    exec(compile(source, where, "exec"), {"__name__": "__main__"})
"""


def shows(expected: str, printed: str) -> bool:
    """Whether ``printed`` is the output line ``expected`` shows (``...`` in it: any text).

    Trailing blanks do not count, on either side: a printed line is matched as printed
    and without them (``" ..."`` shows a printed ``" "``, whose stripped form is empty)."""
    pattern = ".*".join(re.escape(piece) for piece in expected.rstrip().split("..."))
    return any(re.fullmatch(pattern, line, re.S) for line in (printed.rstrip(), printed))


def run_python(group: list[Block], folder: Path) -> None:
    """Run python blocks, in order, in one fresh interpreter; each in its own namespace."""
    script = f"BLOCKS = {[(b.where, b.text) for b in group]!r}\n{_DRIVER}"
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", script], cwd=folder, env=environment(),
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    failed = done.stdout.rsplit("--- ", 1)[-1].split("\n", 1)[0]
    assert done.returncode == 0, f"{failed}:\n{done.stdout[-3000:]}\n{done.stderr}"


def run_page(page: Path, folder: Path) -> None:
    """Every block of ``page`` in order, in ``folder``; consecutive python blocks together."""
    group: list[Block] = []
    for block in blocks(page):
        if block.language == "python" and block.directive is None:
            group.append(block)
            continue
        if group:
            run_python(group, folder)
            group = []
        run_block(block, folder)
    if group:
        run_python(group, folder)


def run_block(block: Block, folder: Path) -> None:
    """Run (or write, or check) one block; ``AssertionError`` says where and why it failed."""
    if block.directive == "skip":
        assert block.argument.strip(), f"{block.where}: a skip needs a reason"
        return
    if block.directive == "file":
        target = folder / block.argument
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.text, encoding="utf-8")
        return
    env = environment()
    if block.directive == "output":
        done = subprocess.run(
            ["bash", "-c", block.argument], cwd=folder, env=env, capture_output=True,
            text=True, timeout=240,
        )  # fmt: skip
        printed = iter((done.stdout + done.stderr).splitlines())
        for line in block.text.splitlines():
            if line.strip() != "...":
                assert any(shows(line, seen) for seen in printed), (
                    f"{block.where}: `{block.argument}` no longer prints {line!r} "
                    f"(in this order); it printed:\n{done.stdout}{done.stderr}"
                )
        return
    if block.language == "bash":
        for command, expected in commands(block):
            done = subprocess.run(
                ["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                timeout=240,
            )  # fmt: skip
            assert done.returncode == expected, (
                f"{block.where}: `{command}` exited {done.returncode}, expected {expected}\n"
                f"{done.stdout}\n{done.stderr}"
            )
    elif block.language == "python":
        run_python([block], folder)
    elif block.language == "toml":
        from torchport.check import load_config

        table = folder / ".toml-block" / "pyproject.toml"  # apart: it must not configure the rest
        table.parent.mkdir(exist_ok=True)
        table.write_text(block.text, encoding="utf-8")
        load_config(table)
    elif block.language == "yaml":
        import yaml

        yaml.safe_load(block.text)
    else:
        assert block.language == "text", f"{block.where}: no way to test a {block.language} block"
