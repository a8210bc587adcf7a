"""A chunk of files checked or fixed in this process leaves the interpreter as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchport.check import check_paths, fix_paths
from torchport.check.files import _work


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("import torch\n\nx = torch.ones(2).cuda()\n")
    (tmp_path / "b.py").write_text("def broken(:\n")  # an unparsable file in the same chunk
    return tmp_path


@pytest.fixture
def collector_was(request: pytest.FixtureRequest) -> Iterator[bool]:
    enabled: bool = request.param
    before = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    yield enabled
    (gc.enable if before else gc.disable)()


@pytest.mark.parametrize("collector_was", [True, False], indirect=True)
def test_the_cycle_collector_is_paused_only_while_a_chunk_runs(
    sources: Path, collector_was: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    original = _work.check_tree

    def check_tree(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(_work, "check_tree", check_tree)
    report = check_paths([sources], jobs=1)
    fixed = fix_paths([sources], jobs=1, diff=True)
    assert seen == [False]  # a.py; b.py does not parse
    assert gc.isenabled() is collector_was
    assert "TP101" in {f.code for f in report.findings}
    assert len(report.errors) == 1  # b.py: the chunk went on after it
    assert len(fixed.errors) == 1 and len(fixed.changed) == 1  # and so did the fixing one
