"""An explicit ``torch.cuda.synchronize()`` is a host wait the prediction counts, line by line,
as the simulated device counts it.

Under ``torchport run --device cpu`` the call is redirected and returns at once; the
audit's prediction must still count the wait a CUDA run makes there. The oracle is the
simulated device (``torchport run --device sim``), which counts each wait as it happens:
generated programs call it in loops, helpers and branches, with each form of argument,
next to reads that wait anyway.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.needs_simulator, pytest.mark.slow]  # whole programs, two runs

CALLS = [
    "torch.cuda.synchronize()",
    "torch.cuda.synchronize('cuda')",
    "torch.cuda.synchronize(0)",
    "torch.cuda.synchronize(torch.device('cuda'))",
    "sync()",  # a helper that calls it: the helper's line waits
    "float(x.sum())",  # a read, which waits anyway
    "x.add_(1)",  # no wait
]

_DRIVER = """
import collections, json, sys
import torch
import torchport as tp

def sync():
    torch.cuda.synchronize()

sources = json.loads(sys.argv[1])
results = []
for number, source in enumerate(sources):
    path = f"prog_{number}.py"
    code = compile(source, path, "exec")
    scope = {"torch": torch, "sync": sync}
    with tp.audit() as report:
        exec(code, scope)
    lines = collections.Counter()
    for e in report.entries:
        if e.file == path:
            lines[f"{e.line} {'copy' if e.kind == 'transfer' else 'sync'}"] += e.count
    results.append(dict(lines))
print(json.dumps(results))
"""


def _program(calls: list[tuple[int, int]]) -> str:
    body = ["x = torch.ones(4, device='cuda')"]
    for call, repeat in calls:
        body += [f"for _ in range({repeat}):", f"    {CALLS[call]}"]
    return "\n".join(body) + "\n"


def _audit(device: str, sources: list[str], folder: Path) -> list[dict[str, int]]:
    driver = folder / "driver.py"
    driver.write_text(_DRIVER)
    env = {key: value for key, value in os.environ.items() if key != "TORCHPORT_DEVICE"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchport",
            "run",
            "--device",
            device,
            "-q",
            str(driver),
            json.dumps(sources),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=folder,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@settings(max_examples=2, deadline=None)
@given(
    programs=st.lists(
        st.lists(
            st.tuples(st.integers(0, len(CALLS) - 1), st.integers(1, 3)), min_size=1, max_size=4
        ),
        min_size=12,
        max_size=12,
    )
)
def test_explicit_synchronize_is_predicted_where_the_device_waits(
    programs: list[list[tuple[int, int]]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("sync")
    sources = [_program(calls) for calls in programs]
    predicted = _audit("cpu", sources, folder)
    measured = _audit("sim", sources, folder)
    for source, cpu, sim in zip(sources, predicted, measured, strict=True):
        assert cpu == sim, source
    assert any(sim for sim in measured)  # the oracle counted waits at all
