"""What ``torch.cuda``'s memory functions answer while a script is redirected.

The allocator's counters and resets, ``memory_stats``, ``empty_cache`` and
``mem_get_info`` read the target's allocator where it is this machine's accelerator
(through :mod:`torchport.hardware`), answer as an empty allocator on the CPU and meta,
and otherwise raise :class:`~torchport.RedirectError` naming the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchport import hardware
from torchport.errors import RedirectError

__all__ = ["memory_stand_ins"]

_MEMORY_COUNTERS = (
    "max_memory_allocated",
    "max_memory_cached",
    "max_memory_reserved",
    "memory_allocated",
    "memory_cached",
    "memory_reserved",
)
_MEMORY_RESETS = (
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "reset_peak_memory_stats",
)

# What torch.cuda.memory_stats() answers where the target's allocator gives no stats
# of its own: CUDA's keys for the counters torchport can read (0 on the CPU and meta,
# where no device allocator exists, as memory_allocated() answers there).
_STATS_KEYS = {
    "allocated_bytes.all.current": "memory_allocated",
    "allocated_bytes.all.peak": "max_memory_allocated",
    "reserved_bytes.all.current": "memory_reserved",
    "reserved_bytes.all.peak": "max_memory_reserved",
}


def _counter_stats(read: Callable[[str], int]) -> dict[str, int]:
    return {key: read(name) for key, name in _STATS_KEYS.items()}


def _accelerator_call(target: torch.device, name: str, cpu_value: Any) -> Callable[..., Any]:
    """``name`` of ``target``'s allocator when it is this machine's accelerator.

    Elsewhere (the CPU, meta) no device allocator exists: ``cpu_value`` (0 bytes,
    nothing to free; ``memory_stats`` the counters' keys at 0). On the accelerator the
    counters are read through :func:`torchport.hardware.allocator_stat` (the generic
    API where this torch has it, else the backend's module: ``torch.accelerator``'s
    memory functions are torch 2.8's); ``memory_stats`` falls back to those counters
    where the backend's allocator keeps no stats (a Python-defined backend); the rest
    raise :class:`~torchport.RedirectError` where this torch offers no way.
    """

    def on_target(*args: Any, **kwargs: Any) -> Any:
        if name in _STATS_KEYS.values():
            return hardware.allocator_stat(target, name)
        function = hardware.allocator_function(target, name)
        if name == "memory_stats":
            try:
                if function is None:
                    raise LookupError(name)
                return function(target)
            except (RuntimeError, LookupError, NotImplementedError):
                return _counter_stats(lambda n: hardware.allocator_stat(target, n))
        if function is None:
            raise RedirectError(
                f"torch.cuda.{name}() has no answer on {target}: this torch has neither "
                f"torch.accelerator.{name} nor torch.{target.type}.{name}. Run on a CUDA "
                f"device, or make the call conditional on the device type."
            )
        return function() if name == "empty_cache" else function(target)

    def call(*args: Any, **kwargs: Any) -> Any:
        if target.type != hardware.accelerator_type():
            return _counter_stats(lambda n: 0) if name == "memory_stats" else cpu_value
        try:
            return on_target(*args, **kwargs)
        except (LookupError, RuntimeError, NotImplementedError, AttributeError) as exc:
            if isinstance(exc, RedirectError):
                raise
            raise RedirectError(
                f"torch.cuda.{name}() has no answer on {target}: its allocator refused "
                f"({type(exc).__name__}: {exc}). Run on a CUDA device, or make the call "
                f"conditional on the device type."
            ) from exc

    return call


def _mem_get_info(target: torch.device) -> Callable[..., tuple[int, int]]:
    def mem_get_info(device: Any = None) -> tuple[int, int]:
        free, total = hardware.memory_info(target, allow_context=True)
        if free is None or total is None:
            # A made-up figure would size the script's batches wrongly: say so instead.
            raise RedirectError(
                f"torch.cuda.mem_get_info() has no answer on {target}: torchport cannot read "
                f"its free memory. Run on a device that reports it (cpu, cuda, mps), or make "
                f"the call conditional on the device type."
            )
        return free, total

    return mem_get_info


def memory_stand_ins(target: torch.device) -> dict[str, Callable[..., Any]]:
    """The stand-ins for ``torch.cuda``'s memory functions, by name, for ``target``."""
    table: dict[str, Callable[..., Any]] = {
        "empty_cache": _accelerator_call(target, "empty_cache", None),
        "mem_get_info": _mem_get_info(target),
        "memory_stats": _accelerator_call(target, "memory_stats", {}),
        "memory_summary": lambda device=None, abbreviated=False: (
            f"torchport: no CUDA memory summary, this run is redirected to {target}"
        ),
    }
    for name in _MEMORY_COUNTERS:
        source = name.replace("cached", "reserved")
        table[name] = _accelerator_call(target, source, 0)
    for name in _MEMORY_RESETS:
        source = "reset_peak_memory_stats" if "max" in name else name
        table[name] = _accelerator_call(target, source, None)
    return table
