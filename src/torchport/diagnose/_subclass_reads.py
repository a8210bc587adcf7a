"""Host reads that read a device tensor's data: a tensor subclass's Python method reading
the host tensor it wraps.

A wrapper subclass on an accelerator (the simulated device's ``SimTensor``) answers
``t.tolist()`` or ``print(t)`` in Python, by reading the host tensor that holds its
values; the audit's function mode sees only that read, of a host tensor. In the
accelerator run it is the wait for ``t``: :func:`read_owner` finds ``t`` (the ``self`` of
a torchport frame between the read and the program's line) so that the read is counted
as ``t``'s, on its device, and not as a free read of a host tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType, FrameType

import torch

from torchport._device_types import HOST_TYPES
from torchport._origin import Origin

__all__ = ["read_owner"]

_DEPTH = 8  # frames looked at above the read: a method's, torch's printing helpers
_PROGRAM = frozenset({Origin.USER, Origin.INSTALLED})


def read_owner(
    frame: FrameType | None, origin_of: Callable[[CodeType], Origin], read: torch.Tensor
) -> torch.Tensor:
    """The tensor on an accelerator whose method made the read of the host tensor ``read``
    seen at ``frame`` (the watcher's frame), else ``read``: only torchport's methods are
    looked at, up to the program's frame (its own subclasses' reads are its own)."""
    frame = frame.f_back if frame is not None else None
    for _ in range(_DEPTH):
        if frame is None:
            return read
        code = frame.f_code
        origin = origin_of(code)
        if origin in _PROGRAM:
            return read
        if origin is Origin.TORCHPORT and code.co_argcount and code.co_varnames[0] == "self":
            owner = frame.f_locals.get("self")
            if isinstance(owner, torch.Tensor) and owner.device.type not in HOST_TYPES:
                return owner
        frame = frame.f_back
    return read
