"""`torchport check` runs in one process unless `-j N` asks for workers: its plain report,
its `--diff` (fix's dry run) and its `--add-noqa` alike, however many files (each worker
would work out the whole project view again: `check/files/_paths.check_paths`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import torchport.check.files._plan as plan_module
from torchport.cli._main import main


@pytest.mark.parametrize("mode", [[], ["--diff"], ["--add-noqa"]])
def test_check_takes_workers_only_when_asked(
    mode: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, process_pools: list[int]
) -> None:
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text(f"import torch\nx{i} = torch.zeros(3).cuda()\n")
    # every run counts as many files (fix's and --add-noqa's own default would take workers)
    monkeypatch.setattr(plan_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(plan_module, "os", _TwoCores())
    argv = ["check", "--no-cache", "-q", *mode, str(tmp_path)]
    assert main(argv) in (0, 1)
    assert process_pools == []
    assert main([*argv[:-1], "-j", "2", str(tmp_path)]) in (0, 1)
    assert process_pools == [2]


class _TwoCores:
    """``os`` for the planner, with two usable cores whatever the machine has."""

    def __getattr__(self, name: str) -> Any:
        import os

        return getattr(os, name)

    @staticmethod
    def sched_getaffinity(_: int) -> set[int]:
        return {0, 1}
