"""Copies torchport skipped because the tensors were already on the target, told to listeners.

On a CPU run torchport's movers hand tensors over where they are (the
``DeviceLoader``'s pass-through); on an accelerator the same call copies each one.
The audit (``torchport.diagnose``) counts the copies an accelerator run would make,
so a mover that skips copies tells it here; nothing listens otherwise, and a mover
checks :data:`listeners` before building anything to tell::

    if _skipped_copies.listeners:  # an audit is running
        _skipped_copies.tell(tensors, device, by="torchport.DeviceLoader")

This is the documented way for code below the audit (``feed``, ``place``) to report
copies it skips, without importing the audit. Imports nothing (not even torch).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Listener", "listen", "listeners", "tell", "tell_wait", "unlisten"]

Listener = Callable[..., None]
"""Called as ``listener(tensors, device, by=mover)``: the tensors left where they were, the
device they were asked to go to, and who skipped the copies; ``tensors`` is None for a
wait skipped (:func:`tell_wait`)."""

listeners: list[Listener] = []
"""Who listens now; empty (false) when nobody does. Read it, never change it directly."""

_lock = threading.Lock()


def _after_fork_in_child() -> None:
    # the child has one thread: a lock another thread held at the fork stays held there
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def listen(listener: Listener) -> None:
    """Start telling ``listener`` about skipped copies (each listener is added once)."""
    with _lock:
        if not any(each is listener for each in listeners):
            listeners.append(listener)


def unlisten(listener: Listener) -> None:
    """Stop telling ``listener``; nothing happens when it was not listening."""
    with _lock:
        listeners[:] = [each for each in listeners if each is not listener]


def tell(tensors: Iterable[Any], device: Any, *, by: str) -> None:
    """Report that ``tensors`` were handed over without a copy, for ``device``.

    Args:
        tensors: The tensors left as they were (already on ``device``).
        device: The ``torch.device`` they were asked to go to.
        by: Who skipped the copies, as users know it: ``"torchport.DeviceLoader"``.
    """
    for listener in tuple(listeners):
        listener(tensors, device, by=by)


def tell_wait(device: Any, *, by: str) -> None:
    """Report that the host did not wait for ``device`` where an accelerator run waits.

    ``torch.cuda.synchronize()`` redirected to the CPU returns at once; on an
    accelerator it is a host wait, which the audit counts.

    Args:
        device: The host ``torch.device`` the wait was redirected to.
        by: The call, as users know it: ``"torch.cuda.synchronize"``.
    """
    for listener in tuple(listeners):
        listener(None, device, by=by)
