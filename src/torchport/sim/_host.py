"""The host's side of the simulated accelerator: copies, waits, and reads that come too early.

A CUDA copy to the host with ``non_blocking=True`` returns at once, and the
host buffer holds its bytes only after the next synchronization; a program that
reads it sooner reads whatever was there. The simulated device keeps that
hazard: such a copy returns a buffer filled with values that differ from the
real ones (NaN for floating types, the bitwise complement for integers, the
negation for booleans) and writes the real values at the next synchronization:
a blocking copy to the host, a value read (``.item()``), or an explicit
``synchronize()``.

Every copy and wait is published to :mod:`torchport._crossings`, attributed to
the user's source line, for whoever listens (the audit, tests).
"""

from __future__ import annotations

import sys
import threading
from types import FrameType

import torch

from torchport import _crossings
from torchport._crossings import Crossing, CrossingKind
from torchport._origin import Origin, origin

__all__ = [
    "copied",
    "copied_bytes",
    "early_host_copy",
    "early_host_copy_into",
    "synchronize",
    "waited",
    "waiting_in_backward",
]

_pending: list[tuple[torch.Tensor, torch.Tensor]] = []  # (host buffer, its real values)
_lock = threading.Lock()


_DEVICE = "sim:0"


def _first_user_frame(frame: FrameType | None) -> tuple[str, int, str] | None:
    while frame is not None:
        filename = frame.f_code.co_filename
        if origin(filename) is Origin.USER:
            return filename, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None


def waiting_in_backward() -> list[FrameType]:
    """The frame of each other Python thread waiting in autograd's engine (torch's
    ``_engine_run_backward``, which ``backward()`` and ``autograd.grad`` call)."""
    me = threading.get_ident()
    frames = []
    for ident, frame in sys._current_frames().items():
        walk: FrameType | None = frame if ident != me else None
        while walk is not None and walk.f_code.co_name != "_engine_run_backward":
            walk = walk.f_back
        if walk is not None:
            frames.append(walk)
    return frames


def _backward_caller() -> tuple[str, int, str] | None:
    """The user's line of a thread waiting in autograd's engine (``loss.backward()``):
    the backward pass of a device runs on the engine's own thread for that device, with
    no Python frame of the program's, as CUDA's does; its copies and waits are that
    line's, where a CPU run (which runs it on the calling thread) charges them too.

    The engine's thread serves every thread's backward and does not say whose graph a
    node is: when threads waiting there stand at different lines, the work is charged to
    :data:`SEVERAL_BACKWARDS` (a line of none of them), never to one picked at random."""
    found: set[tuple[str, int, str]] = set()
    for waiting in waiting_in_backward():
        line = _first_user_frame(waiting)
        if line is not None:
            found.add(line)
    if len(found) > 1:
        return SEVERAL_BACKWARDS
    return next(iter(found), None)


SEVERAL_BACKWARDS = ("<backward of several threads>", 0, "")
"""Where the engine thread's copies and waits are charged while threads at different lines
wait in backward at once (see :func:`_backward_caller`)."""


def _user_line() -> tuple[str, int, str]:
    found = _first_user_frame(sys._getframe(2))
    if found is None:
        found = _backward_caller()
    return found if found is not None else ("", 0, "")


def _publish(
    kind: CrossingKind,
    op: str,
    nbytes: int,
    label: str,
    *,
    pinned: bool = False,
    non_blocking: bool = False,
) -> None:
    """Publish one crossing, charged to the program's line that led to it."""
    filename, lineno, function = _user_line()
    _crossings.publish(
        Crossing(kind, op, nbytes, pinned, non_blocking, filename, lineno, function, _DEVICE, label)
    )


def copied(
    kind: CrossingKind,
    op: str,
    tensor: torch.Tensor,
    *,
    pinned: bool,
    non_blocking: bool,
    label: str = "",
) -> None:
    """Tell listeners that ``tensor``'s bytes crossed in direction ``kind``; an empty
    tensor's copy is none (ATen's ``copy_impl`` returns before any transfer when the
    iterator has no elements)."""
    nbytes = tensor.numel() * tensor.element_size()
    if not nbytes or not _crossings.watched():
        return
    label = label or ("copy (.to()/.cpu()/.cuda())" if "to_copy" in op else f"copy ({op})")
    _publish(kind, op, nbytes, label, pinned=pinned, non_blocking=non_blocking)


def copied_bytes(kind: CrossingKind, op: str, nbytes: int, label: str = "") -> None:
    """Tell listeners that ``nbytes`` crossed inside ``op`` (an index tensor CUDA copies,
    a storage ``torch.load`` puts on the device); an empty index (``x[[]]``, a host mask
    with no ``True``) copies nothing."""
    if not nbytes or not _crossings.watched():
        return
    _publish(kind, op, nbytes, label or f"copy inside {op}")


def waited(op: str, label: str = "", nbytes: int = 0) -> None:
    """The host waited for the device (a value read, a data-dependent shape): land every copy.

    ``nbytes`` is what a value read brings back (``.item()``: one element), counted with
    the wait rather than as a copy of its own, as the audit counts it.
    """
    synchronize()
    if not _crossings.watched():
        return
    _publish(CrossingKind.SYNC, op, nbytes, label or f"host wait ({op})")


def _garbage_like(real: torch.Tensor) -> torch.Tensor:
    if real.dtype == torch.bool:
        return torch.logical_not(real)
    if real.is_floating_point() or real.is_complex():
        return torch.full_like(real, float("nan"))
    return torch.bitwise_not(real)


def early_host_copy(real: torch.Tensor) -> torch.Tensor:
    """A host buffer for an asynchronous copy of ``real``: wrong until the next synchronization."""
    buffer = _garbage_like(real)
    with _lock:
        _pending.append((buffer, real))
    return buffer


def early_host_copy_into(buffer: torch.Tensor, real: torch.Tensor) -> None:
    """Make ``buffer`` (a host tensor) read wrong until the next synchronization lands ``real``."""
    with torch.no_grad():
        buffer.copy_(_garbage_like(real.to(buffer.dtype).expand_as(buffer)))
    with _lock:
        _pending.append((buffer, real))


def synchronize() -> None:
    """Finish every asynchronous copy to the host, as a device synchronization does."""
    if not _pending:
        return
    with _lock:
        landing = list(_pending)
        _pending.clear()
    with torch.no_grad():
        for buffer, real in landing:
            buffer.copy_(real)
