"""Smoke tests: the scripts in examples/ run on the CPU as a user would run them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=300,  # import torch on a loaded 2-core machine; the script itself is seconds
        env={**os.environ, **env},
        cwd=EXAMPLES.parent,
        check=False,
    )


@pytest.mark.slow  # the whole example under torchport run --audit
def test_quickstart_trains_on_the_cpu_and_says_what_torchport_did() -> None:
    done = _run("quickstart.py", TORCHPORT_DEVICE="cpu")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.search(r"^devices found, best first: .*cpu", out, re.M), out
    assert re.search(r"^picked: cpu \(.*TORCHPORT_DEVICE.*\)$", out, re.M), out  # and why
    losses = [float(v) for v in re.findall(r"^epoch \d+: mean loss ([0-9.]+)$", out, re.M)]
    assert len(losses) == 5, out
    assert losses[-1] < losses[0] / 4, out  # it learns
    assert re.search(r"^fed 160 batches \(320 tensors\) to cpu$", out, re.M), out
    assert "moved 0 bytes: the batches were already on the device" in out
    assert "Warning" not in done.stderr, done.stderr
