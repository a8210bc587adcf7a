"""Which side of the accelerator run a moved tensor's result is followed on.

On this host a move often hands back the very tensor it was given (``x.to("cpu")`` of a
host tensor, ``x.cuda()`` redirected), so one Python object can stand for a host tensor
and its device copy at once. The recorder asks these two questions of each counted
move: :func:`host_copy_alone` (a move to the host) and :func:`moved_on_device` (a move
to the device), and follows the result in :class:`._host_held.HostHeld` sets: what the
accelerator run keeps on the host, and what it holds on the device only.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

import torch

from torchport._origin import Origin
from torchport.diagnose._callsite import DEVICE
from torchport.diagnose._host_held import HostHeld
from torchport.diagnose._move_alias import only_the_result_remains, used_in_its_line

__all__ = ["ONE_OBJECT", "host_copy_alone", "moved_on_device"]

ONE_OBJECT = "a move to the host of a tensor the program still holds is that tensor itself on \
the CPU, so reads of the host copy are counted as waits (--device sim measures them)"


def host_copy_alone(
    held: HostHeld,
    device_only: HostHeld,
    origin_of: Callable[[CodeType], Origin],
    frame: FrameType | None,
    tensor: torch.Tensor,
    out: torch.Tensor,
) -> bool:
    """Whether ``out``, ``tensor`` moved to the host at ``frame``'s line, is the host copy
    alone (then followed as the host's): the same object stands for the device tensor
    too unless nothing else reaches that after the statement (:mod:`._move_alias`).
    False: the caller notes that reads of it are counted as waits (:data:`ONE_OBJECT`)."""
    device_only.discard(out)
    if out is not tensor or only_the_result_remains(frame, origin_of, out):
        held.add(out)
        return True
    return False


def moved_on_device(
    held: HostHeld,
    device_only: HostHeld,
    origin_of: Callable[[CodeType], Origin],
    frame: FrameType | None,
    creates: bool,
    tensor: Any,
    out: Any,
    named: object,
) -> bool:
    """Follow ``out``, ``tensor`` moved to the device (``creates``: by ``torch.tensor``
    and kin, a new tensor). True when the accelerator run had it there already: no copy."""
    if (
        out is tensor
        and not creates
        and tensor in held
        and (lent_at := used_in_its_line(frame, origin_of))
    ):
        # x[hidx.to(dev)] of a host tensor the program still holds: on this host the same
        # object, the device's for this line, the host's after
        held.lend(out, lent_at)
        return False
    held.discard(tensor)  # on this host the call hands back the same tensor
    held.discard(out)  # ... or a new one (a dtype change too), which followed its host input
    if tensor in device_only and named == DEVICE:
        device_only.add(out)  # x.to(dev, dtype): converted on the device
        return True
    if out is tensor and not creates:
        if out in device_only:
            return True  # c = c.to(dev) again: on the device already, no copy
        if only_the_result_remains(frame, origin_of, out):
            device_only.add(out)
    return False
