"""StagingPool: exact sizes, reuse, its bound, and the event guard on reuse."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from torchport import ConfigError
from torchport.feed import StagingPool
from torchport.hardware import default_pool, size_class


class FakeEvent:
    """Stands in for a CUDA event: reports whether the copy it marks has finished."""

    def __init__(self, done: bool) -> None:
        self.done = done
        self.waited = 0

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:
        self.waited += 1
        self.done = True


def _release(pool: StagingPool, slot: Any, event: FakeEvent | None) -> None:
    pool.release(slot, event)  # type: ignore[arg-type]


def test_acquire_allocates_its_size_class_and_reuses() -> None:
    pool = StagingPool(max_slots=2)
    slot = pool.acquire(1000, pinned=False)
    assert slot.capacity == size_class(1000) == 1024
    ptr = slot.buffer.data_ptr()
    _release(pool, slot, None)
    again = pool.acquire(1020, pinned=False)  # a slightly larger batch fits the same class
    assert again.buffer.data_ptr() == ptr
    assert pool.allocations == 1
    _release(pool, again, None)
    assert pool.nbytes == 1024
    assert pool.pinned_nbytes == 0


@given(st.integers(1, 1 << 40))
def test_size_classes_are_at_most_a_few_percent_over(nbytes: int) -> None:
    got = size_class(nbytes)
    assert nbytes <= got <= max(nbytes * 33 // 32 + 1, nbytes + 63)  # under 1/32 over
    assert size_class(got) == got  # a class is its own class


def test_a_growing_batch_repins_a_few_times_not_at_every_new_maximum() -> None:
    pool = StagingPool(max_slots=1)
    for nbytes in range(100_000, 200_000, 1000):  # 100 ever larger batches
        _release(pool, pool.acquire(nbytes, pinned=False), None)
    assert pool.allocations <= 5  # grows by at least a quarter each time


def test_an_interrupted_acquire_returns_its_lease() -> None:
    pool = StagingPool(max_slots=1)
    slot = pool.acquire(100, pinned=False)

    class Interrupting(FakeEvent):
        def synchronize(self) -> None:
            raise KeyboardInterrupt

    _release(pool, slot, Interrupting(done=False))  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        pool.acquire(100, pinned=False)  # waits on the busy slot and is interrupted
    # Nothing leaked: the slot is idle again and a later acquire gets it back.
    slot.event = None
    again = pool.acquire(100, pinned=False)
    assert again is slot
    assert pool.allocations == 1


def test_a_busy_slot_is_not_overwritten_while_a_ready_one_exists() -> None:
    pool = StagingPool(max_slots=2)
    a, b = pool.acquire(100, pinned=False), pool.acquire(100, pinned=False)
    busy, done = FakeEvent(done=False), FakeEvent(done=True)
    _release(pool, a, busy)
    _release(pool, b, done)
    got = pool.acquire(100, pinned=False)
    assert got is b
    assert busy.waited == 0


def test_reuse_waits_for_the_copy_still_reading_the_slot() -> None:
    pool = StagingPool(max_slots=1)
    slot = pool.acquire(100, pinned=False)
    busy = FakeEvent(done=False)
    _release(pool, slot, busy)
    got = pool.acquire(50, pinned=False)
    assert got is slot
    assert busy.waited == 1  # the host waited before handing the buffer out again
    assert got.event is None


def test_a_busy_pool_below_its_bound_allocates_instead_of_waiting() -> None:
    pool = StagingPool(max_slots=2)
    slot = pool.acquire(100, pinned=False)
    busy = FakeEvent(done=False)
    _release(pool, slot, busy)
    other = pool.acquire(100, pinned=False)
    assert other is not slot
    assert busy.waited == 0
    assert pool.allocations == 2


def test_growing_replaces_the_oldest_slot_and_keeps_the_bound() -> None:
    pool = StagingPool(max_slots=2)
    a, b = pool.acquire(10, pinned=False), pool.acquire(20, pinned=False)
    _release(pool, a, None)
    _release(pool, b, None)
    big = pool.acquire(500, pinned=False)
    _release(pool, big, None)
    assert pool.nbytes == 64 + 64 + 512  # 10 parked until trim(), 20 and 500 kept
    pool.trim()
    assert pool.nbytes == 64 + 512


def test_more_concurrent_leases_than_slots_settle_back_to_the_bound() -> None:
    pool = StagingPool(max_slots=2)
    slots = [pool.acquire(64, pinned=False) for _ in range(3)]
    for s in slots:
        _release(pool, s, None)
    assert pool.nbytes == 3 * 64  # the third is parked until trim()
    pool.trim()
    assert pool.nbytes == 2 * 64
    pool.clear()
    assert pool.nbytes == 0


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_max_slots_is_validated(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_slots"):
        StagingPool(max_slots=bad)  # type: ignore[arg-type]


def test_default_pool_is_one_per_process() -> None:
    assert default_pool() is default_pool()
    assert "StagingPool(max_slots=2" in repr(default_pool())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_pinned_slots_are_page_locked_at_the_exact_size() -> None:
    pool = StagingPool(max_slots=1)
    asked = 3 * 1024 * 1024 + 7
    slot = pool.acquire(asked, pinned=True)
    assert slot.buffer.is_pinned()
    # the size class (within 1/64 of the next power of two), not torch's power of two
    assert slot.capacity == size_class(asked) == asked - 7 + 64 * 1024 < 4 * 1024 * 1024
    pool.release(slot, None)
    assert pool.pinned_nbytes == size_class(asked)
    pool.clear()


def test_a_retired_slot_still_being_read_is_held_until_its_copy_ends() -> None:
    pool = StagingPool(max_slots=1)
    small = pool.acquire(10, pinned=False)
    busy = FakeEvent(done=False)
    _release(pool, small, busy)
    big = pool.acquire(100, pinned=False)  # retires `small` without waiting for it
    assert busy.waited == 0
    _release(pool, big, None)
    assert pool.nbytes == 64 + 128  # the busy one is still held
    busy.done = True
    _release(pool, pool.acquire(100, pinned=False), None)  # the next lease sweeps it
    assert pool.nbytes == 128
