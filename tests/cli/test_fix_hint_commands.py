"""The command a fix summary's hint names is the one that applies what it counts.

Oracle, apart from the hint's code: run the command the hint names (on a copy) and
the finding is gone; run it without one of its flags and the finding stays, so the
hint names no flag the fix does not need. Across selections: the default set with the
speed rule added (``extend-select``: TP106 is off by default since samples A-T), a
``select`` that names the speed rule by code or prefix, and a first run with --speed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from torchport.cli._main import main

HINT = re.compile(r"1 (?:more with|fixable with) `torchport fix((?: --[a-z]+)*)`")
SOURCE = (
    'import torch\n\ndevice = torch.device("cpu")\nfor _ in range(2):\n'
    "    x = torch.randn(2).to(device)\n"
)


def _left(folder: Path, flags: list[str], capsys: pytest.CaptureFixture[str]) -> bool:
    main(["fix", *flags, str(folder / "a.py")])
    capsys.readouterr()
    main(["check", "--no-cache", "--exit-zero", str(folder / "a.py")])
    return "TP106" in capsys.readouterr().out


@pytest.mark.parametrize(
    "table", ['extend-select = ["TP106"]\n', 'select = ["TP1"]\n', 'select = ["TP106"]\n']
)
@pytest.mark.parametrize("first", [[], ["--speed"]])
def test_the_hinted_command_applies_the_fix_and_needs_each_of_its_flags(
    table: str, first: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text(f"[tool.torchport]\n{table}")
    (work / "a.py").write_text(SOURCE)
    main(["fix", "--diff", *first, str(work / "a.py")])
    err = capsys.readouterr().err
    hint = HINT.search(err)
    assert hint is not None, err
    flags = hint.group(1).split()
    copy = tmp_path / "copy"
    shutil.copytree(work, copy)
    assert not _left(copy, flags, capsys), (table, first, flags)
    for dropped in flags:
        shutil.rmtree(copy)
        shutil.copytree(work, copy)
        fewer = [f for f in flags if f != dropped]
        assert _left(copy, fewer, capsys), f"{dropped} is not needed: {table!r} {flags}"
