"""Host waits go through the floor's backend, once per source device; cpu and meta never wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchport import hardware

GIB = 1024**3


def test_synchronize_is_a_no_op_for_cpu_and_meta(fake_accelerator: Callable[..., Any]) -> None:
    backend = fake_accelerator([GIB])
    hardware.synchronize(torch.device("cpu"))
    hardware.synchronize(torch.device("meta"))
    assert backend.synchronized == []
    hardware.synchronize(torch.device("cuda", 0))
    assert backend.synchronized == [torch.device("cuda", 0)]


def test_copies_to_the_cpu_wait_once_per_source(fake_accelerator: Callable[..., Any]) -> None:
    backend = fake_accelerator([GIB, GIB])
    sources = [torch.device("cuda", 0)] * 3 + [torch.device("cuda", 1), torch.device("cpu")]
    hardware.wait_for_copies(sources, torch.device("cpu"))
    assert sorted(map(str, backend.synchronized)) == ["cuda:0", "cuda:1"]


def test_streams_and_events_come_from_the_backend(fake_accelerator: Callable[..., Any]) -> None:
    backend = fake_accelerator([GIB])
    device = torch.device("cuda", 0)
    stream = hardware.new_stream(device)
    assert backend.streams == [stream]
    with hardware.use_stream(stream):
        assert hardware.current_stream(device) is stream
    assert hardware.current_stream(device) is backend.consumer
    event = hardware.new_event()
    event.record(stream)
    assert event.recorded_on is stream
    with hardware.use_stream(None):
        assert not backend.active
