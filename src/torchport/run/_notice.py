"""The first time a redirect acts for the program: `torchport run` says so then, not before.

A script that never names CUDA (it picks its device with ``torch.accelerator`` or
``torchport.pick_device``) is not redirected at all, and a line saying "CUDA is
redirected" would only puzzle its reader. The redirect's stand-ins and its
device rewriting call :func:`acting` where they change what the program asked
for; a listener registered with :func:`on_first_use` runs once, at that moment,
so its line lands just before the output the redirect explains.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

__all__ = ["acting", "on_first_use"]

_LOCK = threading.Lock()
_LISTENERS: list[Callable[[], None]] = []


def acting() -> None:
    """Called where the redirect changes a CUDA request; runs the waiting listeners once."""
    if not _LISTENERS:  # the common case, after the first call: one list check
        return
    with _LOCK:
        waiting = list(_LISTENERS)
        _LISTENERS.clear()
    for listener in waiting:
        listener()


@contextlib.contextmanager
def on_first_use(listener: Callable[[], None]) -> Iterator[None]:
    """Run ``listener`` the first time the redirect acts inside the block (or never)."""
    with _LOCK:
        _LISTENERS.append(listener)
    try:
        yield
    finally:
        with _LOCK:
            if listener in _LISTENERS:
                _LISTENERS.remove(listener)
