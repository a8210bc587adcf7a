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
from torchport.diagnose._move_alias import move_names, only_the_result_remains, used_in_its_line
from torchport.diagnose._two_faced import DEVICE_SIDE, HOST_SIDE

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
    """Whether ``out``, ``tensor`` moved to the host at ``frame``'s line, is followed: as
    the host copy alone, or (the same object standing for the device tensor too, which the
    program still reaches: :mod:`._move_alias`) as the host's when read by the name the
    statement binds and the device's by the receiver's (:mod:`._two_faced`).
    False: the call was not read; the caller notes that reads of it are counted as waits
    (:data:`ONE_OBJECT`)."""
    placed = out in device_only
    device_only.discard(out)
    if out is not tensor or only_the_result_remains(frame, origin_of, out):
        held.add(out)
        return True
    named = move_names(frame, origin_of, out)
    if named is None or held.faces is None:
        return False
    at, receiver, target = named
    if held.two_faced(out):
        held.faces.bind(out, at, target, HOST_SIDE)  # z = x.cpu() again: z is the host's too
    else:
        held.discard(out)
        held.faces.add(out, at, target, receiver, HOST_SIDE, placed=placed)
    return True


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
    faces = held.faces
    if out is tensor and not creates and faces is not None and held.two_faced(out):
        # d2 = y.to(dev) or d2 = d.to(dev) of an object standing for two tensors
        on_device = out in device_only
        found = move_names(frame, origin_of, out)
        if found is not None:
            faces.bind(out, found[0], found[2], DEVICE_SIDE)
        return on_device
    was_held = out is tensor and tensor in held
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
        elif was_held and faces is not None:
            # d = h.to(dev) of a host tensor the program still uses as the host's
            found = move_names(frame, origin_of, out)
            if found is not None and found[1]:  # h, still the host's (none: as before)
                faces.add(out, found[0], found[1], found[2], DEVICE_SIDE, placed=True)
    return False
