"""The words and shapes of one counted audit event, shared by the recorder and its parts."""

from __future__ import annotations

from torchport._device_types import HOST_TYPES
from torchport.diagnose._ops import OpKind

__all__ = [
    "DATA_LOADING",
    "HOST_TYPES",
    "LOADING_TO_DEVICE",
    "TO_DEVICE",
    "TO_HOST",
    "TRANSFER",
    "Key",
    "Row",
    "Where",
]

# Devices whose scalar reads cost no wait (the vocabulary's HOST_TYPES): the audit still
# lists them, labelled as points that would synchronize on an accelerator.

# What a predicted copy's direction is called: the run's device is the host here, so
# both ends are "cpu"; on an accelerator one of them is the device.
TO_DEVICE, TO_HOST = "host→device", "device→host"
DATA_LOADING = "data loading"
"""The phase of an event made while a DataLoader fetched (see :mod:`._host_work`)."""
# ... and of a predicted copy made there to the program's device: device work (its entry's
# phase reads DATA_LOADING)
LOADING_TO_DEVICE = "data loading, to the device"
TRANSFER = OpKind.TRANSFER.value

# (kind, label, op, device, would_sync, phase) + where (file, line, function, via file, via line)
Key = tuple[str, str, str, str, bool, str]
Row = tuple[str, str, str, str, bool, str, str, int, str, str, int]
Where = tuple[str, int, str, str, int]
