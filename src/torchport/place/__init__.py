"""torchport.place: choose a device and move anything to it.

``flatten_batch``, ``BatchLayout`` and ``settled`` are the one tree walker's face
for ``feed`` (which moves the leaves itself, through staging buffers, and objects
with their own ``.to`` through ``call_own_to``, or, for a batch that is one such
object, ``whole_tensors`` and ``move_whole``); users call ``to_device``.
``resolve_device`` reads a device the user named, following a
``torchport.redirect`` in force, which ``run`` announces with ``push_redirect`` and
``pop_redirect``.
"""

from __future__ import annotations

from torchport.place._device import (
    DeviceInfo,
    available_devices,
    is_automatic,
    pick_device,
    pick_device_with_reason,
)
from torchport.place._move import UnregisteredTensorWarning, to_device
from torchport.place._own_to import call_own_to
from torchport.place._redirected import (
    pop_redirect,
    push_redirect,
    redirect_target,
    resolve_device,
)
from torchport.place._settled import settled
from torchport.place._tree import BatchLayout, flatten_batch
from torchport.place._uncopyable import (
    COPY_FAILURES,
    check_hidden,
    copy_failure,
    named_copy_failure,
)
from torchport.place._untouched import Snapshot, snapshot, versions
from torchport.place._whole import Inside, move_whole, whole_tensors

# Re-exported at top level: reprs and docs say torchport.<name>.
for _obj in (
    DeviceInfo,
    UnregisteredTensorWarning,
    available_devices,
    pick_device,
    pick_device_with_reason,
    to_device,
):
    _obj.__module__ = "torchport"
del _obj

__all__ = [
    "COPY_FAILURES",
    "BatchLayout",
    "DeviceInfo",
    "Inside",
    "Snapshot",
    "UnregisteredTensorWarning",
    "available_devices",
    "call_own_to",
    "check_hidden",
    "copy_failure",
    "flatten_batch",
    "is_automatic",
    "move_whole",
    "named_copy_failure",
    "pick_device",
    "pick_device_with_reason",
    "pop_redirect",
    "push_redirect",
    "redirect_target",
    "resolve_device",
    "settled",
    "snapshot",
    "to_device",
    "versions",
    "whole_tensors",
]
