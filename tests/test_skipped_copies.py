"""The floor's notice board for copies a mover skipped: listeners come and go, news reaches them."""

from __future__ import annotations

from typing import Any

from torchport import _skipped_copies


def test_listeners_hear_each_report_until_they_leave() -> None:
    heard: list[tuple[list[Any], Any, str]] = []

    def listener(tensors: Any, device: Any, *, by: str) -> None:
        heard.append((list(tensors), device, by))

    assert not _skipped_copies.listeners
    _skipped_copies.listen(listener)
    _skipped_copies.listen(listener)  # added once
    try:
        _skipped_copies.tell([1, 2], "cpu", by="a mover")
        assert heard == [([1, 2], "cpu", "a mover")]
    finally:
        _skipped_copies.unlisten(listener)
    _skipped_copies.tell([3], "cpu", by="a mover")
    assert len(heard) == 1 and not _skipped_copies.listeners
    _skipped_copies.unlisten(listener)  # not listening: nothing happens
