"""Choosing a device: ``pick_device``, ``available_devices`` and ``DeviceInfo``.

Nothing here writes ``os.environ`` or global torch state (no ``set_device``, no
``set_default_device``). Free memory is read through NVML where torch can (it
creates no CUDA context); only where NVML is missing does it fall back to
``torch.accelerator.get_memory_info``, which creates a context on each device it
asks about.

The backend is asked through the small ``_probe_*`` functions below, so tests can
stand in for an accelerator by replacing them.
"""

from __future__ import annotations

import dataclasses
import os
import platform

import torch

from torchport.errors import DeviceError

__all__ = ["DeviceInfo", "available_devices", "parse_device", "pick_device"]

ENV_VAR = "TORCHPORT_DEVICE"
_GIB = 1024**3


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """One device this process can use.

    Attributes:
        device: The device, always with an index for accelerators.
        name: Human-readable name, e.g. ``"NVIDIA H100 80GB HBM3"``.
        type: The device type, e.g. ``"cuda"`` (ROCm builds report ``"cuda"`` too).
        index: The device index, ``None`` for the CPU.
        total_memory: Bytes of memory, ``None`` where unknown.
        free_memory: Bytes free now (all processes counted), ``None`` where unknown.
    """

    device: torch.device
    name: str
    type: str
    index: int | None
    total_memory: int | None
    free_memory: int | None

    def __str__(self) -> str:
        label = str(self.device)
        if self.type == "cpu":
            return label
        details = [self.name] if self.name else []
        if self.free_memory is not None:
            details.append(f"{self.free_memory / _GIB:.1f} GiB free")
        elif self.total_memory is not None:
            details.append(f"{self.total_memory / _GIB:.1f} GiB")
        return f"{label} ({', '.join(details)})" if details else label


def pick_device(prefer: str | torch.device | int | None = None) -> torch.device:
    """Return the device this process should use.

    Order: ``prefer`` > the ``TORCHPORT_DEVICE`` environment variable > the
    accelerator that ``torch.accelerator`` reports (CUDA, ROCm, MPS, XPU, ...) >
    the CPU. On an accelerator, the index is ``LOCAL_RANK`` when it is set (as
    under torchrun), else the device with the most free memory (index 0 where
    free memory cannot be read). A device type without an index (``"cuda"``)
    gets its index the same way. ``"auto"`` (or an empty ``TORCHPORT_DEVICE``)
    means the automatic choice. ``"meta"`` is accepted when asked for and never
    chosen automatically.

    Never changes ``os.environ`` or global torch state; does not synchronize.

    Args:
        prefer: A device string (``"cuda:1"``, ``"mps"``, ``"cpu"``), a
            ``torch.device``, or an index on the current accelerator.

    Returns:
        The chosen device, with an index for accelerators.

    Raises:
        DeviceError: ``prefer``, ``TORCHPORT_DEVICE`` or ``LOCAL_RANK`` names a
            device that is malformed, unknown to this build of torch or not
            present; the message lists the devices that are.
    """
    if prefer is not None:
        return parse_device(prefer, source="prefer")
    env = os.environ.get(ENV_VAR, "").strip()
    if env and env.lower() != "auto":
        return parse_device(env, source=ENV_VAR)
    accelerator = _probe_accelerator()
    if accelerator is None:
        return torch.device("cpu")
    return torch.device(accelerator, _choose_index(accelerator))


def available_devices() -> list[DeviceInfo]:
    """List the devices this process can use, best first.

    Accelerators come first, the one with the most free memory leading; the CPU
    is last. Reading free memory goes through NVML where available and otherwise
    through the backend, which creates a context on each accelerator. Does not
    synchronize.
    """
    infos: list[DeviceInfo] = []
    accelerator = _probe_accelerator()
    if accelerator is not None:
        for index in range(_probe_count(accelerator)):
            free, total = _probe_memory(accelerator, index, allow_context=True)
            infos.append(
                DeviceInfo(
                    device=torch.device(accelerator, index),
                    name=_probe_name(accelerator, index),
                    type=accelerator,
                    index=index,
                    total_memory=total,
                    free_memory=free,
                )
            )
        # Stable sort: equal or unknown free memory keeps index order.
        infos.sort(key=lambda info: -(info.free_memory or 0))
    infos.append(_cpu_info())
    return infos


def parse_device(
    value: object, *, source: str = "device", bare_index: str = "choose"
) -> torch.device:
    """Turn a device string, ``torch.device`` or index into a present device.

    Used by :func:`pick_device` and ``to_device``. ``"cpu"`` and ``"meta"`` are
    returned as given.

    Args:
        value: The device as the user gave it.
        source: Where it came from, named in error messages.
        bare_index: How an accelerator type without an index (``"cuda"``) gets
            one: ``"choose"`` as :func:`pick_device` does, ``"current"`` the
            backend's current device, as ``tensor.to("cuda")`` would.

    Raises:
        DeviceError: The value is malformed, names a device type this build of
            torch lacks, or an index past the device count.
    """
    where = f"TORCHPORT_DEVICE={value!r}" if source == ENV_VAR else f"{source}={value!r}"
    if isinstance(value, bool) or not isinstance(value, str | int | torch.device):
        raise _device_error(f"{where} is a {type(value).__name__}", source)
    if isinstance(value, int):
        accelerator = _probe_accelerator()
        if accelerator is None:
            raise _device_error(f"{where} is an accelerator index, but there is none", source)
        device = torch.device(accelerator, value) if value >= 0 else None
        if device is None:
            raise _device_error(f"{where} is a negative index", source)
    elif isinstance(value, str):
        if not value.strip():
            raise _device_error(f"{where} is empty", source)
        try:
            device = torch.device(value.strip())
        except RuntimeError:
            raise _device_error(f"{where} is not a device string", source) from None
    else:
        device = value
    kind = device.type
    if kind in ("cpu", "meta"):
        return device
    count = _probe_count(kind)
    if count == 0:
        if kind == "cuda" and torch.version.cuda is None and torch.version.hip is None:
            problem = f"this build of torch ({torch.__version__}) has no CUDA support"
        else:
            problem = f"this process sees no {kind!r} device"
        raise _device_error(f"{where}: {problem}", source)
    if device.index is None:
        index = _probe_current_index(kind) if bare_index == "current" else _choose_index(kind)
        return torch.device(kind, index)
    if device.index >= count:
        plural = "s" if count != 1 else ""
        raise _device_error(
            f"{where}: index {device.index} is past the {count} {kind} device{plural} "
            "this process can see",
            source,
        )
    return device


def _choose_index(kind: str) -> int:
    """Index for an accelerator type: LOCAL_RANK, else most free memory, else 0."""
    count = _probe_count(kind)
    local_rank = os.environ.get("LOCAL_RANK")
    if local_rank is not None:
        try:
            rank = int(local_rank)
        except ValueError:
            raise _device_error(
                f"LOCAL_RANK={local_rank!r} is not an integer", "LOCAL_RANK"
            ) from None
        if not 0 <= rank < count:
            # Wrapping the rank (rank % count) would silently put two ranks on one device.
            raise _device_error(
                f"LOCAL_RANK={rank} but this process sees {count} {kind} device"
                f"{'s' if count != 1 else ''}; launch at most {count} processes per node, "
                f"or, if each process is given one device (e.g. via CUDA_VISIBLE_DEVICES), "
                f"set {ENV_VAR}={kind}:0",
                "LOCAL_RANK",
            )
        return rank
    if count <= 1:
        return 0
    best, best_free = 0, -1
    for index in range(count):
        free, _ = _probe_memory(kind, index, allow_context=False)
        if free is None:
            return 0  # unknown for one means no fair comparison
        if free > best_free:
            best, best_free = index, free
    return best


def _device_error(problem: str, source: str) -> DeviceError:
    listing = ", ".join(str(info) for info in _quick_devices())
    if source == ENV_VAR:
        advice = f"unset {ENV_VAR} or set it to one of those"
    elif source == "LOCAL_RANK":
        advice = "pick one of those"
    elif source.startswith("--"):  # a command-line flag
        advice = f"pass one of those to {source}, or leave it out to choose automatically"
    else:
        advice = "pass one of those, or None to choose automatically"
    return DeviceError(f"{problem}; available: {listing}; {advice}")


def _quick_devices() -> list[DeviceInfo]:
    """Like available_devices, but reads memory only where that creates no context."""
    infos = []
    accelerator = _probe_accelerator()
    if accelerator is not None:
        for index in range(_probe_count(accelerator)):
            free, total = _probe_memory(accelerator, index, allow_context=False)
            infos.append(
                DeviceInfo(
                    torch.device(accelerator, index),
                    _probe_name(accelerator, index),
                    accelerator,
                    index,
                    total,
                    free,
                )
            )
    infos.append(_cpu_info())
    return infos


def _cpu_info() -> DeviceInfo:
    total = free = None
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        total = page * os.sysconf("SC_PHYS_PAGES")
        free = page * os.sysconf("SC_AVPHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        pass  # not POSIX: memory unknown
    name = platform.processor() or platform.machine() or "cpu"
    return DeviceInfo(torch.device("cpu"), name, "cpu", None, total, free)


# --- backend probes: the only functions that ask torch about hardware --------------------


def _probe_accelerator() -> str | None:
    """The accelerator type torch reports as usable, or None."""
    device = torch.accelerator.current_accelerator(check_available=True)
    return None if device is None else device.type


def _probe_count(kind: str) -> int:
    """How many devices of ``kind`` this process sees (0 if the build lacks them)."""
    if kind == "cuda":
        # NVML-based where torch can; creates no context.
        return torch.cuda.device_count()
    if kind == "mps":
        return 1 if torch.backends.mps.is_available() else 0
    current = torch.accelerator.current_accelerator(check_available=True)
    if current is not None and current.type == kind:
        return torch.accelerator.device_count()
    module = getattr(torch, kind, None)
    device_count = getattr(module, "device_count", None)
    if callable(device_count):
        try:
            return int(device_count())
        except Exception:  # an unbuilt backend may raise anything here
            return 0
    return 0


def _probe_current_index(kind: str) -> int:
    """The backend's current device index for ``kind`` (initializes the backend)."""
    if kind == "mps":
        return 0
    current = torch.accelerator.current_accelerator(check_available=True)
    if current is not None and current.type == kind:
        return torch.accelerator.current_device_index()
    module = getattr(torch, kind, None)
    current_device = getattr(module, "current_device", None)
    return int(current_device()) if callable(current_device) else 0


def _probe_name(kind: str, index: int) -> str:
    try:
        if kind == "cuda":
            return torch.cuda.get_device_name(index)
        if kind == "mps":
            return "Apple MPS"
        module = getattr(torch, kind, None)
        get_name = getattr(module, "get_device_name", None)
        return str(get_name(index)) if callable(get_name) else kind
    except Exception:  # a name is cosmetic; never fail over it
        return kind


def _probe_memory(kind: str, index: int, *, allow_context: bool) -> tuple[int | None, int | None]:
    """(free, total) bytes of one device, ``(None, None)`` where unknown."""
    if kind == "cuda":
        try:
            total = torch.cuda.get_device_properties(index).total_memory
            used = torch.cuda.device_memory_used(index)  # NVML / amdsmi: no context
            return total - used, total
        except Exception:  # no nvidia-ml-py / amdsmi, or an unsupported device
            pass
    if kind == "mps":
        try:
            total = torch.mps.recommended_max_memory()
            return total - torch.mps.driver_allocated_memory(), total
        except Exception:  # an older macOS or torch
            return None, None
    if not allow_context:
        return None, None
    try:
        free, total = torch.accelerator.get_memory_info(index)
        return int(free), int(total)
    except Exception:  # a backend without memory queries
        return None, None
