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
    report = check_paths([sources], extend_select=["TP101"], jobs=1)
    fixed = fix_paths([sources], extend_select=["TP101"], jobs=1, diff=True)
    assert seen == [False]  # a.py; b.py does not parse
    assert gc.isenabled() is collector_was
    assert "TP101" in {f.code for f in report.findings}
    assert len(report.errors) == 1  # b.py: the chunk went on after it
    assert len(fixed.errors) == 1 and len(fixed.changed) == 1  # and so did the fixing one


# ---------------------------------------------------------------- size and memory


def test_a_file_over_the_size_limit_is_skipped_with_a_reason(tmp_path: Path) -> None:
    from torchport.check.files._reading import MAX_SOURCE_BYTES

    big = tmp_path / "table.py"
    big.write_text("x = 1\n" * (MAX_SOURCE_BYTES // 6 + 1))
    small = tmp_path / "a.py"
    small.write_text("import torch\n\nfor _ in range(2):\n    x = torch.ones(2).cuda()\n")
    result = check_paths([big, small], extend_select=["TP101", "TP106"])
    assert result.files == 2 and [Path(f.path).name for f in result.findings] == ["a.py"] * 2
    [error] = result.errors
    assert "MiB of Python is over the 4 MiB" in error.message and "split the file" in error.message


def test_running_out_of_memory_is_reported_as_memory(tmp_path: Path) -> None:
    """Under a process memory limit the error names memory, not nesting."""
    import resource
    import subprocess
    import sys

    dense = tmp_path / "dense.py"
    dense.write_text("".join(f"x{i} = torch.ones({i % 7}) * {i}\n" for i in range(90_000)))
    tiny = tmp_path / "tiny.py"
    tiny.write_text("x = 1\n")
    cap = 320 * 2**20

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    def run(path: Path) -> subprocess.CompletedProcess[str]:
        code = "import sys; from torchport.cli import main; sys.exit(main(sys.argv[1:]))"
        return subprocess.run(
            [sys.executable, "-c", code, "check", "--jobs", "1", str(path)],
            capture_output=True,
            text=True,
            preexec_fn=capped,
            timeout=300,
        )

    if run(tiny).returncode != 0:
        pytest.skip("the interpreter does not start under this memory limit here")
    out = run(dense)
    assert out.returncode == 2
    assert "out of memory" in out.stdout + out.stderr
    assert "nested too deeply" not in out.stdout + out.stderr
