"""Devices as facts: parsing and normalising, counting, names and free memory.

Every device the user names (a string, a ``torch.device``, an accelerator
index) goes through :func:`parse_device` (or, where presence does not matter,
:func:`device_spec`, the one reading of device strings that it uses), so ``"cpu:0"``, ``"cpu"`` and
``torch.device("cpu")`` are one device everywhere, a bare ``"cuda"`` means the
same GPU to every caller, and a device that is not present is refused with a
:class:`~torchport.DeviceError` naming the argument it came from. Which device
to *choose* is policy and lives in ``place/_device.py``; this module only says
what is there.
"""

from __future__ import annotations

import dataclasses
import os
import platform
from collections.abc import Callable

import torch

from torchport._device_types import CPU, CUDA, HOST_TYPES, META
from torchport._sizes import format_bytes
from torchport.errors import DeviceError
from torchport.hardware import _backend

__all__ = [
    "DeviceInfo",
    "accelerator_present",
    "accelerator_type",
    "clear_caches",
    "cpu_info",
    "current_index",
    "device_count",
    "device_error",
    "device_name",
    "device_spec",
    "list_devices",
    "memory_info",
    "named_type",
    "parse_device",
    "parsed_cache",
]

_CPU = torch.device(CPU)
_META = torch.device(META)
# Device values already parsed to a device with an index: a dict lookup the next
# time. Device counts cannot change while a process runs (CUDA_VISIBLE_DEVICES is
# read once), so an answer stays true. A bare type ("cuda") is cached only where
# there is one device of that type: elsewhere the backend's current device can change.
_PARSED: dict[object, torch.device] = {
    key: device
    for device in (_CPU, _META)
    for key in (device.type, device, f"{device.type}:0", torch.device(device.type, 0))
}
_PARSED_PLAIN = dict(_PARSED)
_PARSED_MAX = 256
_ACCELERATOR: list[str | None] = []  # [] until asked; then [type or None]


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
        if self.type == CPU:
            return label
        details = [self.name] if self.name else []
        if self.free_memory is not None:
            details.append(f"{format_bytes(self.free_memory)} free")
        elif self.total_memory is not None:
            details.append(format_bytes(self.total_memory))
        return f"{label} ({', '.join(details)})" if details else label


def accelerator_type() -> str | None:
    """The accelerator type torch reports as usable (``"cuda"``, ``"mps"``, ...), or None.

    Asked once per process (it cannot change); creates no context.
    """
    if not _ACCELERATOR:
        _ACCELERATOR.append(_backend.ACTIVE.accelerator())
    return _ACCELERATOR[0]


def backend_installed() -> None:
    """Ask torch about the accelerator again: a device backend was just installed (``sim``).

    :func:`accelerator_type` asks once per process, because no driver appears while a
    process runs; a backend registered from Python (the simulated accelerator) does.
    """
    _ACCELERATOR.clear()


def accelerator_present() -> bool:
    """Whether torch reports an accelerator; see :func:`accelerator_type`."""
    return accelerator_type() is not None


def device_count(kind: str) -> int:
    """How many devices of type ``kind`` this process sees (1 for cpu and meta)."""
    if kind in HOST_TYPES:
        return 1
    return _backend.ACTIVE.count(kind)


def current_index(kind: str) -> int:
    """The backend's current device index for ``kind``, as ``tensor.to(kind)`` would use.

    Initializes the backend (on CUDA, the current device's context is not created).
    """
    return _backend.ACTIVE.current_index(kind)


def device_name(device: torch.device) -> str:
    """A human-readable name for ``device`` (the type itself where none can be read)."""
    if device.type == CPU:
        return platform.processor() or platform.machine() or CPU
    return _backend.ACTIVE.name(device.type, device.index or 0)


def memory_info(device: torch.device, *, allow_context: bool) -> tuple[int | None, int | None]:
    """``(free, total)`` bytes of ``device``, each ``None`` where unknown.

    CUDA/ROCm are read through NVML/amdsmi (no context), MPS through its driver
    counters, the CPU through ``sysconf``. Other accelerators, and CUDA without
    NVML, are asked only when ``allow_context``, which creates a context on that
    device. Never synchronizes.
    """
    if device.type == CPU:
        info = cpu_info()
        return info.free_memory, info.total_memory
    if device.type == META:
        return None, None
    return _backend.ACTIVE.memory(device.type, device.index or 0, allow_context=allow_context)


def list_devices(*, allow_context: bool = True) -> list[DeviceInfo]:
    """Every accelerator in index order, then the CPU.

    Reads free memory as :func:`memory_info` does. Never synchronizes.
    """
    infos: list[DeviceInfo] = []
    kind = accelerator_type()
    if kind is not None:
        backend = _backend.ACTIVE
        for index in range(backend.count(kind)):
            free, total = backend.memory(kind, index, allow_context=allow_context)
            infos.append(
                DeviceInfo(
                    device=torch.device(kind, index),
                    name=backend.name(kind, index),
                    type=kind,
                    index=index,
                    total_memory=total,
                    free_memory=free,
                )
            )
    infos.append(cpu_info())
    return infos


def cpu_info() -> DeviceInfo:
    """The CPU as a :class:`DeviceInfo`; memory from ``sysconf`` (``None`` off POSIX)."""
    total = free = None
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        total = page * os.sysconf("SC_PHYS_PAGES")
        free = page * os.sysconf("SC_AVPHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        pass  # not POSIX: memory unknown
    return DeviceInfo(_CPU, device_name(_CPU), CPU, None, total, free)


def parse_device(
    value: object,
    *,
    argument: str = "device",
    bare_index: Callable[[str], int] | None = None,
) -> torch.device:
    """Turn what the user passed into a device that is present, or raise.

    ``"cpu"``, ``"cpu:0"`` and ``torch.device("cpu", 0)`` all give
    ``torch.device("cpu")`` (likewise ``"meta"``); any other CPU or meta index is
    refused. An accelerator is given with its index; an index past the device
    count, or a type this process has none of, is refused. An int is an index on
    the accelerator torch reports. Never synchronizes; creates no context.

    Args:
        value: A device string, a ``torch.device`` or an accelerator index.
        argument: What the user called it (``"device"``, ``"prefer"``,
            ``"--device"``, ``"TORCHPORT_DEVICE"``); error messages name it.
        bare_index: How a type without an index (``"cuda"``) gets one. ``None``:
            the backend's current device, as ``tensor.to("cuda")`` does.

    Returns:
        The device: no index for the CPU and meta, always one for accelerators.

    Raises:
        DeviceError: ``value`` is not a device, is malformed, names a type this
            build of torch lacks or that this process sees none of, or an index
            past the device count. The message names ``argument``, lists the
            devices that are available and says what to pass instead.
    """
    try:
        found = _PARSED.get(value)
    except TypeError:  # unhashable: certainly not a device; the checks below say so
        found = None
    if found is not None:
        return found
    where = f"{argument}={value!r}"
    if isinstance(value, bool) or not isinstance(value, str | int | torch.device):
        raise device_error(f"{where} is a {type(value).__name__}, not a device", argument)
    if isinstance(value, int):
        kind = accelerator_type()
        if kind is None:
            raise device_error(f"{where} is an accelerator index, but there is none", argument)
        if value < 0:
            raise device_error(f"{where} is a negative index", argument)
        device = torch.device(kind, value)
    else:
        device = device_spec(value, argument=argument)
    kind = device.type
    if kind in HOST_TYPES:
        if device.index is not None:
            raise device_error(
                f"{where}: {kind} has one device, index 0; pass {kind!r}",
                argument,
            )
        return _CPU if kind == CPU else _META
    count = device_count(kind)
    if count == 0:
        if kind == CUDA and not _backend.ACTIVE.built(CUDA):
            problem = f"this build of torch ({torch.__version__}) has no CUDA support"
        else:
            problem = f"this process sees no {kind!r} device"
        raise device_error(f"{where}: {problem}", argument)
    if device.index is None:
        if count == 1 and bare_index is None:
            # One device: the current one is always index 0, so the answer can be
            # cached like an explicit index (a bare "cuda" is the usual spelling).
            device = torch.device(kind, 0)
        else:
            index = current_index(kind) if bare_index is None else bare_index(kind)
            return torch.device(kind, index)
    if device.index >= count:
        plural = "s" if count != 1 else ""
        raise device_error(
            f"{where}: index {device.index} is past the {count} {kind} device{plural} "
            "this process can see",
            argument,
        )
    if type(value) is str or type(value) is torch.device:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
            _PARSED.update(_PARSED_PLAIN)
        _PARSED[value] = device
    return device


def named_type(value: object) -> str | None:
    """The device type ``value`` names, read before torch may know it; None for no name.

    ``" sim:0 "`` -> ``"sim"``, ``torch.device("cuda", 1)`` -> ``"cuda"``: what a
    backend installed on first use (the simulated accelerator) is asked for by, as
    :func:`device_spec` will read it once the backend is there (white space around
    it ignored, the case kept: torch knows ``"cuda"``, not ``"CUDA"``). Nothing is
    checked: a name torch will refuse is still returned.
    """
    if isinstance(value, torch.device):
        return value.type
    if isinstance(value, str):
        return value.strip().partition(":")[0]
    return None


def device_spec(value: str | torch.device, *, argument: str = "device") -> torch.device:
    """What ``value`` names, well formed and normalised, without asking whether it is present.

    Surrounding white space is ignored (``"cpu "`` is the CPU, as an environment
    variable often carries it), and ``"cpu:0"``/``"meta:0"`` are ``cpu``/``meta``,
    the host's one device. Everything else is read as ``torch.device`` reads it.
    Never touches a backend.

    Raises:
        DeviceError: ``value`` is empty or not a device string; the message names
            ``argument`` and lists the devices available.
    """
    if isinstance(value, torch.device):
        device = value
    else:
        text = value.strip()
        if not text:
            raise device_error(f"{argument}={value!r} is empty", argument)
        try:
            device = torch.device(text)
        except RuntimeError:
            raise device_error(f"{argument}={value!r} is not a device string", argument) from None
    if device.type in HOST_TYPES and device.index == 0:
        return _CPU if device.type == CPU else _META
    return device


def device_error(problem: str, argument: str) -> DeviceError:
    """A :class:`DeviceError` saying ``problem``, the devices available and what to do.

    The advice fits where the value came from: an environment variable (all
    capitals), a command-line flag (``--...``) or a function argument. Reads
    free memory only where that creates no context.
    """
    available = tuple(list_devices(allow_context=False))
    listing = ", ".join(str(info) for info in available)
    if argument == "LOCAL_RANK":
        advice = "pick one of those"
    elif argument.isupper():
        advice = f"unset {argument} or set it to one of those"
    elif argument.startswith("--"):
        advice = f"pass one of those to {argument}, or leave it out to choose automatically"
    elif argument == "prefer":
        advice = "pass one of those, or None to choose automatically"
    else:
        advice = f"pass one of those as {argument}="
    return DeviceError(
        f"{problem}; available: {listing}; {advice}", argument=argument, available=available
    )


def parsed_cache() -> dict[object, torch.device]:
    """The cache of parsed values (read-only to callers): a hot path may look up a
    string here first and call :func:`parse_device` only on a miss. It holds only
    values that parse to a device with an index (or the CPU or meta)."""
    return _PARSED


def clear_caches() -> None:
    """Forget what was learnt about the backend (for tests that install another)."""
    _ACCELERATOR.clear()
    _PARSED.clear()
    _PARSED.update(_PARSED_PLAIN)


_backend.forget_on_install(clear_caches)
