"""diagnose: which tensor is on the wrong device, where code copies or waits, is the setup right."""

from __future__ import annotations

from torchport.diagnose._audit import AuditEntry, AuditReport, audit
from torchport.diagnose._bandwidth import CopyBandwidth
from torchport.diagnose._doctor import DoctorReport, doctor
from torchport.diagnose._findings import DoctorFinding, Severity
from torchport.diagnose._memory import MemoryReport, memory_report
from torchport.diagnose._oom import OomCase, OomExplanation, explain_oom
from torchport.diagnose._report import render_doctor
from torchport.diagnose._strict import strict

__all__ = [
    "AuditEntry",
    "AuditReport",
    "CopyBandwidth",
    "DoctorFinding",
    "DoctorReport",
    "MemoryReport",
    "OomCase",
    "OomExplanation",
    "Severity",
    "audit",
    "doctor",
    "explain_oom",
    "memory_report",
    "render_doctor",
    "strict",
]
