"""The backend: the functions in torchport that ask torch about hardware.

Everything else in :mod:`torchport.hardware` (and through it the rest of the
package) reaches torch's device APIs through the :class:`Backend` object held
in :data:`ACTIVE`; ``tests/hardware/test_floor.py`` fails on a ``torch.<type>``
(any accelerator of the vocabulary) or ``torch.accelerator`` call, or a
``getattr(torch, kind)``, anywhere else in the runtime (its allow-lists say why
``run/``'s stand-ins, ``sim/_install.py`` and ``_torch_features`` may).
A backend that answers as ``torch.accelerator`` and ``torch.<type>`` expect
needs nothing here: the generic branches ask ``getattr(torch, kind)``. Only a
backend with calls of its own (CUDA's NVML reads, MPS without streams) has a
branch here. Tests stand in for an accelerator by installing another
``Backend`` with :func:`install` (see ``tests/conftest.py``'s
``fake_accelerator``), so there is one way to fake hardware and it is here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, cast

import torch

from torchport._device_types import CUDA, HOST_TYPES, MPS
from torchport.hardware import _torch_features

__all__ = ["ACTIVE", "Backend", "forget_on_install", "install"]


class Backend:
    """torch's view of the devices this process can use.

    Each method asks torch once and caches nothing; the callers in
    ``hardware/_device_facts.py`` decide what may be cached.
    """

    def accelerator(self) -> str | None:
        """The accelerator type torch reports as usable (``"cuda"``, ``"mps"``, ...), or None."""
        device = _torch_features.current_accelerator()
        return None if device is None else device.type

    def count(self, kind: str) -> int:
        """How many devices of ``kind`` this process sees (0 if this build lacks them)."""
        if kind == CUDA:
            # NVML-based where torch can; creates no context.
            return torch.cuda.device_count()
        if kind == MPS:
            return 1 if torch.backends.mps.is_available() else 0
        current = _torch_features.current_accelerator()
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
        if kind == MPS:
            return 0
        current = _torch_features.current_accelerator()
        if current is not None and current.type == kind:
            return torch.accelerator.current_device_index()
        module = getattr(torch, kind, None)
        current_device = getattr(module, "current_device", None)
        return int(current_device()) if callable(current_device) else 0

    def name(self, kind: str, index: int) -> str:
        """A human-readable device name; the type itself where none can be read."""
        try:
            if kind == CUDA:
                return torch.cuda.get_device_name(index)
            if kind == MPS:
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
        if kind == CUDA:
            try:
                total = torch.cuda.get_device_properties(index).total_memory
                used = torch.cuda.device_memory_used(index)  # NVML / amdsmi: no context
                return max(total - used, 0), total
            except Exception:  # no nvidia-ml-py / amdsmi, or an unsupported device
                pass
        if kind == MPS:
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
                generic = _torch_features.accelerator_function("get_memory_info")
                if generic is None:
                    return None, None
                free, total = generic(torch.device(kind, index))
            return int(free), int(total)
        except Exception:  # a backend without memory queries
            return None, None

    def built(self, kind: str) -> bool:
        """Whether this torch build includes ``kind`` (whether or not a device is there).

        Asks ``torch.backends.<kind>.is_built()``, else ``torch.<kind>._is_compiled()``,
        else whether torch has a ``torch.<kind>`` module at all (an extension's).
        """
        for ask in (
            getattr(getattr(torch.backends, kind, None), "is_built", None),
            getattr(getattr(torch, kind, None), "_is_compiled", None),
        ):
            if callable(ask):
                try:
                    return bool(ask())
                except Exception:  # an extension's module may raise anything here
                    return False
        return getattr(torch, kind, None) is not None

    def available(self, kind: str) -> bool:
        """Whether a device of ``kind`` can be used now; creates no context."""
        if kind == MPS:
            return bool(torch.backends.mps.is_available())
        is_available = getattr(getattr(torch, kind, None), "is_available", None)
        # A raising backend (a broken driver) raises here: doctor reports its message.
        return bool(is_available()) if callable(is_available) else False

    def properties(self, kind: str, index: int) -> tuple[str, str, int] | None:
        """``(name, capability, total memory in bytes)`` of one device; None where unreadable.

        The capability is ``"8.0"`` on NVIDIA, the gfx architecture on ROCm, empty
        elsewhere. Read from the backend's device properties: no context.
        """
        get_properties = getattr(getattr(torch, kind, None), "get_device_properties", None)
        if not callable(get_properties):
            return None
        props = get_properties(index)
        capability = ""
        if kind == CUDA and torch.version.hip is not None:
            capability = str(getattr(props, "gcnArchName", "")).split(":")[0]
        elif kind == CUDA:
            capability = f"{props.major}.{props.minor}"
        return str(props.name), capability, int(props.total_memory)

    def pci_address(self, kind: str, index: int) -> tuple[int, int, int] | None:
        """``(domain, bus, device)`` of one device's PCI function; None where not reported.

        From the backend's device properties (CUDA's since torch 2.1): no context.
        """
        get_properties = getattr(getattr(torch, kind, None), "get_device_properties", None)
        if not callable(get_properties):
            return None
        props = get_properties(index)
        address = tuple(
            getattr(props, f"pci_{part}_id", None) for part in ("domain", "bus", "device")
        )
        if not all(isinstance(part, int) for part in address):
            return None
        return cast("tuple[int, int, int]", address)

    def cudnn_version(self) -> int | None:
        """The cuDNN (or MIOpen) version, when the library loads; loads it, no context."""
        # torch.backends.cudnn is untyped.
        if torch.backends.cudnn.is_available():  # type: ignore[no-untyped-call]
            return int(torch.backends.cudnn.version())  # type: ignore[no-untyped-call]
        return None

    def arch_list(self) -> tuple[str, ...]:
        """GPU architectures this CUDA or ROCm build was compiled for (empty otherwise)."""
        return tuple(torch.cuda.get_arch_list())

    def allocator_function(self, device: torch.device, name: str) -> Callable[..., Any] | None:
        """The caching allocator's ``name`` for ``device``'s type, newest API first, else None.

        ``torch.accelerator.<name>`` where this torch has it, else ``torch.<type>.<name>``
        (``empty_cache``, ``memory_stats``, ``reset_peak_memory_stats``, ...).
        """
        generic = _torch_features.accelerator_function(name)
        if generic is not None:
            return generic
        specific = getattr(getattr(torch, device.type, None), name, None)
        return specific if callable(specific) else None

    def cudart(self) -> Any:
        """The CUDA runtime bindings torch loaded (unannotated in torch, hence the Any)."""
        return cast(Any, torch.cuda).cudart()

    def allocator_stat(self, device: torch.device, name: str) -> int:
        """One caching-allocator counter of ``device`` (``memory_allocated``, ...), newest first.

        Raises:
            LookupError: this torch has no way to read ``name`` for this backend.
            RuntimeError: the backend refused (the error of the last way tried).
        """
        ways: list[Callable[[], int]] = []
        generic = _torch_features.accelerator_function(name)
        if generic is not None:
            ways.append(lambda: int(generic(device)))
        specific = getattr(getattr(torch, device.type, None), name, None)
        if device.type != MPS and specific is not None:
            ways.append(lambda: int(specific(device)))
        if device.type == MPS and name == "memory_allocated":
            ways.append(lambda: int(torch.mps.current_allocated_memory()))
        error: Exception = LookupError("no API in this torch")
        for way in ways:
            try:
                return way()
            except (RuntimeError, AttributeError, NotImplementedError, TypeError) as exc:
                error = exc
        raise error

    def synchronize(self, device: torch.device, *, stream_only: bool) -> None:
        """Block the host until ``device`` (or only its current stream) has finished."""
        if device.type in HOST_TYPES:
            return
        if device.type == MPS:
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

# What the floor caches from the backend's answers, cleared when the backend changes;
# the modules that cache register here (the backend imports none of them).
_CACHES: list[Callable[[], None]] = []


def forget_on_install(clear: Callable[[], None]) -> None:
    """Call ``clear`` whenever :func:`install` changes the backend (a cache of its answers)."""
    _CACHES.append(clear)


@contextlib.contextmanager
def install(backend: Backend) -> Iterator[Backend]:
    """Use ``backend`` instead of torch's inside a ``with`` block (for tests).

    Clears the floor's caches on entry and exit, so nothing learnt from one
    backend leaks into the other.
    """
    global ACTIVE
    previous = ACTIVE
    ACTIVE = backend
    for clear in _CACHES:
        clear()
    try:
        yield backend
    finally:
        ACTIVE = previous
        for clear in _CACHES:
            clear()
