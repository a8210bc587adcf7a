"""torchport.place: choose a device and move anything to it."""

from __future__ import annotations

from torchport.place._device import (
    DeviceInfo,
    available_devices,
    pick_device,
    pick_device_with_reason,
)
from torchport.place._move import UnregisteredTensorWarning, to_device

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
    "DeviceInfo",
    "UnregisteredTensorWarning",
    "available_devices",
    "pick_device",
    "pick_device_with_reason",
    "to_device",
]
