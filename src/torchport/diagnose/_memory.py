"""memory_report: how much memory a device has, holds and has free, as one dataclass of facts.

Allocator statistics, the device and its free/total memory are read through
``torchport.hardware`` (the one device parser, held by ``tests/test_claims.py``; NVML
before a context); the CPU is read from ``/proc`` and the cgroup limit on Linux, from
``resource``/``sysconf`` elsewhere (psutil is not a dependency). What this process may
still allocate on the host is also bounded by its own limits (``ulimit -v``:
``RLIMIT_AS`` on its address space; ``ulimit -d``: ``RLIMIT_DATA`` on its data):
:func:`process_limit` reads the tighter one.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from torchport import hardware
from torchport._device_types import CPU, META, MPS
from torchport._sizes import format_bytes
from torchport.errors import ConfigError, DeviceError

__all__ = ["MemoryReport", "ProcessLimit", "host_memory", "memory_report", "process_limit"]

_PROC_STATUS = Path("/proc/self/status")
_PROC_MEMINFO = Path("/proc/meminfo")
_CGROUP_MAX = Path("/sys/fs/cgroup/memory.max")
_CGROUP_CURRENT = Path("/sys/fs/cgroup/memory.current")


@dataclass(frozen=True)
class MemoryReport:
    """Memory of one device at one moment; sizes in bytes, ``None`` where unknown.

    Attributes:
        device: The device reported on, e.g. ``"cuda:0"`` or ``"cpu"``.
        allocated: Bytes in live tensors, as PyTorch's allocator counts them.
        reserved: Bytes the allocator holds from the device (allocated plus its cache).
        peak_allocated: The most ``allocated`` has been since the last peak reset.
        free: Free device memory; for the CPU, the RAM the system can still give this
            process (under its own limit, ``ulimit -v``/``-d``, when one is set).
        total: Device memory; for the CPU, system RAM (or the container's or this
            process's limit, if lower).
        process_rss: This process's resident host memory.
        process_peak_rss: The most ``process_rss`` has been.
        notes: Why a number is missing, or where it came from when that matters.
        total_is: For the CPU, what ``total`` is: ``"RAM"``, ``"cgroup memory limit"``,
            or this process's own limit (``"RLIMIT_AS (ulimit -v)"``); ``None`` on a device.
    """

    device: str
    allocated: int | None = None
    reserved: int | None = None
    peak_allocated: int | None = None
    free: int | None = None
    total: int | None = None
    process_rss: int | None = None
    process_peak_rss: int | None = None
    notes: tuple[str, ...] = field(default=())
    total_is: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The facts as plain JSON-ready values (bytes as ints)."""
        data = asdict(self)
        data["notes"] = list(self.notes)
        return data

    def to_json(self, *, indent: int | None = 2) -> str:
        """The facts as a JSON document."""
        return json.dumps(self.to_dict(), indent=indent)

    # Drawing lives in ._drawing; these delegate so that print(report) shows the table.
    def render(self) -> Any:
        """A rich table with human-readable sizes (drawn by the pillar's one renderer)."""
        from torchport.diagnose._drawing import render_memory

        return render_memory(self)

    def __rich__(self) -> Any:
        return self.render()

    def __str__(self) -> str:
        from torchport.diagnose._drawing import render_text

        return render_text(self)


def memory_report(device: torch.device | str | int | None = None) -> MemoryReport:
    """Report allocated, reserved, peak, free and total memory of a device.

    Never synchronizes. Free/total memory are read through ``torchport.hardware``:
    on CUDA through NVML where it is installed (no context); without it, reading them
    initializes the device's context (a few hundred MiB) if this process has not used
    the device yet.

    Args:
        device: The device, e.g. ``"cuda:1"``, ``torch.device("mps")``, an accelerator index,
            or ``"cpu"``. ``None`` reports on the device ``torchport.pick_device()`` picks.

    Returns:
        The facts; render with ``str()``, ``rich.print()`` or ``to_json()``.

    Raises:
        DeviceError: The device is malformed, ``meta`` (also when ``TORCHPORT_DEVICE=meta``
            makes ``pick_device()`` choose it), or not present on this machine.
        ConfigError: ``device`` is not a device at all (e.g. a tensor or a list).
    """
    resolved = _resolve(device)
    rss, peak_rss = _process_rss()
    if resolved.type == CPU:
        free, total, notes, total_is = _host_memory()
        return MemoryReport(
            device=CPU,
            free=free,
            total=total,
            total_is=total_is,
            process_rss=rss,
            process_peak_rss=peak_rss,
            notes=("PyTorch does not count CPU tensor bytes; see process RSS", *notes),
        )
    return _accelerator_report(resolved, rss, peak_rss)


def _resolve(device: torch.device | str | int | None) -> torch.device:
    if device is None:
        from torchport.place import pick_device

        picked = pick_device()
        if picked.type == META:  # TORCHPORT_DEVICE=meta: a dry-run device with no memory
            raise DeviceError(
                f"memory_report() reports on the device pick_device() chose, {str(picked)!r} "
                f"(TORCHPORT_DEVICE={os.environ.get('TORCHPORT_DEVICE')!r}), but meta tensors "
                "hold no memory; pass a real device, e.g. memory_report('cpu'), or unset "
                "TORCHPORT_DEVICE; available: " + ", ".join(_available())
            )
        return picked
    if isinstance(device, bool) or not isinstance(device, torch.device | str | int):
        raise ConfigError(
            f"memory_report() got a {type(device).__name__}, not a device; expected a "
            "torch.device, a string such as 'cuda:0' or 'cpu', or an accelerator index"
        )
    # The one device parser: "cpu:0" is the CPU, absent devices are refused naming
    # the argument and listing what is there.
    resolved = hardware.parse_device(device, argument="device")
    if resolved.type == META:
        raise DeviceError(
            "memory_report('meta'): meta tensors hold no memory; pass a real device, one of: "
            + ", ".join(_available())
        )
    return resolved


def _available() -> list[str]:
    return [str(info.device) for info in hardware.list_devices(allow_context=False)]


def _accelerator_report(device: torch.device, rss: int | None, peak: int | None) -> MemoryReport:
    index = device.index if device.index is not None else hardware.current_index(device.type)
    target = torch.device(device.type, index)
    notes: list[str] = []
    allocated = _stat(notes, "allocated", target, "memory_allocated")
    reserved = _stat(notes, "reserved", target, "memory_reserved")
    peak_allocated = _stat(notes, "peak allocated", target, "max_memory_allocated")
    free, total = hardware.memory_info(target, allow_context=True)
    if free is None and total is None:
        notes.append("free/total not reported by this backend")
    elif device.type == MPS:
        notes.append("total is Metal's recommended working-set size; free is what remains of it")
    return MemoryReport(
        device=str(target),
        allocated=allocated,
        reserved=reserved,
        peak_allocated=peak_allocated,
        free=free,
        total=total,
        process_rss=rss,
        process_peak_rss=peak,
        notes=tuple(notes),
    )


def _stat(notes: list[str], label: str, device: torch.device, name: str) -> int | None:
    """One allocator counter, or None with a note saying why it is missing."""
    try:
        return hardware.allocator_stat(device, name)
    except (LookupError, RuntimeError, AttributeError, NotImplementedError, TypeError) as exc:
        notes.append(f"{label} not reported by this backend ({_one_line(exc)})")
        return None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:120] if text else type(exc).__name__


def _process_rss() -> tuple[int | None, int | None]:
    """Current and peak resident memory of this process, in bytes."""
    fields = _read_kib_fields(_PROC_STATUS)
    if "VmRSS" in fields:
        return fields["VmRSS"], fields.get("VmHWM")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is bytes on macOS and KiB on the other Unixes.
    peak_bytes = peak if sys.platform == "darwin" else peak * 1024
    return None, peak_bytes or None


def host_memory(*, within_process_limit: bool = True) -> tuple[int | None, int | None]:
    """Available and total system RAM in bytes (the container's limit if lower); no device.

    Args:
        within_process_limit: Bound both by this process's own limit (:func:`process_limit`)
            too, so they say what this process can still get.
    """
    free, total, _, _ = _host_memory(within_process_limit=within_process_limit)
    return free, total


def _host_memory(
    *, within_process_limit: bool = True
) -> tuple[int | None, int | None, list[str], str]:
    """Available and total system RAM, bounded by the cgroup limit and this process's own;
    and what the total is (``"RAM"`` or the limit that set it)."""
    notes: list[str] = []
    total_is = "RAM"
    info = _read_kib_fields(_PROC_MEMINFO)
    available, total = info.get("MemAvailable"), info.get("MemTotal")
    if total is None:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            total = None
        notes.append("available RAM is not reported on this platform")
    limit = _read_int(_CGROUP_MAX)
    if limit is not None and total is not None and limit < total:
        used = _read_int(_CGROUP_CURRENT) or 0
        total = limit
        total_is = "cgroup memory limit"
        room = max(limit - used, 0)
        available = room if available is None else min(available, room)
        notes.append("total is this container's cgroup memory limit")
    cap = process_limit() if within_process_limit else None
    if cap is not None and (total is None or cap.limit < total or (available or 0) > cap.room):
        if total is None or cap.limit < total:
            total_is = cap.name
        total = cap.limit if total is None else min(total, cap.limit)
        available = cap.room if available is None else min(available, cap.room)
        notes.append(
            f"this process is limited by {cap.name} to {format_bytes(cap.limit)}, "
            f"{format_bytes(cap.used)} of it in use: available is what the limit leaves"
        )
    return available, total, notes, total_is


@dataclass(frozen=True)
class ProcessLimit:
    """A limit the kernel puts on this process's memory, apart from the machine's RAM.

    Attributes:
        name: Which limit and how it is set, e.g. ``"RLIMIT_AS (ulimit -v)"``.
        limit: Bytes allowed.
        used: Bytes that count against it now (the address space, ``VmSize``, for
            ``RLIMIT_AS``; the data segment and private mappings, ``VmData``, for
            ``RLIMIT_DATA``).
    """

    name: str
    limit: int
    used: int

    @property
    def room(self) -> int:
        """Bytes this process may still map under the limit."""
        return max(self.limit - self.used, 0)


# (resource limit, /proc/self/status field that counts against it, how users set it)
_PROCESS_LIMITS = (
    ("RLIMIT_AS", "VmSize", "ulimit -v"),
    ("RLIMIT_DATA", "VmData", "ulimit -d"),
)


def process_limit() -> ProcessLimit | None:
    """The tighter of this process's address-space and data limits, or ``None`` when unset.

    Reads ``getrlimit`` and ``/proc/self/status``; on a platform without them, ``None``.
    """
    found: list[ProcessLimit] = []
    status = _read_kib_fields(_PROC_STATUS)
    for name, field_name, command in _PROCESS_LIMITS:
        which = getattr(resource, name, None)
        if which is None or field_name not in status:
            continue
        soft, _ = resource.getrlimit(which)
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        found.append(ProcessLimit(f"{name} ({command})", soft, status[field_name]))
    return min(found, key=lambda limit: limit.room, default=None)


def _read_kib_fields(path: Path) -> dict[str, int]:
    """Parse ``Name:  123 kB`` lines (``/proc/self/status``, ``/proc/meminfo``) into bytes."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    fields: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            fields[name] = int(parts[0]) * 1024
    return fields


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" means no limit


MemoryReport.__module__ = "torchport"
memory_report.__module__ = "torchport"
