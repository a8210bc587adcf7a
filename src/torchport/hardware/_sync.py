"""Ordering work on a device: host waits, streams and events.

The runtime blocks the host on a device, or creates a stream or an event,
through the functions here, which ask the backend (``hardware/_backend.py``);
``tests/hardware/test_floor.py`` fails on a ``torch.cuda``/``torch.accelerator``
call elsewhere. Each says when it waits. (A user's ``.item()`` or a blocking
``.to("cpu")`` waits too; the audit counts those.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import torch

from torchport._device_types import CPU, CUDA, HOST_TYPES, MPS
from torchport.hardware import _backend, _torch_features

__all__ = [
    "current_stream",
    "new_event",
    "new_stream",
    "record_stream",
    "sync_debug_mode_reader",
    "synchronize",
    "use_stream",
    "wait_for_copies",
]


def synchronize(device: torch.device, *, stream_only: bool = False) -> None:
    """Block the host until the work queued on ``device`` has finished.

    A no-op for the CPU and meta. ``stream_only`` waits for the device's current
    stream alone (enough after copies issued on it, and cheaper when other
    streams are busy); otherwise every stream of the device. MPS has one queue
    and is always waited on whole.
    """
    if device.type in HOST_TYPES:
        return
    _backend.ACTIVE.synchronize(device, stream_only=stream_only)


def wait_for_copies(sources: Iterable[torch.device], target: torch.device) -> None:
    """The host waits once for asynchronous copies into ``target`` to land.

    Copies to the CPU are ordered on the current stream of each accelerator they
    came from, so that stream is waited on once per source device. Copies to
    MPS end with one MPS synchronization. Any other target needs no wait (stream
    order covers the device work that reads the results).
    """
    if target.type == MPS:
        synchronize(target)
    elif target.type == CPU:
        for device in set(sources):
            if device.type not in HOST_TYPES:
                synchronize(device, stream_only=True)


def new_stream(device: torch.device) -> torch.Stream:
    """A new stream on the accelerator ``device`` (a side stream for copies)."""
    return _backend.ACTIVE.new_stream(device)


def current_stream(device: torch.device) -> torch.Stream:
    """The stream that work on ``device`` is queued on now."""
    return _backend.ACTIVE.current_stream(device)


def new_event(*, timing: bool = False) -> torch.Event:
    """A new event; it belongs to the device of the stream it is first recorded on."""
    return _backend.ACTIVE.new_event(timing=timing)


def use_stream(stream: torch.Stream | None) -> contextlib.AbstractContextManager[Any]:
    """Make ``stream`` the current stream inside a ``with`` block (``None``: leave it)."""
    if stream is None:
        return contextlib.nullcontext()
    return _backend.ACTIVE.use_stream(stream)


def record_stream(tensor: torch.Tensor, stream: torch.Stream) -> None:
    """Keep ``tensor``'s memory from reuse until the work queued on ``stream`` is done.

    For a tensor allocated on one stream and used on another. Sparse tensors have
    no storage of their own: their indices and values are recorded. Nested
    tensors and tensor subclasses are refused with ``TypeError``; callers move
    those on the consuming stream instead, where stream order protects them.
    Never waits.
    """
    layout = tensor.layout
    if layout == torch.sparse_coo:
        parts = [tensor._indices(), tensor._values()]
    elif layout in (torch.sparse_csr, torch.sparse_bsr):
        parts = [tensor.crow_indices(), tensor.col_indices(), tensor.values()]
    elif layout in (torch.sparse_csc, torch.sparse_bsc):
        parts = [tensor.ccol_indices(), tensor.row_indices(), tensor.values()]
    elif type(tensor) is torch.Tensor and not tensor.is_nested and layout == torch.strided:
        parts = [tensor]
    else:
        raise TypeError(
            f"cannot record a {type(tensor).__name__} ({layout}, nested={tensor.is_nested}) "
            "on a stream; move it on the stream that uses it instead"
        )
    backend = _backend.ACTIVE
    for part in parts:
        backend.record_stream(part, stream)


def sync_debug_mode_reader() -> Callable[[], int]:
    """A function that reads CUDA's sync debug mode (0 off, 1 warn, 2 error), cheaply.

    ``torch.cuda.set_sync_debug_mode`` can change at any time, so callers read it
    per call through the returned C getter; without CUDA it is always 0.
    """
    if not _backend.ACTIVE.available(CUDA):
        return _never
    getter = _torch_features.cuda_private("_cuda_get_sync_debug_mode")
    return _never if getter is None else getter


def _never() -> int:
    return 0
