"""Page-locked host memory for the simulated accelerator.

PyTorch asks an accelerator's C++ hooks for its pinned-memory allocator, which a
Python backend cannot provide, so ``tensor.pin_memory()`` (and a DataLoader with
``pin_memory=True``) would fail once the simulated device is the accelerator.
Here the CPU kernels of ``aten::_pin_memory`` and ``aten::is_pinned`` answer
instead: a pinned tensor is a host copy the simulator remembers, so ``is_pinned``
and the copy counts (``pinned`` on each host-to-device copy) tell pinned from
pageable as CUDA would. Installed with the simulator on every machine: PyTorch
reports a registered PrivateUse1 backend as the accelerator ahead of CUDA, so
beside a real GPU too a bare ``pin_memory()`` asks the simulator (and, without
these kernels, fails). In such a process CUDA's own pinning is not reached.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from typing import Any

import torch

__all__ = ["install_pinning", "is_pinned"]

_pinned: set[int] = set()
_lock = threading.Lock()
_library: list[Any] = []


def is_pinned(tensor: torch.Tensor) -> bool:
    """Whether ``tensor``'s memory came from the simulated pinned allocator."""
    if tensor.device.type != "cpu" or tensor.layout != torch.strided:
        return False
    return tensor.untyped_storage().data_ptr() in _pinned


def _forget(key: int) -> None:
    with _lock:
        _pinned.discard(key)


def _pin_memory(tensor: torch.Tensor, device: Any = None) -> torch.Tensor:
    pinned = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    pinned.copy_(tensor)
    key = pinned.untyped_storage().data_ptr()
    with _lock:
        _pinned.add(key)
    weakref.finalize(pinned, _forget, key)
    return pinned


def _is_pinned(tensor: torch.Tensor, device: Any = None) -> bool:
    return is_pinned(tensor)


def install_pinning() -> None:
    """Answer ``pin_memory``/``is_pinned`` of CPU tensors here (once per process)."""
    library = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
        library.impl("_pin_memory", _pin_memory, "CPU")  # type: ignore[no-untyped-call]
        library.impl("is_pinned", _is_pinned, "CPU")  # type: ignore[no-untyped-call]
    _library.append(library)  # a Library unregisters its kernels when collected
