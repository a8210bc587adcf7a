"""examples/ddp_train.py through `torchport run --nproc 2`: two gloo workers on the CPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "ddp_train.py"


def test_two_process_ddp_example_trains_on_cpu() -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    env.pop("LOCAL_RANK", None)
    result = subprocess.run(
        [sys.executable, "-m", "torchport", "run", "--nproc", "2", "--device", "cpu", str(EXAMPLE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = re.findall(r"epoch (\d) world 2 device cpu loss ([0-9.]+)", result.stdout)
    assert [epoch for epoch, _ in lines] == ["0", "1"]  # rank 0 alone prints
    first, last = (float(loss) for _, loss in lines)
    assert last < first
