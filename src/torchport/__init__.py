"""torchport: the same PyTorch code, correct and fast on any device.

Names are resolved lazily (PEP 562) so that ``import torchport.check`` never
imports torch and ``import torchport`` stays cheap until a name is used. The
runtime names need the ``torch`` extra; where torch is missing, using one
raises :class:`MissingDependencyError` with the command that installs it.
"""

import os as _os
import sys as _sys

# `python -m torchport` puts the working folder first on sys.path, and runs this file
# before __main__ (sys.argv[0] reads "-m" meanwhile): take the folder off before the
# imports below, so that a checked project's own `typing.py`, `re.py`, `tokenize.py` or
# `torch.py` is never executed in place of the real one (see torchport/__main__.py). Its
# slot stays, holding the folder torchport was imported from (as the `torchport` command's
# own folder holds it there): `torchport run` puts the script's folder in that slot, and
# PYTHONPATH's entries after it stay where they are (`-P` leaves no slot: one is made).
if _sys.argv[:1] == ["-m"] and _sys.path:
    _home = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    if _sys.flags.safe_path:
        _sys.path.insert(0, _home)
    else:
        try:
            if _sys.path[0] == "" or _os.path.samefile(_sys.path[0], _os.getcwd()):
                _sys.path[0] = _home
        except OSError:
            pass


from torchport._lazy import lazy_exports
from torchport.errors import (
    ConfigError,
    DeviceError,
    DeviceMismatchError,
    MissingDependencyError,
    RedirectError,
    TorchportError,
    UnsupportedBatchError,
)

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.diagnose import (
        AcceleratorInfo,
        AuditEntry,
        AuditReport,
        CopyBandwidth,
        CudaToolkit,
        DeviceChoice,
        DoctorFinding,
        DoctorReport,
        DriverInfo,
        GpuInfo,
        HostInfo,
        MemoryReport,
        OomCase,
        OomExplanation,
        Severity,
        TorchBuild,
        audit,
        doctor,
        explain_oom,
        memory_report,
        strict,
    )
    from torchport.feed import DeviceLoader, FeedStats
    from torchport.place import (
        DeviceInfo,
        UnregisteredTensorWarning,
        available_devices,
        pick_device,
        pick_device_with_reason,
        to_device,
    )
    from torchport.run import redirect

# The one place the version is written: pyproject.toml reads it from here (without
# importing the package), `torchport --version` and SARIF logs print it, and the
# release tag is `v` + this.
__version__ = "0.2.0"

# name -> the subpackage that defines it
_LAZY: dict[str, str] = {
    "AcceleratorInfo": "torchport.diagnose",
    "AuditEntry": "torchport.diagnose",
    "AuditReport": "torchport.diagnose",
    "CopyBandwidth": "torchport.diagnose",
    "CudaToolkit": "torchport.diagnose",
    "DeviceChoice": "torchport.diagnose",
    "DeviceInfo": "torchport.place",
    "DeviceLoader": "torchport.feed",
    "DoctorFinding": "torchport.diagnose",
    "DoctorReport": "torchport.diagnose",
    "DriverInfo": "torchport.diagnose",
    "FeedStats": "torchport.feed",
    "GpuInfo": "torchport.diagnose",
    "HostInfo": "torchport.diagnose",
    "MemoryReport": "torchport.diagnose",
    "OomCase": "torchport.diagnose",
    "OomExplanation": "torchport.diagnose",
    "Severity": "torchport.diagnose",
    "TorchBuild": "torchport.diagnose",
    "UnregisteredTensorWarning": "torchport.place",
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
    "AcceleratorInfo",
    "AuditEntry",
    "AuditReport",
    "ConfigError",
    "CopyBandwidth",
    "CudaToolkit",
    "DeviceChoice",
    "DeviceError",
    "DeviceInfo",
    "DeviceLoader",
    "DeviceMismatchError",
    "DoctorFinding",
    "DoctorReport",
    "DriverInfo",
    "FeedStats",
    "GpuInfo",
    "HostInfo",
    "MemoryReport",
    "MissingDependencyError",
    "OomCase",
    "OomExplanation",
    "RedirectError",
    "Severity",
    "TorchBuild",
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


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
