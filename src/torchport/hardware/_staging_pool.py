"""Reusable host staging buffers for host-to-device copies, pinned when the target is CUDA.

A staging buffer is written by the host and read by an asynchronous DMA copy.
Three hazards follow, and this module owns them:

* Overwriting a buffer while a copy from it is still in flight corrupts the batch
  that copy delivers. Every slot therefore carries the event recorded after its
  last copy; :meth:`StagingPool.acquire` waits on it before handing the slot out.
* Pinning and unpinning are slow (``cudaHostUnregister`` can synchronize the
  device). Slots are sized in classes of 1/64 of a power of two (at most ~3% over
  the request) and, when a batch outgrows them, grow by at least a quarter, so a
  slowly growing batch size re-pins a few times, not at every new maximum. A slot
  that is retired while a pass runs is parked, not unpinned: :meth:`trim` (called
  by ``DeviceLoader`` when a pass ends) and :meth:`clear` give the pages back.
* An interrupted :meth:`acquire` (``KeyboardInterrupt`` while waiting, a failed
  allocation) returns its lease, so the pool never loses a slot for good.
"""

from __future__ import annotations

import threading
from typing import Any, cast

import torch

from torchport.errors import ConfigError
from torchport.hardware._pinned import PinnedBuffer

__all__ = ["StagingPool", "default_pool", "size_class"]

_GROWTH = 1.25


def size_class(nbytes: int) -> int:
    """``nbytes`` rounded up to its size class: a multiple of 1/64 of the next power of two.

    At most ~3% larger than asked (and at least 64 bytes granularity), so that
    batches of nearly equal size share a slot.
    """
    if nbytes <= 0:
        return 0
    step = max(64, (1 << (nbytes - 1).bit_length()) // 64)
    return -(-nbytes // step) * step


class _Slot:
    """One host buffer and the event that says when the device has finished reading it."""

    __slots__ = ("_memory", "buffer", "event", "last_use", "pinned")

    def __init__(self, nbytes: int, *, pinned: bool) -> None:
        self.pinned = pinned
        self.last_use = 0
        self.event: torch.Event | None = None
        self._memory = PinnedBuffer(nbytes, pinned=pinned)
        self.buffer = self._memory.tensor

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
        self.wait()
        self._memory.unlock()


class StagingPool:
    """Host staging buffers reused across copies.

    Pinned slots (for CUDA targets) and pageable slots are kept apart; each kind holds
    at most ``max_slots`` buffers while idle. :meth:`acquire` prefers the smallest idle
    slot that is large enough and whose last copy has finished; if every such slot is
    still being read it waits on the oldest one; if none is large enough it allocates
    a new slot (see the module docstring for its size), parking an idle smaller one
    when the pool is full. Thread-safe.

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

        Synchronization: the host waits on an event only when every idle slot that is
        large enough is still being read by an earlier copy and the pool is full; it
        waits for the oldest such copy. If this is interrupted (or the allocation
        fails) the lease is returned before the exception propagates.
        """
        grow_from = 0
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
                # Nothing idle is large enough: park the least recently used slot
                # so the pool keeps its bound; it is freed by trim() or clear().
                retired = min(idle, key=lambda s: s.last_use)
                idle.remove(retired)
                self._retiring.append(retired)
                grow_from = max(s.capacity for s in (retired, *idle))
            if chosen is not None:
                idle.remove(chosen)
            self._lent[pinned] += 1
        try:
            if chosen is None:
                size = max(nbytes, int(grow_from * _GROWTH)) if grow_from else nbytes
                chosen = _Slot(size_class(size), pinned=pinned)
                with self._lock:
                    self.allocations += 1
            chosen.wait()
        except BaseException:
            with self._lock:
                self._lent[pinned] -= 1
                if chosen is not None:
                    self._idle[pinned].append(chosen)  # its event, if any, is kept
            raise
        return chosen

    def release(self, slot: _Slot, event: torch.Event | None) -> None:
        """Returns ``slot``; ``event`` (if any) fires when the copy reading it has finished."""
        slot.event = event
        with self._lock:
            self._lent[slot.pinned] -= 1
            self._clock += 1
            slot.last_use = self._clock
            idle = self._idle[slot.pinned]
            if len(idle) + self._lent[slot.pinned] >= self.max_slots:
                # More slots were lent at once than the bound (concurrent callers):
                # park this one; it is freed without waiting here.
                self._retiring.append(slot)
            else:
                idle.append(slot)

    def _sweep(self) -> None:
        """Frees parked pageable slots whose last copy has finished; never blocks (lock held).

        Pinned ones stay parked: unpinning may synchronize the device, so it waits
        for :meth:`trim`.
        """
        waiting: list[_Slot] = []
        for slot in self._retiring:
            if not slot.pinned and slot.ready():
                slot.close()
            else:
                waiting.append(slot)
        self._retiring = waiting

    def trim(self) -> None:
        """Frees parked slots whose last copy has finished (unpinning them); never waits.

        Call it outside the hot loop, e.g. when a pass over a loader ends.
        """
        with self._lock:
            done = [s for s in self._retiring if s.ready()]
            self._retiring = [s for s in self._retiring if s not in done]
        for slot in done:
            slot.close()

    @property
    def nbytes(self) -> int:
        """Bytes of staging memory held while no copy is being staged (pinned and pageable).

        Counts idle slots and parked ones not freed yet.
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
        """Frees every idle and parked slot; the host waits for copies still reading them."""
        with self._lock:
            slots = self._held()
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
