"""The environment doctor() reads: device-steering variables, their problems, and the device choice.

Checks ``TORCHPORT_DEVICE``, ``CUDA_VISIBLE_DEVICES`` and ``LOCAL_RANK`` the way
``torchport.pick_device()`` and the CUDA runtime read them, and names the rule that decides
the device ``pick_device()`` returns.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from torchport.diagnose._findings import DoctorFinding, Severity
from torchport.diagnose._probes import AcceleratorInfo, TorchBuild

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
    if _automatic(value):
        return []
    assert value is not None
    try:
        device = torch.device(value)
    except RuntimeError:
        return [
            DoctorFinding(
                Severity.ERROR,
                f"TORCHPORT_DEVICE={value!r} is not a device",
                "set it to a device such as 'cpu', 'cuda', 'cuda:1' or 'mps', or unset it",
            )
        ]
    usable = device.type in ("cpu", "meta") or (
        device.type == accel.current and (device.index is None or device.index < accel.count)
    )
    if usable:
        return []
    have = (accel.current and f"{accel.current} ({accel.count})") or "only cpu"
    return [
        DoctorFinding(
            Severity.ERROR,
            f"TORCHPORT_DEVICE={value!r} names a device this machine does not have; it has {have}",
            "set TORCHPORT_DEVICE to a present device, or unset it to let torchport pick",
        )
    ]


def probe_choice(env: dict[str, str | None], accel: AcceleratorInfo) -> DeviceChoice:
    """Ask ``torchport.pick_device()`` for its device and name the rule that decided it.

    The reason follows the documented order: ``TORCHPORT_DEVICE``, then the accelerator
    (``LOCAL_RANK`` under torchrun, else the most free memory where NVML can read it
    without a context, else index 0), then cpu.
    """
    if not _automatic(env["TORCHPORT_DEVICE"]):
        reason = f"TORCHPORT_DEVICE={env['TORCHPORT_DEVICE']!r} is set"
    elif accel.current is None:
        reason = "torch.accelerator reports no accelerator, so cpu"
    elif env["LOCAL_RANK"] is not None:
        reason = (
            f"{accel.current} from torch.accelerator, index from LOCAL_RANK={env['LOCAL_RANK']}"
        )
    elif accel.count > 1 and _free_memory_readable(accel.current):
        reason = f"the {accel.current} device with the most free memory of {accel.count}"
    elif accel.count > 1:
        reason = (
            f"index 0 of {accel.count} {accel.current} devices: free memory cannot be compared "
            "without creating contexts (install nvidia-ml-py to pick by free memory)"
        )
    else:
        reason = f"the only {accel.current} device torch.accelerator reports"
    try:
        from torchport.place import pick_device
    except ImportError:
        fallback = accel.current or "cpu"
        return DeviceChoice(fallback, reason + " (torchport.place is unavailable; inferred)")
    return DeviceChoice(str(pick_device()), reason)


def _free_memory_readable(kind: str | None) -> bool:
    """Whether free memory can be read without a context (NVML/amdsmi), as pick_device needs."""
    if kind != "cuda":
        return False
    try:
        torch.cuda.device_memory_used(0)
    except Exception:  # no nvidia-ml-py / amdsmi, or it cannot talk to the driver
        return False
    return True


def _automatic(value: str | None) -> bool:
    """Unset, empty and "auto" all leave the choice to pick_device()."""
    return value is None or value.strip().lower() in ("", "auto")
