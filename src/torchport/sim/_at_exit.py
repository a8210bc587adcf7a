"""Autograd's thread for the simulated device is idle before the interpreter finalizes.

Autograd runs a device's backward on a C++ thread of its own (as it does CUDA's). On the
simulated device every op of that backward is Python, and so is the thread's last step
when it drops a graph that held the last reference to a tensor on the device: both take
the GIL. A thread that takes the GIL after the interpreter began finalizing is ended by
CPython with ``pthread_exit``, and the process aborts after the program ran to its end
("terminate called without an active exception", or a fatal ``PyEval_SaveThread`` error).
A CUDA backward runs no Python there, so the simulated device must not abort where
CUDA exits cleanly: a backward still running in a daemon thread at exit, or a graph the
engine's thread had not yet dropped when the program's last line ran.

:func:`drain_backward` runs at exit (registered once the accelerator is installed): a
one-node backward on the device, queued behind whatever the engine's thread still holds.
That thread runs its queue in order, one task at a time, and drops a task's graph before it
takes the next; so once the drain's backward returned, every earlier graph is gone. The
drain's own graph is dropped after its backward returned, and with nothing to free there
(its leaf is kept for the process's life) that takes no GIL. Then a wait until every
thread whose backward ended has left the engine (a daemon thread still inside
``backward()`` when the interpreter finalizes is ended there, inside torch's C++, and
aborts the process as well). It waits for a backward in flight to end, as a non-daemon
thread is waited for.
"""

from __future__ import annotations

import ctypes
import time

import torch

from torchport.sim._host import waiting_in_backward
from torchport.sim._ledger import LEDGER

__all__ = ["drain_backward"]

_LEAVE_WAIT_S = 10.0
"""How long to wait, after the drain's backward returned, for threads whose backward ended to
leave the engine (microseconds, unless a thread is not scheduled, or a daemon thread goes on
calling ``backward()``)."""


def drain_backward(device: torch.device) -> None:
    """Wait until autograd's thread for ``device`` has finished every backward queued on it
    and dropped every graph it held; a no-op in a forked child, where autograd's threads are
    not usable, and in a process where no tensor on the device was made off the main thread
    (no backward ran there: the drain would start autograd's thread for it at exit);
    with the device full (a memory limit reached), only the wait for threads in backward."""
    if not LEDGER.made_off_the_main_thread():
        return  # no backward ran on the device: autograd's thread for it was never started
    with (
        torch.inference_mode(False),
        torch.enable_grad(),
        torch.autograd.set_multithreading_enabled(True),
    ):
        try:
            leaf = torch.zeros((), device=device, requires_grad=True)
        except torch.OutOfMemoryError:
            leaf = None  # the device is full (a program ended by it): only the wait is left
        if leaf is not None:
            # Kept for good: freeing it (or its grad) would take the GIL on the engine's
            # thread if that thread drops the drain's graph after the interpreter finalized.
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(leaf))
            try:
                (leaf * 1).backward()  # type: ignore[no-untyped-call]
            except RuntimeError as exc:
                if "fork" in str(exc):  # autograd refuses a child forked after its threads ran
                    return
                raise
    deadline = time.monotonic() + _LEAVE_WAIT_S
    while waiting_in_backward() and time.monotonic() < deadline:
        time.sleep(0.001)  # lets those threads take the GIL and leave
