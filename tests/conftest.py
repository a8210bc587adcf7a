"""Shared test configuration: hypothesis profiles sized for a 2-core CI machine, and the
one fake accelerator (``fake_accelerator``) installed at the hardware floor."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, settings

from torchport.hardware import Backend, install

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


# --- one way to fake an accelerator: a Backend at the hardware floor -------------------

GIB = 1024**3


class FakeStream:
    """Stands in for a stream: records the events it was told to wait on."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.waited: list[Any] = []

    def wait_event(self, event: Any) -> None:
        self.waited.append(event)


class FakeEvent:
    """Stands in for an event: remembers the stream it was recorded on."""

    def __init__(self) -> None:
        self.recorded_on: FakeStream | None = None

    def record(self, stream: FakeStream) -> None:
        self.recorded_on = stream

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass


class FakeBackend(Backend):
    """An accelerator of type ``kind`` with one device per entry of ``free``.

    Answers the floor's questions (type, count, names, memory, current index);
    records synchronizations, streams made, stream switches, events and
    ``record_stream`` calls instead of making them. Copies are real torch copies,
    so code under test uses the meta device as its target; what needs a real
    accelerator is tested under ``@pytest.mark.gpu``.
    """

    def __init__(self, free: list[int | None], kind: str = "cuda", current: int = 0) -> None:
        self.free = free
        self.kind = kind
        self.current = current
        self.synchronized: list[torch.device] = []
        self.memory_reads = 0
        self.streams: list[FakeStream] = []
        self.consumer = FakeStream("consumer")
        self.active: list[FakeStream] = []
        self.recorded: list[tuple[int, FakeStream]] = []

    def accelerator(self) -> str | None:
        return self.kind

    def count(self, kind: str) -> int:
        return len(self.free) if kind == self.kind else 0

    def current_index(self, kind: str) -> int:
        return self.current

    def name(self, kind: str, index: int) -> str:
        return "NVIDIA H100" if kind == "cuda" else f"Fake {kind.upper()}"

    def memory(
        self, kind: str, index: int, *, allow_context: bool
    ) -> tuple[int | None, int | None]:
        assert kind == self.kind
        self.memory_reads += 1
        value = self.free[index]
        return (value, 80 * GIB) if value is not None else (None, None)

    def synchronize(self, device: torch.device, *, stream_only: bool) -> None:
        self.synchronized.append(device)

    def new_stream(self, device: torch.device) -> Any:
        self.streams.append(FakeStream("side"))
        return self.streams[-1]

    def current_stream(self, device: torch.device) -> Any:
        return self.active[-1] if self.active else self.consumer

    def new_event(self, *, timing: bool) -> Any:
        return FakeEvent()

    @contextlib.contextmanager
    def use_stream(self, stream: Any) -> Iterator[None]:  # type: ignore[override]
        self.active.append(stream)
        try:
            yield
        finally:
            self.active.pop()

    def record_stream(self, tensor: torch.Tensor, stream: Any) -> None:
        self.recorded.append((id(tensor), stream))


@pytest.fixture
def fake_accelerator() -> Iterator[Callable[..., FakeBackend]]:
    """Install a :class:`FakeBackend`: ``fake_accelerator([free bytes per device], kind=...)``.

    The one way tests stand in for an accelerator: at ``torchport.hardware``.
    """
    with contextlib.ExitStack() as stack:

        def install_fake(
            free: list[int | None], kind: str = "cuda", current: int = 0
        ) -> FakeBackend:
            stack.close()
            return stack.enter_context(install(FakeBackend(free, kind, current)))

        yield install_fake
