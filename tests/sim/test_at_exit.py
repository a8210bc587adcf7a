"""A process with the simulated accelerator exits cleanly while autograd's thread for it is busy.

Found in CI: a ported program run on the simulated device ran to its end, printed its
result, and the process then aborted ("terminate called without an active exception"):
autograd's thread for the device dropped a graph (freeing a tensor on the device, which
takes the GIL) after the interpreter began finalizing. A CUDA backward runs no Python on
that thread, so a program that exits cleanly on CUDA must exit cleanly here.

That race needs the thread to be descheduled at the wrong microsecond; the same class is
reproduced at will by a backward still running on the engine's thread when the main
thread's program ends (a daemon thread training while the main thread returns). The
oracle is the child's exit status and its stderr: exit 0, no abort, no traceback, and the
program's last line printed. Each case aborts without the drain at exit (``_at_exit.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.needs_simulator

_PRELUDE = """
import os, sys, threading, time
import torch
from torchport.testing import simulate_accelerator
dev = simulate_accelerator()
started = threading.Event()
"""

# Each program's main thread ends while autograd's thread for the device is busy.
_PROGRAMS = {
    "a long chain of device ops in backward": """
        def train():
            w = torch.ones(8, device=dev, requires_grad=True)
            y = w
            for _ in range(3000):
                y = y * 1.0001
            y.register_hook(lambda grad: started.set())  # the first node of the backward
            y.sum().backward()
            threading.Event().wait()
        """,
    "a custom Function's backward in flight": """
        class Slow(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                started.set()
                time.sleep(0.5)
                return grad * 2

        def train():
            w = torch.ones(3, device=dev, requires_grad=True)
            Slow.apply(w).sum().backward()
            threading.Event().wait()
        """,
}


def _run(source: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, timeout=240, check=False
    )


def _assert_clean_exit(done: subprocess.CompletedProcess[str], last_line: str) -> None:
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == last_line, done.stdout[-1000:]


@pytest.mark.parametrize(
    "program",
    # one in the default run, the other in the slow run (`-m slow`): a child each, ~3 s of CPU
    [
        p if i == 0 else pytest.param(p, marks=pytest.mark.slow)
        for i, p in enumerate(sorted(_PROGRAMS))
    ],
)
def test_a_backward_running_when_the_program_ends_lets_the_process_exit(program: str) -> None:
    source = (
        _PRELUDE
        + textwrap.dedent(_PROGRAMS[program])
        + textwrap.dedent("""
        threading.Thread(target=train, daemon=True).start()
        assert started.wait(120)
        print("main thread done", flush=True)
        """)
    )
    _assert_clean_exit(_run(source), "main thread done")


def test_a_child_forked_after_a_backward_exits_quietly() -> None:
    """Autograd refuses a backward in a child forked after its threads started: the drain at
    exit is then skipped, not raised."""
    source = _PRELUDE + textwrap.dedent("""
        w = torch.ones(3, device=dev, requires_grad=True)
        (w * 2).sum().backward()
        pid = os.fork()
        if pid == 0:
            print("child done", flush=True)
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
        """)
    done = _run(source)
    _assert_clean_exit(done, "child exit 0")
    assert "child done" in done.stdout


def test_a_program_ended_by_a_full_device_shows_its_own_error_only() -> None:
    """The drain's own tensor cannot be made on a full device: it is skipped, and the
    program's out-of-memory error is the only traceback (none from an ``atexit`` callback)."""
    source = textwrap.dedent("""
        import torch
        from torchport.testing import simulate_accelerator
        dev = simulate_accelerator(memory_limit=64)
        w = torch.ones(8, device=dev, requires_grad=True)  # 32 bytes
        held = w * 2  # 64 bytes: the device is full
        held.sum().backward()
        """)
    done = _run(source)
    assert done.returncode == 1, done.stderr[-3000:]
    assert done.stderr.count("Traceback") == 1, done.stderr[-3000:]
    assert "atexit" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.rstrip().splitlines()[-1].startswith("torch.OutOfMemoryError"), done.stderr


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_a_program_with_no_backward_starts_no_thread_at_exit() -> None:
    """Without a backward on the device, autograd's thread for it was never started, and the
    exit does not start it (a thread made at exit has only the interpreter's teardown to race
    with); after a backward, the drain runs on the thread that exists."""
    source = textwrap.dedent("""
        import atexit, os
        import torch
        threads = lambda: len(os.listdir("/proc/self/task"))
        atexit.register(lambda: print("at the end", threads(), flush=True))  # runs last
        from torchport.testing import simulate_accelerator
        dev = simulate_accelerator()
        model = torch.nn.Linear(4, 4).to(dev)
        print(float(model(torch.ones(2, 4, device=dev)).sum()) != 0.0)
        print("program done", threads(), flush=True)
        """)
    done = _run(source)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.rsplit(" ", 1) for line in done.stdout.splitlines()[1:])
    assert lines["at the end"] == lines["program done"], done.stdout


def test_noting_a_tensor_made_off_the_main_thread_registers_no_thread() -> None:
    """The note the drain reads is taken on autograd's own C++ thread: asking ``threading`` who
    runs there would register that thread as a dummy one, and ``audit()`` would then report
    "1 other thread ran meanwhile" after every backward on the device."""
    source = textwrap.dedent("""
        import threading
        import torch
        from torchport.sim._ledger import LEDGER
        from torchport.testing import simulate_accelerator
        dev = simulate_accelerator()
        w = torch.ones(3, device=dev, requires_grad=True)
        (w * 2).sum().backward()
        print(LEDGER.made_off_the_main_thread(), len(threading.enumerate()), flush=True)
        """)
    _assert_clean_exit(_run(source), "True 1")
