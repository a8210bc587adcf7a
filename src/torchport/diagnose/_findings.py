"""A finding: one problem doctor() found, how bad it is, and what to do about it."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["DoctorFinding", "Severity"]


class Severity(enum.Enum):
    """How bad a finding is; ``ERROR`` makes ``torchport doctor`` exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class DoctorFinding:
    """One problem in the environment.

    Attributes:
        severity: How bad it is.
        message: What was found and what was expected.
        fix: What to do about it.
    """

    severity: Severity
    message: str
    fix: str


# Reachable as torchport.diagnose.DoctorFinding / .Severity, so reprs and pickles name that.
Severity.__module__ = "torchport"
DoctorFinding.__module__ = "torchport"
