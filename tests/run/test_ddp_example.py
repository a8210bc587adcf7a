"""examples/ddp_train.py through `torchport run --nproc 2`: two gloo workers on the CPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "ddp_train.py"


# A gloo worker of torch (2.13, 2.15) now and then aborted as its process exited, after the
# work was done ("terminate called without an active exception": a C++ thread ended while
# joinable; 2 runs in 30 on a loaded 2-core machine, and twice in a row once in CI). A
# model in a reference cycle took its gloo group into the interpreter's finalization; the
# run now collects before it returns (test_ddp_teardown.py), and 0 of 40 runs aborted
# after that. That abort, after both epochs were printed, is still rerun (twice at most);
# any other failure, or the abort three times, fails the test.
_EXIT_ABORT = "terminate called without an active exception"


def _run_example() -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    env.pop("LOCAL_RANK", None)
    return subprocess.run(
        [sys.executable, "-m", "torchport", "run", "--nproc", "2", "--device", "cpu", str(EXAMPLE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )


def _aborted_at_exit(result: subprocess.CompletedProcess[str]) -> bool:
    trained = len(re.findall(r"epoch \d world 2 device cpu loss", result.stdout)) == 2
    return result.returncode != 0 and trained and _EXIT_ABORT in result.stderr


@pytest.mark.slow  # a process tree: torchrun and two workers
def test_two_process_ddp_example_trains_on_cpu() -> None:
    result = _run_example()
    for _ in range(2):
        if not _aborted_at_exit(result):
            break
        result = _run_example()
    assert result.returncode == 0, result.stderr[-3000:]
    lines = re.findall(r"epoch (\d) world 2 device cpu loss ([0-9.]+)", result.stdout)
    assert [epoch for epoch, _ in lines] == ["0", "1"]  # rank 0 alone prints
    first, last = (float(loss) for _, loss in lines)
    assert last < first
