"""Page-locked buffers: what is registered with the driver is exactly the buffer's own storage.

``is_pinned()`` asks the driver about a tensor's *storage* start, not its data
pointer, so a buffer that is a view into a larger allocation reads as unpinned
(and torch then treats it as pageable) even though its pages are locked: the
first GPU run found exactly that. These tests fake the CUDA runtime's
``cudaHostRegister`` on the CPU and hold the buffer to the invariant: the
registered range starts at the storage's first byte, is whole pages, covers the
buffer, and is given back exactly once.
"""

from __future__ import annotations

import mmap
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.hardware import PinnedBuffer, _pinned


class _Runtime:
    """``cudaHostRegister``/``cudaHostUnregister`` that record their calls."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.registered: list[tuple[int, int, int]] = []
        self.unregistered: list[int] = []

    def cudaHostRegister(self, ptr: int, size: int, flags: int) -> int:
        self.registered.append((ptr, size, flags))
        return 1 if self.refuse else 0

    def cudaHostUnregister(self, ptr: int) -> int:
        self.unregistered.append(ptr)
        return 0


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> _Runtime:
    fake = _Runtime()
    monkeypatch.setattr(_pinned, "_last_error_fn", lambda: lambda: 0)
    monkeypatch.setattr(_pinned, "_cudart", lambda: fake)
    return fake


@given(nbytes=st.integers(min_value=1, max_value=5 * mmap.PAGESIZE + 17))
def test_the_registered_range_is_the_buffers_own_storage_in_whole_pages(nbytes: int) -> None:
    fake = _Runtime()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_pinned, "_last_error_fn", lambda: lambda: 0)
        patch.setattr(_pinned, "_cudart", lambda: fake)
        buffer = PinnedBuffer(nbytes, pinned=True)
        ((ptr, size, flags),) = fake.registered
        storage = buffer.tensor.untyped_storage()
        assert buffer.tensor.numel() == buffer.nbytes == nbytes
        assert ptr == storage.data_ptr() == buffer.tensor.data_ptr()  # what is_pinned() asks
        assert ptr % mmap.PAGESIZE == 0 and size % mmap.PAGESIZE == 0
        assert nbytes <= size < nbytes + mmap.PAGESIZE  # covers it, no page more
        assert flags == 1  # portable: pinned for every CUDA context
        buffer.tensor.fill_(7)  # the pages are ordinary memory to the CPU
        buffer.unlock()
        buffer.unlock()
        assert fake.unregistered == [ptr]  # exactly once


def test_a_refused_registration_falls_back_to_torchs_pinned_memory(
    runtime: _Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime.refuse = True
    made: list[dict[str, Any]] = []
    real_empty = _pinned.torch.empty

    def empty(*args: Any, **kwargs: Any) -> Any:
        made.append(dict(kwargs))
        kwargs.pop("pin_memory", None)  # no driver here to pin with
        return real_empty(*args, **kwargs)

    monkeypatch.setattr(_pinned.torch, "empty", empty)
    buffer = PinnedBuffer(100, pinned=True)
    assert buffer.nbytes == 100 and made[-1].get("pin_memory") is True
    buffer.unlock()
    assert runtime.unregistered == []  # nothing was registered, nothing given back


def test_a_pageable_buffer_registers_nothing(runtime: _Runtime) -> None:
    buffer = PinnedBuffer(4096, pinned=False)
    assert buffer.nbytes == 4096 and runtime.registered == []
