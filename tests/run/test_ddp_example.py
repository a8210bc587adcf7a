"""examples/ddp_train.py through `torchport run --nproc 2`: two gloo workers on the CPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "ddp_train.py"


# A gloo worker of torch (2.13, 2.15) now and then aborts as its process exits, after the
# work is done ("terminate called without an active exception": a C++ thread destroyed
# while joinable; seen in about 1 run in 10 on a loaded 2-core machine, also without
# torchport's DDP teardown order). That abort, after both epochs were printed, is rerun
# once; any other failure, or the abort twice, fails the test.
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


def test_two_process_ddp_example_trains_on_cpu() -> None:
    result = _run_example()
    if _aborted_at_exit(result):
        result = _run_example()
    assert result.returncode == 0, result.stderr[-3000:]
    lines = re.findall(r"epoch (\d) world 2 device cpu loss ([0-9.]+)", result.stdout)
    assert [epoch for epoch, _ in lines] == ["0", "1"]  # rank 0 alone prints
    first, last = (float(loss) for _, loss in lines)
    assert last < first
