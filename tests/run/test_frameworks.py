"""Code that picks CUDA when ``torch.cuda.is_available()`` runs under ``torchport run`` unchanged.

The redirect makes that check True, so everything behind it (properties,
capability, streams, events, NVTX, amp, cudnn flags) must answer as on a GPU.
Each script runs three ways, plain ``python`` (the CPU path of a CPU-only
machine, with any GPU hidden), ``run --device cpu`` and ``run --audit --device cpu``; the printed
results must agree. Lightning Fabric and accelerate are in the ``bench`` extra:
their cases skip where they are not installed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


# The reference is plain python on a CPU-only machine: on a GPU machine the scripts would
# train on the GPU (TF32 matmuls, other kernels) and print other losses. An empty
# CUDA_VISIBLE_DEVICES hides the GPU from that run alone; the redirected runs see the machine.
CPU_ONLY = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}


def _output(*argv: str, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, timeout=300, cwd=SCRIPTS, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if line.startswith("epoch")]


@pytest.mark.parametrize(
    ("script", "needs"),
    [
        ("cuda_checks.py", None),
        pytest.param("fabric_train.py", "lightning", marks=pytest.mark.slow),
        pytest.param("accelerate_train.py", "accelerate", marks=pytest.mark.slow),
    ],
)
def test_cuda_picking_code_runs_as_plain_python_does(script: str, needs: str | None) -> None:
    if needs is not None and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed (pip install torchport[bench])")
    plain = _output(script, env=CPU_ONLY)
    assert plain, "the script printed no results"
    assert _output("-m", "torchport", "run", "-q", "--device", "cpu", script) == plain
    audited = _output("-m", "torchport", "run", "-q", "--audit", "--device", "cpu", script)
    assert audited == plain
