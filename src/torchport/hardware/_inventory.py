"""What this torch build and its devices report: the facts behind ``torchport doctor``.

The build (runtime versions, compiled architectures), the driver, each GPU's
properties, which devices hold a CUDA context, and the allocator's counters.
Every read here creates no CUDA context, except :func:`free_memory` where NVML
is missing and the caller allows it, which says so in the source it returns.
Judging the facts (is the driver new enough, does the build run on this GPU)
is ``diagnose``'s work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from torchport.hardware import _backend, _torch_api

__all__ = [
    "AcceleratorInfo",
    "BuildFacts",
    "GpuProperties",
    "accelerator_info",
    "allocator_stat",
    "build_facts",
    "cuda_contexts",
    "driver_version",
    "free_memory",
    "gpu_properties",
]

ALLOCATOR_STATS = ("memory_allocated", "memory_reserved", "max_memory_allocated")


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

    Attributes:
        current: The accelerator type torch would use (``"cuda"``, ``"mps"``, ``"xpu"``).
        count: How many devices of that type are visible.
        cuda_available: Whether CUDA (or ROCm) can be used now.
        mps_built: Whether this torch includes MPS.
        mps_available: Whether MPS can be used now.
        xpu_available: Whether an Intel GPU can be used now.
    """

    current: str | None
    count: int
    cuda_available: bool
    mps_built: bool
    mps_available: bool
    xpu_available: bool


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
    cudnn: int | None = None
    # torch.backends.cudnn is untyped.
    if torch.backends.cudnn.is_available():  # type: ignore[no-untyped-call]
        cudnn = torch.backends.cudnn.version()  # type: ignore[no-untyped-call]
    return BuildFacts(
        version=torch.__version__,
        cuda=torch.version.cuda,
        hip=torch.version.hip,
        cudnn=cudnn,
        arch_list=tuple(torch.cuda.get_arch_list()),
    )


def driver_version() -> int | None:
    """The driver's version number as the runtime reports it (CUDA: 12040 is 12.4).

    ``None`` when this torch cannot ask (no CUDA or ROCm in the build); 0 or less
    when no driver was found. Initializes no context.
    """
    get_version = _torch_api.cuda_private("_cuda_getDriverVersion")
    return None if get_version is None else int(get_version())


def accelerator_info() -> AcceleratorInfo:
    """Read what each backend reports; creates no context."""
    # A CUDA build on a machine without a GPU reports no accelerator.
    current = _torch_api.current_accelerator()
    return AcceleratorInfo(
        current=current.type if current is not None else None,
        count=torch.accelerator.device_count() if current is not None else 0,
        cuda_available=torch.cuda.is_available(),
        mps_built=torch.backends.mps.is_built(),
        mps_available=torch.backends.mps.is_available(),
        xpu_available=torch.xpu.is_available(),
    )


def gpu_properties(kind: str) -> tuple[GpuProperties, ...]:
    """Each visible device of ``kind`` (``"cuda"`` or ``"xpu"``), in index order; no context."""
    module = {"cuda": torch.cuda, "xpu": torch.xpu}.get(kind)
    if module is None or not module.is_available():
        return ()
    rocm = torch.version.hip is not None
    found = []
    for index in range(module.device_count()):
        props = module.get_device_properties(index)
        if kind == "xpu":
            capability = ""
        elif rocm:
            capability = str(getattr(props, "gcnArchName", "")).split(":")[0]
        else:
            capability = f"{props.major}.{props.minor}"
        found.append(
            GpuProperties(
                device=f"{kind}:{index}",
                index=index,
                name=str(props.name),
                capability=capability,
                total_memory=int(props.total_memory),
            )
        )
    return tuple(found)


def cuda_contexts() -> frozenset[int]:
    """Indices of CUDA devices that have a primary context in this process; creates none."""
    has_context = _torch_api.cuda_private("_cuda_hasPrimaryContext")
    if has_context is None or not torch.cuda.is_available():
        return frozenset()
    return frozenset(i for i in range(torch.cuda.device_count()) if has_context(i))


def free_memory(kind: str, index: int) -> tuple[int | None, str]:
    """Free bytes on one device and where the figure came from.

    Read without a context where the backend can (NVML/amdsmi for CUDA and ROCm);
    otherwise the backend is asked, which creates a context on a CUDA device that
    has none yet: the source says so, and how to avoid it.
    """
    free, _ = _backend.ACTIVE.memory(kind, index, allow_context=False)
    if free is not None:
        return free, "NVML/amdsmi (no context created)" if kind == "cuda" else "its driver"
    had_context = kind == "cuda" and index in cuda_contexts()
    free, _ = _backend.ACTIVE.memory(kind, index, allow_context=True)
    if kind != "cuda":
        return free, f"torch.{kind}.mem_get_info"
    if had_context:
        return free, "cudaMemGetInfo (context already existed)"
    return free, "cudaMemGetInfo (created a CUDA context: install nvidia-ml-py to avoid it)"


def allocator_stat(device: torch.device, name: str) -> int:
    """One caching-allocator counter of ``device`` (``memory_allocated``, ...), newest API first.

    Raises:
        LookupError: this torch has no way to read ``name`` for this backend.
        RuntimeError: the backend refused (the error of the last way tried).
    """
    if name not in ALLOCATOR_STATS:
        raise LookupError(f"{name!r} is not an allocator counter; one of {ALLOCATOR_STATS}")
    ways: list[Callable[[], int]] = []
    generic = _torch_api.accelerator_function(name)
    if generic is not None:
        ways.append(lambda: int(generic(device)))
    specific = getattr(getattr(torch, device.type, None), name, None)
    if device.type != "mps" and specific is not None:
        ways.append(lambda: int(specific(device)))
    if device.type == "mps" and name == "memory_allocated":
        ways.append(lambda: int(torch.mps.current_allocated_memory()))
    error: Exception = LookupError("no API in this torch")
    for way in ways:
        try:
            return way()
        except (RuntimeError, AttributeError, NotImplementedError, TypeError) as exc:
            error = exc
    raise error
