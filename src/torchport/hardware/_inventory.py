"""What this torch build and its devices report: the facts behind ``torchport doctor``.

The build (runtime versions, compiled architectures), the driver, each GPU's
properties, which devices hold a CUDA context, and the allocator's counters.
Every read here creates no CUDA context, except :func:`free_memory` where NVML
is missing and the caller allows it, which says so in the source it returns.
Judging the facts (is the driver new enough, does the build run on this GPU)
is ``diagnose``'s work.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from torchport._device_types import ACCELERATOR_TYPES, CUDA, MPS, XPU
from torchport.hardware import _backend, _torch_features

__all__ = [
    "AcceleratorInfo",
    "BuildFacts",
    "GpuProperties",
    "accelerator_info",
    "allocator_function",
    "allocator_stat",
    "build_facts",
    "cuda_contexts",
    "driver_version",
    "free_memory",
    "gpu_properties",
]

ALLOCATOR_STATS = (
    "memory_allocated",
    "memory_reserved",
    "max_memory_allocated",
    "max_memory_reserved",
)


@dataclass(frozen=True)
class BuildFacts:
    """How this torch was built.

    Attributes:
        version: ``torch.__version__``.
        cuda: The CUDA runtime torch was built with; ``None`` if not a CUDA build.
        hip: The HIP (ROCm) version; ``None`` if not a ROCm build.
        cudnn: The cuDNN (or MIOpen) version, when the library loads.
        arch_list: GPU architectures compiled in (``sm_90``, ``compute_90``, ``gfx942``).
    """

    version: str
    cuda: str | None
    hip: str | None
    cudnn: int | None
    arch_list: tuple[str, ...]


@dataclass(frozen=True)
class AcceleratorInfo:
    """What ``torch.accelerator`` and each backend report.

    One entry per accelerator type of the vocabulary (:mod:`torchport._device_types`)
    that this torch includes, so a new backend needs no new field.

    Attributes:
        current: The accelerator type torch would use (``"cuda"``, ``"mps"``, ``"xpu"``).
        count: How many devices of that type are visible.
        built: The accelerator types this torch includes, sorted.
        available: Of those, the ones that can be used now, sorted.
    """

    current: str | None
    count: int
    built: tuple[str, ...]
    available: tuple[str, ...]

    @property
    def cuda_available(self) -> bool:
        """Whether CUDA (or ROCm) can be used now."""
        return CUDA in self.available

    @property
    def mps_built(self) -> bool:
        """Whether this torch includes MPS."""
        return MPS in self.built

    @property
    def mps_available(self) -> bool:
        """Whether MPS can be used now."""
        return MPS in self.available

    @property
    def xpu_available(self) -> bool:
        """Whether an Intel GPU can be used now."""
        return XPU in self.available


@dataclass(frozen=True)
class GpuProperties:
    """One CUDA, ROCm or XPU device as its backend describes it.

    Attributes:
        device: ``"cuda:0"``, ``"xpu:1"`` (after ``CUDA_VISIBLE_DEVICES``).
        index: Its index.
        name: Marketing name.
        capability: ``"8.0"`` on NVIDIA, the gfx architecture on AMD, empty on XPU.
        total_memory: Device memory in bytes.
    """

    device: str
    index: int
    name: str
    capability: str
    total_memory: int


def build_facts() -> BuildFacts:
    """Read the torch build; loads cuDNN to read its version, creates no context."""
    return BuildFacts(
        version=torch.__version__,
        cuda=torch.version.cuda,
        hip=torch.version.hip,
        cudnn=_backend.ACTIVE.cudnn_version(),
        arch_list=_backend.ACTIVE.arch_list(),
    )


def driver_version() -> int | None:
    """The driver's version number as the runtime reports it (CUDA: 12040 is 12.4).

    ``None`` when this torch cannot ask (no CUDA or ROCm in the build); 0 or less
    when no driver was found. Initializes no context.
    """
    get_version = _torch_features.cuda_private("_cuda_getDriverVersion")
    if get_version is not None:
        return int(get_version())
    if torch.version.cuda is None:
        return None
    # torch 2.11's CUDA builds no longer have the private getter (seen on an H200):
    # ask the driver library itself, which needs no context (cuDriverGetVersion).
    return _driver_library_version()


def _driver_library_version() -> int:
    """``cuDriverGetVersion`` from the NVIDIA driver's library; 0 where none is found."""
    names = {"linux": ("libcuda.so.1",), "win32": ("nvcuda.dll",)}.get(sys.platform, ())
    for name in names:
        try:
            get = ctypes.CDLL(name).cuDriverGetVersion
        except (OSError, AttributeError):
            continue
        version = ctypes.c_int(0)
        if get(ctypes.byref(version)) == 0:  # CUDA_SUCCESS
            return version.value
    return 0


def accelerator_info() -> AcceleratorInfo:
    """Read what each backend reports; creates no context."""
    backend = _backend.ACTIVE
    # A CUDA build on a machine without a GPU reports no accelerator.
    current = backend.accelerator()
    # The vocabulary's accelerators, and the one torch reports (a renamed PrivateUse1: "sim").
    kinds = ACCELERATOR_TYPES | ({current} if current is not None else set())
    built = tuple(sorted(kind for kind in kinds if backend.built(kind)))
    return AcceleratorInfo(
        current=current,
        count=backend.count(current) if current is not None else 0,
        built=built,
        available=tuple(kind for kind in built if backend.available(kind)),
    )


def gpu_properties(kind: str) -> tuple[GpuProperties, ...]:
    """Each visible device of ``kind`` (``"cuda"``, ``"xpu"``, ...), in index order; no context.

    Empty for a type whose backend cannot be used now or describes no devices (MPS).
    """
    backend = _backend.ACTIVE
    if not backend.available(kind):
        return ()
    found = []
    for index in range(backend.count(kind)):
        props = backend.properties(kind, index)
        if props is None:
            return ()
        name, capability, total_memory = props
        found.append(
            GpuProperties(
                device=f"{kind}:{index}",
                index=index,
                name=name,
                capability=capability,
                total_memory=total_memory,
            )
        )
    return tuple(found)


def cuda_contexts() -> frozenset[int]:
    """Indices of CUDA devices that have a primary context in this process; creates none."""
    has_context = _torch_features.cuda_private("_cuda_hasPrimaryContext")
    backend = _backend.ACTIVE
    if has_context is None or not backend.available(CUDA):
        return frozenset()
    return frozenset(i for i in range(backend.count(CUDA)) if has_context(i))


def free_memory(kind: str, index: int) -> tuple[int | None, str]:
    """Free bytes on one device and where the figure came from.

    Read without a context where the backend can (NVML/amdsmi for CUDA and ROCm);
    otherwise the backend is asked, which creates a context on a CUDA device that
    has none yet: the source says so, and how to avoid it.
    """
    free, _ = _backend.ACTIVE.memory(kind, index, allow_context=False)
    if free is not None:
        return free, "NVML/amdsmi (no context created)" if kind == CUDA else "its driver"
    had_context = kind == CUDA and index in cuda_contexts()
    free, _ = _backend.ACTIVE.memory(kind, index, allow_context=True)
    if kind != CUDA:
        return free, f"torch.{kind}.mem_get_info"
    if had_context:
        return free, "cudaMemGetInfo (context already existed)"
    return free, "cudaMemGetInfo (created a CUDA context: install nvidia-ml-py to avoid it)"


def allocator_function(device: torch.device, name: str) -> Callable[..., Any] | None:
    """The caching allocator's ``name`` for ``device`` (``empty_cache``, ``memory_stats``, ...).

    ``torch.accelerator``'s where this torch has it, else the backend module's; None
    where neither has it. Calling it may wait for the device as torch's own does.
    """
    return _backend.ACTIVE.allocator_function(device, name)


def allocator_stat(device: torch.device, name: str) -> int:
    """One caching-allocator counter of ``device`` (``memory_allocated``, ...), newest API first.

    Raises:
        LookupError: ``name`` is no counter, or this torch has no way to read it for
            this backend.
        RuntimeError: the backend refused (the error of the last way tried).
    """
    if name not in ALLOCATOR_STATS:
        raise LookupError(f"{name!r} is not an allocator counter; one of {ALLOCATOR_STATS}")
    return _backend.ACTIVE.allocator_stat(device, name)
