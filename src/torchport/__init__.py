"""torchport: the same PyTorch code, correct and fast on any device.

Names are resolved lazily (PEP 562) so that ``import torchport.check`` never
imports torch and ``import torchport`` stays cheap until a name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from torchport.errors import (
    ConfigError,
    DeviceError,
    DeviceMismatchError,
    RedirectError,
    TorchportError,
    UnsupportedBatchError,
)

if TYPE_CHECKING:
    from torchport.diagnose import (
        AuditReport,
        DoctorReport,
        MemoryReport,
        audit,
        doctor,
        explain_oom,
        memory_report,
        strict,
    )
    from torchport.feed import DeviceLoader
    from torchport.place import (
        DeviceInfo,
        UnregisteredTensorWarning,
        available_devices,
        pick_device,
        pick_device_with_reason,
        to_device,
    )
    from torchport.run import redirect

__version__ = "0.1.0"

# name -> the subpackage that defines it
_LAZY: dict[str, str] = {
    "AuditReport": "torchport.diagnose",
    "UnregisteredTensorWarning": "torchport.place",
    "DeviceInfo": "torchport.place",
    "DeviceLoader": "torchport.feed",
    "DoctorReport": "torchport.diagnose",
    "MemoryReport": "torchport.diagnose",
    "audit": "torchport.diagnose",
    "available_devices": "torchport.place",
    "doctor": "torchport.diagnose",
    "explain_oom": "torchport.diagnose",
    "memory_report": "torchport.diagnose",
    "pick_device": "torchport.place",
    "pick_device_with_reason": "torchport.place",
    "redirect": "torchport.run",
    "strict": "torchport.diagnose",
    "to_device": "torchport.place",
}

__all__ = [
    "AuditReport",
    "ConfigError",
    "DeviceError",
    "DeviceInfo",
    "DeviceLoader",
    "DeviceMismatchError",
    "DoctorReport",
    "MemoryReport",
    "RedirectError",
    "TorchportError",
    "UnregisteredTensorWarning",
    "UnsupportedBatchError",
    "__version__",
    "audit",
    "available_devices",
    "doctor",
    "explain_oom",
    "memory_report",
    "pick_device",
    "pick_device_with_reason",
    "redirect",
    "strict",
    "to_device",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchport' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
