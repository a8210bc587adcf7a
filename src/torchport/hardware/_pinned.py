"""Page-locked (pinned) host memory, allocated to the size asked.

PyTorch's pinned allocator (``CachingHostAllocator``) rounds every request up to
a power of two, so a 65 MiB buffer pins 128 MiB. Buffers here are anonymous
``mmap`` pages, page-locked with ``cudaHostRegister`` (the route
``torch/cuda/_pin_memory_utils.py`` takes), so pinned bytes equal the bytes asked
for, to the page. Whole pages of its own make each buffer's locked range its own
(registering two ranges that share a page fails), and its tensor's storage starts
at the locked address (``is_pinned()`` asks the driver about the storage's first
byte, not the tensor's: a view into a larger allocation reads as unpinned). A failed
registration also leaves the error in the CUDA runtime's per-thread "last
error", where torch's next kernel-launch check would report it against an
unrelated kernel; registration is therefore used only where ``cudaGetLastError``
can be reached to clear it (Linux CUDA builds), and any other case (ROCm,
Windows, WSL where registration is unsupported, a refusing driver) falls back to
``pin_memory=True`` and its rounding.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import os
import sys
from collections.abc import Callable
from typing import Any, cast

import torch

from torchport._device_types import CUDA
from torchport.hardware import _backend, _device_facts

__all__ = ["PinnedBuffer", "pins_for"]

# cudaHostRegisterPortable: the pages count as pinned for every CUDA context, so a
# buffer staged for cuda:0 is equally fast for cuda:1 (the flag torch itself passes).
_REGISTER_PORTABLE = 1


def pins_for(device: torch.device) -> bool:
    """Whether host buffers bound for ``device`` should be pinned.

    Only where a DMA engine reads them asynchronously: CUDA (and ROCm) devices
    this process can see.
    """
    return device.type == CUDA and _device_facts.accelerator_type() == CUDA


def _cudart() -> Any:
    """The CUDA runtime bindings, from the backend (unannotated in torch, hence the Any)."""
    return _backend.ACTIVE.cudart()


@functools.cache
def _last_error_fn() -> Callable[[], int] | None:
    """``cudaGetLastError`` from the libcudart torch has loaded, or None where unreachable."""
    if sys.platform != "linux" or torch.version.cuda is None:
        return None
    major = torch.version.cuda.split(".")[0]
    # dlopen(NULL) searches the global scope, where torch's global deps put libcudart;
    # RTLD_NOLOAD finds an already loaded copy by its soname without loading another.
    for name, mode in ((None, 0), (f"libcudart.so.{major}", os.RTLD_NOLOAD)):
        try:
            fn = ctypes.CDLL(name, mode=mode).cudaGetLastError
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        fn.argtypes = []
        return cast(Callable[[], int], fn)
    return None


def _page_locked(nbytes: int) -> tuple[torch.Tensor, int] | None:
    """An ``nbytes`` buffer on pages of its own, page-locked, and the locked address.

    The buffer is an anonymous ``mmap`` (page-aligned, whole pages), so the tensor's
    storage starts at the locked address: ``is_pinned()`` asks the driver about the
    storage's first byte, and torch treats the buffer as the pinned memory it is.
    Returns None (and leaves no CUDA error behind) where registration is unavailable.
    """
    clear_error = _last_error_fn()
    if nbytes == 0 or clear_error is None:
        return None
    locked = -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE
    pages = mmap.mmap(-1, locked)
    tensor = torch.frombuffer(pages, dtype=torch.uint8, count=nbytes)  # keeps `pages` alive
    start = tensor.data_ptr()
    try:
        err = int(_cudart().cudaHostRegister(start, locked, _REGISTER_PORTABLE))
    except (AttributeError, RuntimeError):
        return None
    if err != 0:
        clear_error()
        return None
    return tensor, start


def _unregister(ptr: int) -> None:
    with contextlib.suppress(AttributeError, RuntimeError):  # interpreter shutdown, driver gone
        if int(_cudart().cudaHostUnregister(ptr)) != 0:
            clear_error = _last_error_fn()
            if clear_error is not None:
                clear_error()


class PinnedBuffer:
    """A host ``uint8`` buffer, page-locked when ``pinned``.

    Attributes:
        tensor: The buffer (``uint8``, ``nbytes`` long).
        pinned: Whether its pages are locked.
    """

    __slots__ = ("_locked_at", "pinned", "tensor")

    def __init__(self, nbytes: int, *, pinned: bool) -> None:
        self.pinned = pinned
        self._locked_at: int | None = None  # address handed to cudaHostRegister
        if not pinned:
            self.tensor = torch.empty(nbytes, dtype=torch.uint8)
            return
        locked = _page_locked(nbytes)
        if locked is not None:
            self.tensor, self._locked_at = locked
        else:
            self.tensor = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    @property
    def nbytes(self) -> int:
        """The buffer's size in bytes."""
        return self.tensor.numel()

    def unlock(self) -> None:
        """Give the page lock back now. The caller must know no copy still reads it.

        ``cudaHostUnregister`` may synchronize the device; call this outside hot loops.
        """
        if self._locked_at is not None:
            _unregister(self._locked_at)
            self._locked_at = None

    def __del__(self) -> None:
        # A registered range must be unregistered before the CPU allocator frees it.
        with contextlib.suppress(Exception):  # nothing sensible to do during teardown
            self.unlock()
