"""The probes behind doctor(): the torch build, the driver, the accelerators and GPUs, judged.

The facts come from the hardware floor (:mod:`torchport.hardware`), which reads them
without creating a CUDA context (only free memory needs one where NVML is absent, and
the floor says which source it used); this module judges them: is the driver new
enough for the runtime, are this GPU's kernels in the build. Every probe may raise;
``_doctor.py`` turns a raised probe into a finding.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from torchport import __version__, hardware
from torchport._device_types import CUDA, XPU
from torchport._sizes import format_bytes
from torchport.diagnose._findings import DoctorFinding, Severity
from torchport.diagnose._software import CudaToolkit, companion_versions, cpu_model, cuda_toolkit

__all__ = [
    "AcceleratorInfo",
    "DriverInfo",
    "GpuInfo",
    "HostInfo",
    "TorchBuild",
    "cuda_contexts",
    "host_findings",
    "probe_accelerators",
    "probe_build",
    "probe_driver",
    "probe_gpus",
    "probe_host",
]


@dataclass(frozen=True)
class TorchBuild:
    """How this torch was built.

    Attributes:
        version: ``torch.__version__``.
        python: The interpreter version.
        platform: OS and machine, e.g. ``"Linux-6.8-x86_64"``.
        cuda: CUDA runtime version torch was built with; ``None`` if not a CUDA build.
        hip: HIP (ROCm) version; ``None`` if not a ROCm build.
        cudnn: cuDNN (or MIOpen) version, when the library loads.
        arch_list: GPU architectures compiled in (``sm_90``, ``compute_90``, ``gfx942``).
    """

    version: str
    python: str
    platform: str
    cuda: str | None
    hip: str | None
    cudnn: int | None
    arch_list: tuple[str, ...]

    @property
    def kind(self) -> str:
        """``"CUDA 12.4"``, ``"ROCm 6.2"`` or ``"CPU-only"`` (XPU and MPS need no build tag)."""
        if self.hip:
            return f"ROCm (HIP {self.hip})"
        if self.cuda:
            return f"CUDA {self.cuda}"
        return "CPU-only"


@dataclass(frozen=True)
class DriverInfo:
    """The GPU driver against the runtime torch was built with.

    Attributes:
        version: The CUDA version the installed driver supports (``"12.4"``), or the HIP
            driver version on ROCm; ``None`` if no driver was found.
        runtime: The runtime torch needs (``torch.version.cuda`` or ``.hip``).
        supports_runtime: Whether the driver can run that runtime; ``None`` if unknown.
    """

    version: str | None
    runtime: str | None
    supports_runtime: bool | None


@dataclass(frozen=True)
class GpuInfo:
    """One visible CUDA, ROCm or Intel XPU device.

    Attributes:
        device: The device as torch names it, e.g. ``"cuda:0"`` (after ``CUDA_VISIBLE_DEVICES``).
        index: Its index.
        name: Marketing name.
        capability: ``"8.0"`` on NVIDIA, the gfx architecture on AMD, empty on XPU.
        total_memory: Device memory in bytes.
        free_memory: Free memory in bytes, ``None`` if not read.
        free_memory_source: Where ``free_memory`` came from, or why it was not read.
        supported_by_build: Whether torch's compiled kernels run on this device.
    """

    device: str
    index: int
    name: str
    capability: str
    total_memory: int
    free_memory: int | None
    free_memory_source: str
    supported_by_build: bool | None


# What ``torch.accelerator`` and each backend report, as the floor reads it.
AcceleratorInfo = hardware.AcceleratorInfo


@dataclass(frozen=True)
class HostInfo:
    """The software around torch and the CPUs it runs on: what a bug report needs.

    Attributes:
        torchport: ``torchport.__version__``.
        numpy: NumPy's version, ``None`` when it is not installed.
        os: The operating system as people name it (``"Debian GNU/Linux 12 (bookworm),
            kernel 6.1.0"``, ``"macOS 14.5"``).
        cpu_count: Logical CPUs of the machine (``os.cpu_count()``).
        usable_cpus: CPUs this process may run on (its affinity), ``None`` if unknown.
        cpu_quota: CPUs' worth of time a container's cgroup allows (``cpu.max``),
            ``None`` when unlimited or unknown.
        torch_threads: Threads torch uses inside one op (``torch.get_num_threads()``).
        torch_interop_threads: Threads torch runs independent ops on.
        cpu_model: The CPU's model name, ``None`` if unknown.
        libraries: ``(distribution, version)`` of the companion libraries installed
            (NumPy, optree, Accelerate, Transformers, Lightning, torchvision, ...).
        cuda_toolkit: A CUDA toolkit on the host (``nvcc``), apart from torch's own
            runtime; ``None`` when none is installed.
    """

    torchport: str
    numpy: str | None
    os: str
    cpu_count: int | None
    usable_cpus: int | None
    cpu_quota: float | None
    torch_threads: int
    torch_interop_threads: int
    cpu_model: str | None = None
    libraries: tuple[tuple[str, str], ...] = ()
    cuda_toolkit: CudaToolkit | None = None


_CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def _os_name() -> str:
    system = platform.system()
    if system == "Linux":
        try:
            pretty = platform.freedesktop_os_release().get("PRETTY_NAME", "Linux")
        except OSError:  # no /etc/os-release (some minimal containers)
            pretty = "Linux"
        return f"{pretty}, kernel {platform.release()}"
    if system == "Darwin":
        return f"macOS {platform.mac_ver()[0]}"
    return platform.platform(terse=True)


def _cpu_quota() -> float | None:
    try:
        quota, period = _CGROUP_CPU_MAX.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def probe_host() -> HostInfo:
    """Read torchport's and NumPy's versions, the OS, the CPUs and torch's thread counts."""
    numpy = None
    if importlib.util.find_spec("numpy") is not None:
        import numpy as np

        numpy = np.__version__
    affinity = getattr(os, "sched_getaffinity", None)
    return HostInfo(
        torchport=__version__,
        numpy=numpy,
        os=_os_name(),
        cpu_count=os.cpu_count(),
        usable_cpus=len(affinity(0)) if affinity is not None else None,
        cpu_quota=_cpu_quota(),
        torch_threads=torch.get_num_threads(),
        torch_interop_threads=torch.get_num_interop_threads(),
        cpu_model=cpu_model(),
        libraries=companion_versions(),
        cuda_toolkit=cuda_toolkit(),
    )


def toolkit_findings(
    host: HostInfo, build: TorchBuild | None, driver: DriverInfo | None
) -> list[DoctorFinding]:
    """A CUDA toolkit and an NVIDIA driver beside a CPU-only torch: the wrong wheel.

    Without a driver (a build machine, a container without GPUs) the toolkit is only a
    fact of the report, not a problem.
    """
    toolkit = host.cuda_toolkit
    if toolkit is None or build is None or build.cuda or build.hip:
        return []
    if driver is None or driver.version is None:
        return []
    version = toolkit.version or "of unknown release"
    tag = f"cu{toolkit.version.replace('.', '')}" if toolkit.version else "cuXYZ"
    return [
        DoctorFinding(
            Severity.WARNING,
            f"a CUDA toolkit {version} is installed ({toolkit.nvcc}, found by {toolkit.found_by}) "
            f"but torch {build.version} is a CPU-only build, so no GPU will be used",
            "install a CUDA build of torch matching the driver, e.g. pip install torch "
            f"--index-url https://download.pytorch.org/whl/{tag} (the wheel brings its own "
            "runtime; the toolkit is needed only to compile extensions)",
        )
    ]


def host_findings(host: HostInfo) -> list[DoctorFinding]:
    """More torch threads than CPUs this process may use: each op's threads wait on each other."""
    limits = [n for n in (host.usable_cpus, host.cpu_quota) if n is not None]
    if not limits or host.torch_threads <= max(1, int(min(limits))):
        return []
    usable = max(1, int(min(limits)))
    return [
        DoctorFinding(
            Severity.WARNING,
            f"torch runs {host.torch_threads} threads per op but this process may use "
            f"{usable} CPU(s) (affinity or container quota); the extra threads slow CPU work",
            f"call torch.set_num_threads({usable}) at start-up, or set OMP_NUM_THREADS={usable}",
        )
    ]


def probe_build() -> TorchBuild:
    """Read the torch build; loads cuDNN to read its version, creates no context."""
    facts = hardware.build_facts()
    return TorchBuild(
        version=facts.version,
        python=sys.version.split()[0],
        platform=platform.platform(terse=True),
        cuda=facts.cuda,
        hip=facts.hip,
        cudnn=facts.cudnn,
        arch_list=facts.arch_list,
    )


def probe_driver(build: TorchBuild) -> tuple[DriverInfo, list[DoctorFinding]]:
    """Compare the driver's supported CUDA version with the runtime torch was built with."""
    runtime = build.hip or build.cuda
    raw = hardware.driver_version() if runtime is not None else None
    if runtime is None or raw is None:
        return DriverInfo(version=None, runtime=runtime, supports_runtime=None), []
    if build.hip:
        # hipDriverGetVersion numbers differ per ROCm release; report it as it is.
        return DriverInfo(
            version=str(raw) if raw else None, runtime=runtime, supports_runtime=None
        ), []
    if raw <= 0:
        return DriverInfo(version=None, runtime=runtime, supports_runtime=False), [
            DoctorFinding(
                Severity.ERROR,
                f"torch is built for CUDA {runtime} but no NVIDIA driver was found",
                f"install an NVIDIA driver that supports CUDA {runtime}, or install the "
                "CPU wheel of torch if this machine has no NVIDIA GPU",
            )
        ]
    driver = (raw // 1000, (raw % 1000) // 10)
    version = f"{driver[0]}.{driver[1]}"
    need = _version_tuple(runtime)
    findings: list[DoctorFinding] = []
    supports = driver >= need
    if driver[0] < need[0]:
        supports = False
        findings.append(
            DoctorFinding(
                Severity.ERROR,
                f"the NVIDIA driver supports CUDA {version} but torch needs CUDA {runtime}",
                f"update the driver to one for CUDA {runtime} or newer, or install a torch wheel "
                f"built for CUDA {driver[0]}.x",
            )
        )
    elif driver < need:
        # CUDA minor-version compatibility: same major runs, but PTX newer than the
        # driver cannot be JIT-compiled.
        supports = True
        findings.append(
            DoctorFinding(
                Severity.WARNING,
                f"the NVIDIA driver supports CUDA {version}, older than torch's CUDA {runtime}; "
                "it runs through minor-version compatibility, but PTX-only kernels cannot load",
                f"update the driver to one for CUDA {runtime} or newer",
            )
        )
    return DriverInfo(version=version, runtime=runtime, supports_runtime=supports), findings


def probe_gpus(
    build: TorchBuild, *, free_memory: bool
) -> tuple[tuple[GpuInfo, ...], list[DoctorFinding]]:
    """List CUDA/ROCm devices, capability checked against the arch list, then XPU devices.

    May create a CUDA context on each device, only when ``free_memory`` is true, NVML is
    unavailable and the process has no context there yet; ``free_memory_source`` says so.
    """
    gpus: list[GpuInfo] = []
    findings: list[DoctorFinding] = []
    for kind in (XPU, CUDA):
        for props in hardware.gpu_properties(kind):
            free, source = (
                hardware.free_memory(kind, props.index)
                if free_memory
                else (None, "not read (free_memory=False)")
            )
            gpu = GpuInfo(
                device=props.device,
                index=props.index,
                name=props.name,
                capability=props.capability,
                total_memory=props.total_memory,
                free_memory=free,
                free_memory_source=source,
                supported_by_build=(
                    _arch_supported(props.capability, build) if kind == CUDA else None
                ),
            )
            gpus.append(gpu)
            if kind == CUDA:
                findings += _gpu_findings(gpu, build)
    return tuple(gpus), findings


def _gpu_findings(gpu: GpuInfo, build: TorchBuild) -> list[DoctorFinding]:
    findings: list[DoctorFinding] = []
    if gpu.supported_by_build is False:
        arch = gpu.capability if build.hip else "sm_" + gpu.capability.replace(".", "")
        findings.append(
            DoctorFinding(
                Severity.ERROR,
                f"{gpu.device} ({gpu.name}, {arch}) is not in this torch's arch list "
                f"({' '.join(build.arch_list) or 'empty'}); its kernels will not run there",
                f"install a torch build compiled for {arch} (usually a wheel for a newer "
                "CUDA/ROCm release), or build torch with TORCH_CUDA_ARCH_LIST including it",
            )
        )
    if gpu.free_memory is not None and gpu.free_memory < 0.1 * gpu.total_memory:
        findings.append(
            DoctorFinding(
                Severity.WARNING,
                f"{gpu.device} has only {format_bytes(gpu.free_memory)} free of "
                f"{format_bytes(gpu.total_memory)}",
                "this or another process holds it: check nvidia-smi/rocm-smi, or pick another "
                "GPU with TORCHPORT_DEVICE or CUDA_VISIBLE_DEVICES",
            )
        )
    return findings


def _arch_supported(capability: str, build: TorchBuild) -> bool | None:
    if not build.arch_list or not capability:
        return None
    if build.hip:
        return any(arch.split(":")[0] == capability for arch in build.arch_list)
    major, minor = _version_tuple(capability)
    for arch in build.arch_list:
        match = re.fullmatch(r"(sm|compute)_(\d+?)(\d)([a-z]?)", arch)
        if match is None:
            continue
        kind, a_major, a_minor, suffix = match.groups()
        built = (int(a_major), int(a_minor))
        if suffix == "f":
            # Family-specific (sm_100f): runs on later minor revisions of the same major.
            if built[0] == major and built[1] <= minor:
                return True
        elif suffix:
            # Architecture-specific (sm_90a): that exact device only.
            if built == (major, minor):
                return True
        elif kind == "sm" and built[0] == major and built[1] <= minor:
            return True  # SASS runs on later minor revisions of the same major
        elif kind == "compute" and built <= (major, minor):
            return True  # PTX is JIT-compiled for any newer device
    return False


def _version_tuple(text: str) -> tuple[int, int]:
    parts = [int(p) for p in re.findall(r"\d+", text)[:2]]
    return (parts[0], parts[1] if len(parts) > 1 else 0) if parts else (0, 0)


def probe_accelerators() -> AcceleratorInfo:
    """Read what each backend reports; creates no context."""
    return hardware.accelerator_info()


def cuda_contexts() -> frozenset[int]:
    """Indices of CUDA devices that have a primary context in this process; creates none."""
    return hardware.cuda_contexts()


# Parts of the DoctorReport that doctor() returns, exported as torchport.<name>.
for _cls in (TorchBuild, DriverInfo, GpuInfo, HostInfo, AcceleratorInfo, CudaToolkit):
    _cls.__module__ = "torchport"
del _cls
