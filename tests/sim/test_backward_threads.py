"""Two Python threads in backward at once on the simulated device: whose line the engine
thread's work is charged to.

The engine runs every thread's device backward on its own thread and does not say whose
graph a node is; the simulator names the line of the thread waiting in backward. While
threads at different lines wait there at once, the work must be charged to neither
(``SEVERAL_BACKWARDS``), never to the other thread's line. Oracle: thread A's backward
holds the engine thread (a custom Function's backward) until thread B waits in its own
``backward()``; A's next node is a boolean-mask index's backward, a wait on CUDA.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sim.isolated import run_isolated

pytestmark = [pytest.mark.needs_simulator, pytest.mark.slow]

_CHILD = """
import sys, threading, time
import torchport as tp
dev = simulate_accelerator()
b_waiting = threading.Event()
class Hold(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return t.clone()
    @staticmethod
    def backward(ctx, g):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not b_waiting.is_set():
            frame = sys._current_frames().get(b_ident[0])
            while frame is not None:
                if frame.f_code.co_name == "_engine_run_backward":
                    b_waiting.set()
                    break
                frame = frame.f_back
            time.sleep(0.001)
        return g
b_ident = [0]
x = torch.randn(64, device=dev)
def a():
    w = torch.randn(64, device=dev, requires_grad=True)
    Hold.apply(w[x > 0]).sum().backward()  # A_LINE
def b():
    b_ident[0] = threading.get_ident()
    v = torch.randn(64, device=dev, requires_grad=True)
    time.sleep(0.05)
    (v * 2).sum().backward()  # B_LINE
with tp.audit() as report:
    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start(); tb.start(); ta.join(); tb.join()
waits = {(e.file, e.line) for e in report.entries if e.kind != "transfer"}
print(json.dumps({"waited": b_waiting.is_set(), "lines": sorted(waits)}))
"""


def test_work_of_two_threads_backwards_at_once_is_charged_to_neither_line(
    tmp_path: Path,
) -> None:
    # the child runs the program from a file: its lines are the program's own
    path = tmp_path / "two_backwards.py"
    path.write_text(
        "import json, torch\nfrom torchport.testing import simulate_accelerator\n" + _CHILD
    )
    found = run_isolated(f"exec(compile(open({str(path)!r}).read(), {str(path)!r}, 'exec'))\n")
    assert found["waited"], "thread B never waited in backward while A's backward ran"
    numbered = path.read_text().splitlines()
    b_line = next(i for i, text in enumerate(numbered, 1) if "# B_LINE" in text)
    charged = [tuple(each) for each in found["lines"]]
    assert (str(path), b_line) not in charged, charged
    assert ("<backward of several threads>", 0) in charged, charged
