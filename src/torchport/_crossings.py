"""What crosses between the host and a device, told by the device that saw it happen.

A device backend that can see its own copies and host waits (the simulated
accelerator in :mod:`torchport.sim`) publishes each one here as a
:class:`Crossing`; whoever wants to count them (the audit, a test) listens with
:func:`listening`. This module is the floor both stand on, so the publisher
never imports the listener and the listener never names the device.

Nothing is recorded while nobody listens: :func:`publish` is one check of a list.
"""

from __future__ import annotations

import contextlib
import enum
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Crossing", "CrossingKind", "listening", "publish", "watched"]


class CrossingKind(enum.Enum):
    """Which way bytes went, or that the host waited."""

    HOST_TO_DEVICE = "host to device"
    DEVICE_TO_HOST = "device to host"
    SYNC = "sync"
    """The host waited for the device to learn a value (``.item()``, ``nonzero``, printing)."""


@dataclass(frozen=True, slots=True)
class Crossing:
    """One copy between the host and a device, or one host wait.

    Attributes:
        kind: The direction, or :attr:`CrossingKind.SYNC`.
        op: The aten op or call that made it (``"aten._to_copy"``, ``"aten._local_scalar_dense"``).
        nbytes: Bytes copied (0 for a wait that copies nothing it can size).
        pinned: The host side was page-locked memory.
        non_blocking: The copy was asked to be asynchronous.
        filename: The user's file the crossing is attributed to, or ``""`` when unknown.
        lineno: The line in ``filename``, or 0.
        function: The function holding that line, or ``""``.
        device: The device on the far side from the host (``"sim:0"``).
        label: What happened, in the audit's words (``"scalar read (.item())"``), or ``""``.
    """

    kind: CrossingKind
    op: str
    nbytes: int = 0
    pinned: bool = False
    non_blocking: bool = False
    filename: str = ""
    lineno: int = 0
    function: str = ""
    device: str = ""
    label: str = ""


_listeners: list[Callable[[Crossing], None]] = []
_lock = threading.Lock()


def watched() -> bool:
    """Whether anybody listens, so a publisher can skip building a :class:`Crossing`."""
    return bool(_listeners)


def publish(crossing: Crossing) -> None:
    """Tell every listener about ``crossing``."""
    for listener in tuple(_listeners):
        listener(crossing)


@contextlib.contextmanager
def listening(listener: Callable[[Crossing], None]) -> Iterator[None]:
    """Call ``listener`` with every crossing published while the block runs (in any thread)."""
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)
