"""Device memory of the simulated accelerator: what is allocated, the peak, and the limit.

Each simulated tensor holds a CPU tensor; the ledger charges the bytes of that
CPU tensor's storage once, however many simulated tensors view it, and gives
them back when the last one is collected. With a limit set, an allocation that
would pass it raises :class:`torch.OutOfMemoryError` worded as CUDA words it,
with the allocator's figures, so ``explain_oom`` and ``memory_report`` read a
device that can run out.

A storage's bytes are given back by a finalizer, which the cyclic collector may run in the
middle of any allocation, the ledger's own included (``charge`` holding its lock): the
finalizer never waits for the lock. It queues the storage, and whoever holds the lock next
settles the queue first (a finalizer that waited there hung the program for good).
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from dataclasses import dataclass

import torch

from torchport.errors import TorchportError

__all__ = ["LEDGER", "Ledger", "MemoryFigures"]


@dataclass(frozen=True, slots=True)
class MemoryFigures:
    """The allocator's figures at one moment, in bytes (``limit`` is None when unlimited)."""

    allocated: int
    peak: int
    limit: int | None


class Ledger:
    """Bytes held by simulated tensors, counted once per storage."""

    def __init__(self) -> None:
        self.limit: int | None = None
        self._held: dict[int, list[int]] = {}  # storage data_ptr -> [nbytes, holders]
        self._allocated = 0
        self._peak = 0
        self._charged = 0  # storages ever charged: never reset, never given back
        self._off_main = False  # a tensor was ever made on a thread not the main one
        self._lock = threading.Lock()
        self._freed: deque[int] = deque()  # storages collected, not yet settled (_release)

    def figures(self) -> MemoryFigures:
        """The allocated bytes, the peak since the last reset, and the limit."""
        with self._lock:
            self._settle()
            return MemoryFigures(self._allocated, self._peak, self.limit)

    def storages_charged(self) -> int:
        """How many storages the simulated accelerator has held since the ledger was made
        (a program that never put a tensor there: 0, whatever it reset or freed)."""
        with self._lock:
            return self._charged

    def made_off_the_main_thread(self) -> bool:
        """Whether a simulated tensor was ever made on a thread other than the main one:
        autograd's own thread for the device (a backward's gradients), or the program's."""
        return self._off_main

    def reset_peak(self) -> None:
        """Start the peak again from what is allocated now."""
        with self._lock:
            self._settle()
            self._peak = self._allocated

    def charge(self, raw: torch.Tensor) -> None:
        """Count ``raw``'s storage (a simulated tensor's values) until ``raw`` is collected.

        The finalizer sits on ``raw``, which only its simulated tensor keeps: a weak
        reference to that tensor would stop ``torch.utils.swap_tensors``, which module
        moves use.

        Raises:
            torch.OutOfMemoryError: The storage is new and would pass the limit.
        """
        storage = raw.untyped_storage()
        try:
            key = storage.data_ptr()
        except RuntimeError as error:  # a FakeTensor: torch.compile is tracing
            raise TorchportError(
                "torch.compile cannot trace the simulated accelerator (its tensors are Python "
                "wrappers around CPU tensors); run the model eagerly on sim, e.g. with "
                "TORCHDYNAMO_DISABLE=1, or compile it on the CPU"
            ) from error
        nbytes = storage.nbytes()
        # (`get_ident`, not `current_thread()`, which would register autograd's C++ thread
        # with `threading` as a dummy thread: audit() then reports it as another thread)
        if not self._off_main and threading.get_ident() != threading.main_thread().ident:
            self._off_main = True
        with self._lock:
            self._settle()  # (a storage freed at this address, not yet given back)
            entry = self._held.get(key)
            if entry is None:
                if self.limit is not None and self._allocated + nbytes > self.limit:
                    raise torch.OutOfMemoryError(self._message(nbytes))
                entry = self._held[key] = [nbytes, 0]
                self._allocated += nbytes
                self._charged += 1
                self._peak = max(self._peak, self._allocated)
            entry[1] += 1
        weakref.finalize(raw, self._release, key)

    def _release(self, key: int) -> None:
        """The finalizer of a charged tensor: queue it, settle now if the lock is free.

        Never waits: the collector may run it on a thread that holds the lock already."""
        self._freed.append(key)
        if self._lock.acquire(blocking=False):
            try:
                self._settle()
            finally:
                self._lock.release()

    def _settle(self) -> None:
        """Give back what the queued finalizers freed (the lock held)."""
        freed = self._freed
        while freed:
            key = freed.popleft()
            entry = self._held.get(key)
            if entry is None:
                continue
            entry[1] -= 1
            if entry[1] == 0:
                del self._held[key]
                self._allocated -= entry[0]

    def _message(self, requested: int) -> str:
        # The wording CUDA's caching allocator uses (torch >= 2.1), so every reader of
        # CUDA's messages reads this one; "SIM" names the device that ran out.
        assert self.limit is not None
        free = max(self.limit - self._allocated, 0)
        return (
            f"SIM out of memory. Tried to allocate {_cuda_size(requested)}. GPU 0 has a total "
            f"capacity of {_cuda_size(self.limit)} of which {_cuda_size(free)} is free. "
            f"Including non-PyTorch memory, this process has {_cuda_size(self._allocated)} "
            f"memory in use. Of the allocated memory {_cuda_size(self._allocated)} is allocated "
            "by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If reserved but "
            "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF="
            "expandable_segments:True to avoid fragmentation."
        )


def _cuda_size(nbytes: int) -> str:
    """A size as CUDA's allocator prints it: ``"512 bytes"``, ``"20.00 MiB"``."""
    if nbytes < 1024:
        return f"{nbytes} bytes"
    value = float(nbytes)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.2f} {unit}"


LEDGER = Ledger()
