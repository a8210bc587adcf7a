"""Reusable host staging buffers for host-to-device copies, pinned when the target is CUDA.

A staging buffer is written by the host and read by an asynchronous DMA copy. Two
hazards follow, and this module owns both:

* Overwriting a buffer while a copy from it is still in flight corrupts the batch
  that copy delivers. Every slot therefore carries the CUDA event recorded after
  its last copy; :meth:`StagingPool.acquire` waits on it before handing the slot out.
* PyTorch's pinned allocator (``CachingHostAllocator``) rounds every request up to
  a power of two, so a 65 MiB batch pins 128 MiB. Slots here are allocated at the
  exact size with the ordinary CPU allocator and page-locked with
  ``cudaHostRegister`` (the route ``torch/cuda/_pin_memory_utils.py`` takes), so
  pinned bytes held equal the bytes asked for, to the page. Each slot's locked pages
  lie wholly inside its own allocation, because registering two ranges that share
  a page fails. A failed registration also leaves the error in the CUDA runtime's
  per-thread "last error", where torch's next kernel-launch check would report it
  against an unrelated kernel; registration is therefore used only where
  ``cudaGetLastError`` can be reached to clear it (Linux CUDA builds), and any
  other case (ROCm, Windows, WSL where registration is unsupported, a refusing
  driver) falls back to ``pin_memory=True`` and its rounding.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, cast

import torch

from torchport.errors import ConfigError

__all__ = ["StagingPool", "default_pool"]

# cudaHostRegisterPortable: the pages count as pinned for every CUDA context, so a
# slot staged for cuda:0 is equally fast for cuda:1 (the flag torch itself passes).
_REGISTER_PORTABLE = 1


def _cudart() -> Any:
    """The CUDA runtime bindings (unannotated in torch, hence the Any)."""
    return cast(Any, torch.cuda).cudart()


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

    Returns None (and leaves no CUDA error behind) where registration is unavailable.
    """
    clear_error = _last_error_fn()
    if nbytes == 0 or clear_error is None:
        return None
    page = mmap.PAGESIZE
    raw = torch.empty(nbytes + 2 * page, dtype=torch.uint8)
    start = -(-raw.data_ptr() // page) * page
    locked = -(-nbytes // page) * page  # ends inside `raw` thanks to the second page
    try:
        err = int(_cudart().cudaHostRegister(start, locked, _REGISTER_PORTABLE))
    except (AttributeError, RuntimeError):
        return None
    if err != 0:
        clear_error()
        return None
    offset = start - raw.data_ptr()
    return raw[offset : offset + nbytes], start


def _unregister(ptr: int) -> None:
    with contextlib.suppress(AttributeError, RuntimeError):  # interpreter shutdown, driver gone
        if int(_cudart().cudaHostUnregister(ptr)) != 0:
            clear_error = _last_error_fn()
            if clear_error is not None:
                clear_error()


class _Slot:
    """One host buffer and the event that says when the device has finished reading it."""

    __slots__ = ("_locked_at", "buffer", "event", "last_use", "pinned")

    def __init__(self, nbytes: int, *, pinned: bool) -> None:
        self.pinned = pinned
        self.last_use = 0
        self.event: torch.cuda.Event | None = None
        self._locked_at: int | None = None  # address handed to cudaHostRegister
        if not pinned:
            self.buffer = torch.empty(nbytes, dtype=torch.uint8)
            return
        locked = _page_locked(nbytes)
        if locked is not None:
            self.buffer, self._locked_at = locked
        else:
            self.buffer = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    @property
    def capacity(self) -> int:
        return self.buffer.numel()

    def ready(self) -> bool:
        """True when no copy from this slot is still running; never blocks."""
        return self.event is None or bool(cast(Any, self.event).query())

    def wait(self) -> None:
        """Blocks the host until the last copy that read this slot has finished."""
        if self.event is not None:
            self.event.synchronize()
            self.event = None

    def close(self) -> None:
        """Waits for the last copy, then gives the page lock back (host waits here)."""
        if self._locked_at is not None:
            self.wait()
            _unregister(self._locked_at)
            self._locked_at = None

    def __del__(self) -> None:
        # A registered range must be unregistered before the CPU allocator frees it,
        # and not before the DMA reading it has finished.
        with contextlib.suppress(Exception):  # nothing sensible to do during teardown
            self.close()


class StagingPool:
    """Host staging buffers reused across copies, sized exactly to what was asked.

    Pinned slots (for CUDA targets) and pageable slots are kept apart; each kind holds
    at most ``max_slots`` buffers. :meth:`acquire` prefers the smallest idle slot that
    is large enough and whose last copy has finished; if every such slot is still
    being read it waits on the oldest one; if none is large enough it allocates a new
    slot of exactly the requested size, retiring an idle smaller one when the pool is
    full. Thread-safe.

    Device-side results are never pooled: callers hold views of them.

    Args:
        max_slots: buffers kept per kind. A loader that keeps ``depth`` batches in
            flight needs ``depth``; the process-wide default pool keeps 2.
    """

    def __init__(self, max_slots: int = 2) -> None:
        if isinstance(max_slots, bool) or not isinstance(max_slots, int) or max_slots < 1:
            raise ConfigError(f"max_slots must be an int >= 1, got {max_slots!r}; pass e.g. 2")
        self.max_slots = max_slots
        self._lock = threading.Lock()
        self._idle: dict[bool, list[_Slot]] = {True: [], False: []}
        self._lent: dict[bool, int] = {True: 0, False: 0}
        self._clock = 0
        self._retiring: list[_Slot] = []
        self.allocations = 0
        """How many buffers this pool has allocated so far (reuse keeps it flat)."""

    def acquire(self, nbytes: int, *, pinned: bool) -> _Slot:
        """Lends a slot of at least ``nbytes``; give it back with :meth:`release`.

        Synchronization: the host waits on a CUDA event only when every idle slot
        that is large enough is still being read by an earlier copy and the pool is
        full; it waits for the oldest such copy.
        """
        with self._lock:
            self._sweep()
            idle = self._idle[pinned]
            full = len(idle) + self._lent[pinned] >= self.max_slots
            fits = [s for s in idle if s.capacity >= nbytes]
            ready = [s for s in fits if s.ready()]
            chosen: _Slot | None = None
            if ready:
                chosen = min(ready, key=lambda s: s.capacity)
            elif fits and full:
                chosen = min(fits, key=lambda s: s.last_use)
            elif idle and full:
                # Nothing idle is large enough: retire the least recently used slot
                # so the pool keeps its bound; it is freed once its copy has finished.
                retired = min(idle, key=lambda s: s.last_use)
                idle.remove(retired)
                self._retire(retired)
            if chosen is not None:
                idle.remove(chosen)
            self._lent[pinned] += 1
        if chosen is None:
            chosen = _Slot(nbytes, pinned=pinned)
            with self._lock:
                self.allocations += 1
        chosen.wait()
        return chosen

    def release(self, slot: _Slot, event: torch.cuda.Event | None) -> None:
        """Returns ``slot``; ``event`` (if any) fires when the copy reading it has finished."""
        slot.event = event
        with self._lock:
            self._lent[slot.pinned] -= 1
            self._clock += 1
            slot.last_use = self._clock
            idle = self._idle[slot.pinned]
            if len(idle) + self._lent[slot.pinned] >= self.max_slots:
                # More slots were lent at once than the bound (concurrent callers):
                # let this one go once its copy has finished, without waiting here.
                self._retire(slot)
            else:
                idle.append(slot)

    def _retire(self, slot: _Slot) -> None:
        """Frees ``slot`` now if no copy reads it, else once one has (lock held)."""
        if slot.ready():
            slot.close()
        else:
            self._retiring.append(slot)

    def _sweep(self) -> None:
        """Frees retired slots whose last copy has finished; never blocks (lock held)."""
        waiting: list[_Slot] = []
        for slot in self._retiring:
            if slot.ready():
                slot.close()
            else:
                waiting.append(slot)
        self._retiring = waiting

    @property
    def nbytes(self) -> int:
        """Bytes of staging memory held while no copy is being staged (pinned and pageable).

        Counts idle slots and retired ones whose last copy has not finished yet.
        """
        with self._lock:
            return sum(s.capacity for s in self._held())

    @property
    def pinned_nbytes(self) -> int:
        """Bytes of pinned staging memory held; see :attr:`nbytes`."""
        with self._lock:
            return sum(s.capacity for s in self._held() if s.pinned)

    def _held(self) -> list[_Slot]:
        return [s for kind in self._idle.values() for s in kind] + self._retiring

    def clear(self) -> None:
        """Frees every idle slot; the host waits for copies still reading them."""
        with self._lock:
            slots = [s for kind in self._idle.values() for s in kind] + self._retiring
            for kind in self._idle.values():
                kind.clear()
            self._retiring = []
        for slot in slots:
            slot.close()

    def __repr__(self) -> str:
        return (
            f"StagingPool(max_slots={self.max_slots}, nbytes={self.nbytes}, "
            f"pinned_nbytes={self.pinned_nbytes})"
        )


_default: StagingPool | None = None
_default_lock = threading.Lock()


def default_pool() -> StagingPool:
    """The process-wide pool used when a caller passes ``pool=None``."""
    global _default
    with _default_lock:
        if _default is None:
            _default = StagingPool()
        return _default


StagingPool.__module__ = "torchport.feed"
