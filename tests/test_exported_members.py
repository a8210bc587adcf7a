"""Pins the public surface: adding or removing a name is a deliberate act."""

from __future__ import annotations

import subprocess
import sys

import torchport

EXPECTED = [
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


def test_all_is_pinned_and_sorted() -> None:
    assert torchport.__all__ == EXPECTED
    assert sorted(torchport.__all__) == torchport.__all__


def test_every_exported_name_resolves() -> None:
    for name in torchport.__all__:
        value = getattr(torchport, name)
        module = getattr(value, "__module__", None)
        if module is not None and not name.startswith("__"):
            assert module == "torchport", f"{name}.__module__ is {module!r}; set it to 'torchport'"


def test_unknown_name_raises_attribute_error() -> None:
    try:
        torchport.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_torchport_is_lazy() -> None:
    code = "import sys, torchport, torchport.errors; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
