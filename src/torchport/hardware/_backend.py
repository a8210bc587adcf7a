"""The backend: the only functions in torchport that ask torch about hardware.

Everything else in :mod:`torchport.hardware` (and through it the rest of the
package) reaches torch's device APIs through the one :class:`Backend` object
held in :data:`ACTIVE`. Tests stand in for an accelerator by installing another
``Backend`` with :func:`install` (see ``tests/conftest.py``'s
``fake_accelerator``), so there is one way to fake hardware and it is here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, cast

import torch

from torchport.hardware import _torch_api

__all__ = ["ACTIVE", "Backend", "install"]


class Backend:
    """torch's view of the devices this process can use.

    Each method asks torch once and caches nothing; the callers in
    ``hardware/_devices.py`` decide what may be cached.
    """

    def accelerator(self) -> str | None:
        """The accelerator type torch reports as usable (``"cuda"``, ``"mps"``, ...), or None."""
        device = _torch_api.current_accelerator()
        return None if device is None else device.type

    def count(self, kind: str) -> int:
        """How many devices of ``kind`` this process sees (0 if this build lacks them)."""
        if kind == "cuda":
            # NVML-based where torch can; creates no context.
            return torch.cuda.device_count()
        if kind == "mps":
            return 1 if torch.backends.mps.is_available() else 0
        current = _torch_api.current_accelerator()
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

    def current_index(self, kind: str) -> int:
        """The backend's current device index for ``kind`` (initializes the backend)."""
        if kind == "mps":
            return 0
        current = _torch_api.current_accelerator()
        if current is not None and current.type == kind:
            return torch.accelerator.current_device_index()
        module = getattr(torch, kind, None)
        current_device = getattr(module, "current_device", None)
        return int(current_device()) if callable(current_device) else 0

    def name(self, kind: str, index: int) -> str:
        """A human-readable device name; the type itself where none can be read."""
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

    def memory(
        self, kind: str, index: int, *, allow_context: bool
    ) -> tuple[int | None, int | None]:
        """``(free, total)`` bytes of one device, ``(None, None)`` where unknown.

        CUDA and ROCm are read through NVML/amdsmi, which creates no context; MPS
        through its driver counters. Elsewhere (and where NVML is missing) the
        backend is asked only when ``allow_context``: that creates a context.
        """
        if kind == "cuda":
            try:
                total = torch.cuda.get_device_properties(index).total_memory
                used = torch.cuda.device_memory_used(index)  # NVML / amdsmi: no context
                return max(total - used, 0), total
            except Exception:  # no nvidia-ml-py / amdsmi, or an unsupported device
                pass
        if kind == "mps":
            try:
                total = torch.mps.recommended_max_memory()
                return max(total - torch.mps.driver_allocated_memory(), 0), total
            except Exception:  # an older macOS or torch
                return None, None
        if not allow_context:
            return None, None
        try:
            ask = getattr(getattr(torch, kind, None), "mem_get_info", None)
            if callable(ask):  # cudaMemGetInfo and its XPU twin
                free, total = ask(index)
            else:
                generic = _torch_api.accelerator_function("get_memory_info")
                if generic is None:
                    return None, None
                free, total = generic(torch.device(kind, index))
            return int(free), int(total)
        except Exception:  # a backend without memory queries
            return None, None

    def synchronize(self, device: torch.device, *, stream_only: bool) -> None:
        """Block the host until ``device`` (or only its current stream) has finished."""
        if device.type in ("cpu", "meta"):
            return
        if device.type == "mps":
            torch.mps.synchronize()
            return
        if stream_only:
            torch.accelerator.current_stream(device).synchronize()
        else:
            torch.accelerator.synchronize(device)

    def new_stream(self, device: torch.device) -> torch.Stream:
        """A new stream on ``device``."""
        return torch.Stream(device=device)

    def current_stream(self, device: torch.device) -> torch.Stream:
        """The stream work on ``device`` is queued on now."""
        return torch.accelerator.current_stream(device)

    def new_event(self, *, timing: bool) -> torch.Event:
        """A new event; it takes its device from the stream it is recorded on."""
        return torch.Event(enable_timing=timing)

    def use_stream(self, stream: torch.Stream) -> contextlib.AbstractContextManager[Any]:
        """Make ``stream`` current inside a ``with`` block."""
        return cast(contextlib.AbstractContextManager[Any], stream)

    def record_stream(self, tensor: torch.Tensor, stream: torch.Stream) -> None:
        """Tell the caching allocator ``tensor`` is used on ``stream`` (no host wait)."""
        tensor.record_stream(stream)


ACTIVE: Backend = Backend()
"""The backend every floor function asks; replaced only by :func:`install`."""


@contextlib.contextmanager
def install(backend: Backend) -> Iterator[Backend]:
    """Use ``backend`` instead of torch's inside a ``with`` block (for tests).

    Clears the floor's caches on entry and exit, so nothing learnt from one
    backend leaks into the other.
    """
    global ACTIVE
    from torchport.hardware import _devices

    previous = ACTIVE
    ACTIVE = backend
    _devices.clear_caches()
    try:
        yield backend
    finally:
        ACTIVE = previous
        _devices.clear_caches()
