"""What CUDA-only queries and no-op-able calls answer while CUDA is redirected to another device.

Code that works on a GPU often asks ``torch.cuda`` about the device behind an
``is_available()`` check: its properties and capability, streams and events
around copies, NVTX ranges for a profiler. Under the redirect that check is
True, so each of these answers from the target (its name, its memory, the
host's RAM for the CPU) or does nothing where doing nothing is what the call
means on a device that runs in order (streams, events and NVTX ranges on the
CPU). A call with no honest answer stays a :class:`~torchport.RedirectError`
(see :mod:`torchport.run._cuda_shim`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from torchport import hardware
from torchport.sim import is_simulated

__all__ = [
    "RedirectedProperties",
    "answers",
    "backend_answers",
    "submodule_answers",
    "tensor_patches",
]


@dataclasses.dataclass(frozen=True)
class RedirectedProperties:
    """``torch.cuda.get_device_properties()`` under the redirect: the target's figures.

    ``major``/``minor`` are 0 off CUDA (no compute capability), so a
    ``capability >= (8, 0)`` check takes its portable path.
    """

    name: str
    total_memory: int
    major: int = 0
    minor: int = 0
    multi_processor_count: int = 1
    is_integrated: int = 0
    is_multi_gpu_board: int = 0
    L2_cache_size: int = 0
    warp_size: int = 32
    gcnArchName: str = ""  # torch's spelling
    uuid: str = ""


def _properties(target: torch.device) -> Callable[..., RedirectedProperties]:
    def get_device_properties(device: Any = None) -> RedirectedProperties:
        _free, total = hardware.memory_info(target, allow_context=True)
        return RedirectedProperties(
            name=f"{target} (redirected by torchport)",
            total_memory=int(total or 0),
            multi_processor_count=os.cpu_count() or 1 if target.type == "cpu" else 1,
        )

    return get_device_properties


class _Stream:
    """A CUDA stream on a device that runs work in order: every wait is already met."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.priority = priority
        self.device = torch.device("cuda", 0)

    def wait_event(self, event: Any) -> None:
        return None

    def wait_stream(self, stream: Any) -> None:
        return None

    def record_event(self, event: Any = None) -> _Event:
        event = event if event is not None else _Event()
        event.record(self)
        return event  # type: ignore[no-any-return]

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Stream)

    def __hash__(self) -> int:
        return hash(_Stream)


class _Event:
    """A CUDA event on an in-order device: recorded when the host reaches it, timed by the host."""

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.enable_timing = enable_timing
        self._at: float | None = None

    def record(self, stream: Any = None) -> None:
        self._at = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: _Event) -> float:
        """Milliseconds between two recorded events (host time: the device runs in order)."""
        if self._at is None or end_event._at is None:
            raise ValueError("elapsed_time() needs both events recorded; call .record() first")
        return (end_event._at - self._at) * 1000.0


def backend_answers() -> dict[str, Callable[..., Any]]:
    """``torch.backends.cuda`` calls that fail without CUDA: no BLAS workspace and no CUDA
    attention kernel exist off CUDA (a CUDA build asks the driver, which may be absent)."""

    def workspace(size: int | None = None, *args: Any, **kwargs: Any) -> int:
        return 0

    def no_cuda_kernel(params: Any = None, debug: bool = False) -> bool:
        return False  # no CUDA attention kernel runs on the target

    kernels = ("can_use_flash_attention", "can_use_efficient_attention", "can_use_cudnn_attention")
    return (
        {name: workspace for name in ("blas_workspace_size", "cublas_workspace_size")}
        | {"cublaslt_workspace_size": workspace}
        | {name: no_cuda_kernel for name in kernels}
    )


def runs_in_order(target: torch.device) -> bool:
    """Whether every op on ``target`` finishes before the next starts (cpu, meta, sim)."""
    return target.type in ("cpu", "meta") or is_simulated(target)


def tensor_patches(target: torch.device) -> list[tuple[Any, str, Any]]:
    """``Tensor.record_stream`` of a stand-in stream: nothing to guard on an in-order device.

    Torch parses the stream argument in C before any function mode sees the call,
    so the method itself is wrapped (and put back when the redirect ends).
    """
    if not runs_in_order(target):
        return []
    original = torch.Tensor.record_stream

    def record_stream(self: torch.Tensor, stream: Any) -> None:
        if isinstance(stream, _Stream):
            return None
        return original(self, stream)

    return [(torch.Tensor, "record_stream", record_stream)]


def _nvtx() -> dict[str, Callable[..., Any]]:
    depth = [0]

    def range_push(msg: str) -> int:
        depth[0] += 1
        return depth[0] - 1

    def range_pop() -> int:
        depth[0] = max(0, depth[0] - 1)
        return depth[0]

    @contextlib.contextmanager
    def range(msg: str, *args: Any, **kwargs: Any) -> Iterator[None]:
        yield

    return {
        "mark": lambda msg: None,
        "range": range,
        "range_end": lambda range_id: None,
        "range_pop": range_pop,
        "range_push": range_push,
        "range_start": lambda msg: 0,
    }


def answers(target: torch.device) -> dict[str, Any]:
    """``torch.cuda`` names that answer from ``target`` (or do nothing) instead of raising.

    Streams and events are no-ops only where the target runs in order (the CPU,
    meta); an accelerator target keeps raising for them, since there skipping a
    wait would read data before it is written.
    """
    table: dict[str, Any] = {
        "get_device_properties": _properties(target),
        "get_device_capability": lambda device=None: (0, 0),
        "get_arch_list": lambda: [],
        "get_gencode_flags": lambda: "",
        "is_tf32_supported": lambda: False,
        "set_per_process_memory_fraction": lambda fraction, device=None: None,
        "get_per_process_memory_fraction": lambda device=None: 1.0,
        "is_current_stream_capturing": lambda: False,
        "get_sync_debug_mode": lambda: 0,
        "set_sync_debug_mode": lambda debug_mode: None,
        "can_device_access_peer": lambda device, peer_device: True,
        "make_graphed_callables": lambda callables, sample_args, *args, **kwargs: callables,
        "host_memory_stats": lambda: {},
        "reset_peak_host_memory_stats": lambda: None,
        "reset_accumulated_host_memory_stats": lambda: None,
    }
    if runs_in_order(target):
        stream = _Stream()
        table.update(
            {
                "Stream": _Stream,
                "Event": _Event,
                "StreamContext": lambda stream: contextlib.nullcontext(),
                "stream": lambda stream=None: contextlib.nullcontext(),
                "current_stream": lambda device=None: stream,
                "default_stream": lambda device=None: stream,
                "set_stream": lambda stream: None,
            }
        )
    return table


def submodule_answers(target: torch.device) -> dict[tuple[str, str], Any]:
    """``torch.cuda.<submodule>.<name>`` answers that only a submodule holds (NVTX, profiler)."""
    table: dict[tuple[str, str], Any] = {("nvtx", name): value for name, value in _nvtx().items()}
    table[("profiler", "start")] = lambda: None
    table[("profiler", "stop")] = lambda: None
    table[("profiler", "profile")] = lambda: contextlib.nullcontext()
    for name in ("enable", "tuning_enable", "record_untuned_enable"):
        table[("tunable", name)] = lambda val=True: None
    for name in ("is_enabled", "tuning_is_enabled", "record_untuned_is_enabled"):
        table[("tunable", name)] = lambda: False
    return table
