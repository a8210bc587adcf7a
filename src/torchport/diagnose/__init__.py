"""diagnose: which tensor is on the wrong device, where code copies or waits, is the setup right."""

from __future__ import annotations

from torchport.diagnose import _rich_quietly  # noqa: F401  (first: rich draws at import)
from torchport.diagnose._audit import AuditEntry, AuditReport, audit
from torchport.diagnose._bandwidth import CopyBandwidth
from torchport.diagnose._doctor import DoctorReport, doctor
from torchport.diagnose._doctor_drawing import render_doctor
from torchport.diagnose._env import DeviceChoice
from torchport.diagnose._findings import DoctorFinding, Severity
from torchport.diagnose._host_work import loading as data_loading
from torchport.diagnose._memory import MemoryReport, memory_report
from torchport.diagnose._on_device import copies_on_device, syncs_on_device
from torchport.diagnose._oom import explain_oom
from torchport.diagnose._oom_causes import OomCase, OomExplanation
from torchport.diagnose._ops import aten_entry
from torchport.diagnose._probes import (
    AcceleratorInfo,
    DriverInfo,
    GpuInfo,
    HostInfo,
    TorchBuild,
)
from torchport.diagnose._software import CudaToolkit
from torchport.diagnose._strict import strict

__all__ = [
    "AcceleratorInfo",
    "AuditEntry",
    "AuditReport",
    "CopyBandwidth",
    "CudaToolkit",
    "DeviceChoice",
    "DoctorFinding",
    "DoctorReport",
    "DriverInfo",
    "GpuInfo",
    "HostInfo",
    "MemoryReport",
    "OomCase",
    "OomExplanation",
    "Severity",
    "TorchBuild",
    "aten_entry",
    "audit",
    "copies_on_device",
    "data_loading",
    "doctor",
    "explain_oom",
    "memory_report",
    "render_doctor",
    "strict",
    "syncs_on_device",
]
