"""Running a copy step ahead of its consumer: the queue behind ``DeviceLoader``'s prefetch."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TypeVar

__all__ = ["prefetched"]

_B = TypeVar("_B")
_P = TypeVar("_P")


def prefetched(
    source: Iterable[_B], depth: int, issue: Callable[[_B], _P], hand_over: Callable[[_P], _B]
) -> Generator[_B, None, None]:
    """Runs ``issue`` ``depth`` batches ahead of ``hand_over``, keeping order and errors.

    Before each hand-over the queue is topped up to ``depth + 1`` issued batches, so
    while the caller works on one batch the next ``depth`` are in flight. An
    exception from ``source`` or from ``issue`` is raised, as the same object, once
    the batches issued before it have been handed over. Closing the generator
    early drops the queue; a new call starts from an empty one (``DeviceLoader``
    keeps the generator of a one-shot source open instead, so nothing is lost).
    """
    it: Iterator[_B] | None = iter(source)
    pending: deque[_P] = deque()
    error: Exception | None = None
    try:
        while True:
            while it is not None and error is None and len(pending) <= depth:
                try:
                    batch = next(it)
                except StopIteration:
                    it = None
                    break
                except Exception as exc:  # raised at its own position below
                    error = exc
                    break
                try:
                    pending.append(issue(batch))
                except Exception as exc:
                    error = exc
            if not pending:
                break
            yield hand_over(pending.popleft())
        if error is not None:
            raise error
    finally:
        # Copies of dropped batches finish on the side stream by themselves; their
        # staging slots are guarded by events, their device memory by stream order.
        pending.clear()
        error = None
