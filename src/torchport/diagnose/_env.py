"""The environment doctor() reads: device-steering variables, their problems, and the device choice.

Checks ``TORCHPORT_DEVICE``, ``CUDA_VISIBLE_DEVICES`` and ``LOCAL_RANK`` the way
``torchport.pick_device()`` and the CUDA runtime read them, and asks ``pick_device`` which
device it returns and why.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from torchport import hardware
from torchport.diagnose._findings import DoctorFinding, Severity
from torchport.diagnose._probes import AcceleratorInfo, TorchBuild
from torchport.errors import DeviceError
from torchport.place import is_automatic

__all__ = [
    "ENV_VARS",
    "DeviceChoice",
    "check_environment",
    "probe_choice",
    "read_environment",
]

ENV_VARS = (
    "TORCHPORT_DEVICE",
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
)
_NVIDIA_DRIVER = Path("/proc/driver/nvidia/version")
_IS_MAC = sys.platform == "darwin"


@dataclass(frozen=True)
class DeviceChoice:
    """The device ``torchport.pick_device()`` picks here, and why.

    Attributes:
        device: The device, or ``None`` when picking failed.
        reason: Which rule decided it (or the error it raised).
    """

    device: str | None
    reason: str


def read_environment() -> dict[str, str | None]:
    """The device-steering environment variables, ``None`` where unset."""
    return {name: os.environ.get(name) for name in ENV_VARS}


def check_environment(
    env: dict[str, str | None], build: TorchBuild, accel: AcceleratorInfo
) -> list[DoctorFinding]:
    """Check the variables against this build and these accelerators."""
    findings: list[DoctorFinding] = []
    visible = env["CUDA_VISIBLE_DEVICES"]
    if visible is not None and _hides_everything(visible):
        gpu_build = bool(build.cuda or build.hip)
        findings.append(
            DoctorFinding(
                Severity.ERROR if gpu_build and not accel.cuda_available else Severity.WARNING,
                f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU from this process",
                "unset CUDA_VISIBLE_DEVICES, or set it to the GPU indices to use (e.g. '0,1')",
            )
        )
    if build.cuda is None and build.hip is None and _NVIDIA_DRIVER.exists():
        findings.append(
            DoctorFinding(
                Severity.WARNING,
                "an NVIDIA driver is installed but this torch is CPU-only",
                "install a CUDA wheel of torch (https://pytorch.org/get-started/locally/)",
            )
        )
    if _IS_MAC and accel.mps_built and not accel.mps_available:
        findings.append(
            DoctorFinding(
                Severity.WARNING,
                "this torch includes MPS but it is not available",
                "MPS needs Apple silicon and macOS 12.3 or newer, and a native arm64 Python "
                "(not one running under Rosetta)",
            )
        )
    findings += _check_torchport_device(env["TORCHPORT_DEVICE"], accel)
    rank = env["LOCAL_RANK"]
    if rank is not None and not rank.strip().isdigit():
        findings.append(
            DoctorFinding(
                Severity.ERROR,
                f"LOCAL_RANK={rank!r} is not a non-negative integer",
                "let torchrun set LOCAL_RANK, or unset it outside distributed runs",
            )
        )
    elif rank is not None and accel.count and int(rank) >= accel.count:
        findings.append(
            DoctorFinding(
                Severity.ERROR,
                f"LOCAL_RANK={rank} but only {accel.count} {accel.current} device(s) are "
                "visible, so this rank has no device of its own",
                "start at most one process per device (torchrun --nproc-per-node), or make "
                "more devices visible through CUDA_VISIBLE_DEVICES",
            )
        )
    return findings


def _hides_everything(visible: str) -> bool:
    entries = [entry.strip() for entry in visible.split(",")]
    first = entries[0] if entries else ""
    # CUDA stops at the first invalid entry; "-1", "" and "none"-like values hide all.
    return first == "" or first.startswith("-") or not (first.isdigit() or "-" in first)


def _check_torchport_device(value: str | None, accel: AcceleratorInfo) -> list[DoctorFinding]:
    if value is None or not value.strip() or is_automatic(value):
        return []  # unset, empty and "auto" leave the choice to pick_device()
    try:
        hardware.device_spec(value, argument="TORCHPORT_DEVICE")  # read as pick_device reads it
    except DeviceError:
        return [
            DoctorFinding(
                Severity.ERROR,
                f"TORCHPORT_DEVICE={value!r} is not a device",
                "set it to a device such as 'cpu', 'cuda', 'cuda:1' or 'mps', or unset it",
            )
        ]
    try:
        # bare_index: a type without an index is judged by its presence alone (asking
        # the current index would initialize the backend).
        hardware.parse_device(value, argument="TORCHPORT_DEVICE", bare_index=lambda kind: 0)
    except DeviceError as exc:
        found = ", ".join(str(info.device) for info in exc.available)
        have = found if accel.current else "only cpu"
    else:
        return []
    return [
        DoctorFinding(
            Severity.ERROR,
            f"TORCHPORT_DEVICE={value!r} names a device this machine does not have; it has {have}",
            "set TORCHPORT_DEVICE to a present device, or unset it to let torchport pick",
        )
    ]


def probe_choice() -> DeviceChoice:
    """The device ``torchport.pick_device()`` picks here and the rule that decided it.

    The reason is :func:`torchport.place.pick_device_with_reason`'s own sentence, so
    doctor never re-derives (and never contradicts) the choice.

    Raises:
        DeviceError: As ``pick_device()`` does, e.g. for a malformed ``TORCHPORT_DEVICE``.
    """
    from torchport.place import pick_device_with_reason

    device, reason = pick_device_with_reason()
    return DeviceChoice(str(device), reason)


DeviceChoice.__module__ = "torchport"  # part of DoctorReport, exported as torchport.DeviceChoice
