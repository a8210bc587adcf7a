"""A batch between its issue on the side stream and its hand-over (``DeviceLoader`` on CUDA).

The loader reads a batch up to ``depth`` batches ahead of its use: plain host tensors
are copied then, on the side stream (:func:`side_stream_safe`); objects with their own
``.to`` and the tensors the side stream does not take are moved at hand-over, from
what they hold then. What the loader saw at issue is kept (:class:`Later`) and the
hand-over refuses a batch that changed meanwhile (:func:`check_unchanged`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from torchport.errors import UnsupportedBatchError
from torchport.place import BatchLayout, Inside, Snapshot, snapshot, versions

__all__ = ["InFlight", "Later", "Whole", "check_unchanged", "read_later", "side_stream_safe"]


@dataclass(slots=True)
class InFlight:
    """A batch whose copies are issued on the side stream but not yet handed over."""

    layout: BatchLayout
    moved: list[torch.Tensor | None]  # None: moved on the consumer stream at hand-over
    fresh: list[torch.Tensor]  # allocated on the side stream; need record_stream
    event: torch.Event
    nbytes: int
    copies: int
    packed: bool
    later: Later | None  # what the hand-over reads again: objects with their own .to


@dataclass(slots=True)
class Whole:
    """A batch that is one object with its own ``.to``, moved whole at hand-over."""

    batch: Any
    inside: Inside
    later: Later


@dataclass(slots=True)
class Later:
    """What a batch read ahead of its hand-over held then, where the hand-over reads it again.

    Objects with their own ``.to`` (and tensors the side stream does not take) are
    moved at hand-over from what they hold then; the hand-over refuses the batch if
    that is no longer what the source yielded (see :func:`check_unchanged`).
    """

    seen: Snapshot  # every container and object reachable from them, by identity
    tensors: list[torch.Tensor]
    versions: list[int]


def read_later(roots: Any, tensors: list[torch.Tensor]) -> Later:
    """What ``roots`` hold now, and the versions of ``tensors``, to compare at hand-over."""
    return Later(snapshot(roots), tensors, versions(tensors))


def check_unchanged(later: Later, depth: int) -> None:
    """Refuse a batch changed between the loader reading it and handing it over.

    A source that yields one object again and again, changing it (``data.x = ...``,
    ``buffer.copy_(...)``), changes the batches read ahead before they are handed
    over: moving them then would hand over a later batch's values in their place.

    Raises:
        UnsupportedBatchError: What it holds, or a tensor's values, changed.
    """
    if later.seen.changed() or versions(later.tensors) != later.versions:
        raise UnsupportedBatchError(
            "a batch changed after DeviceLoader read it and before it was handed over: "
            f"the loader reads up to {depth + 1} batches ahead on CUDA, and an object "
            "with its own .to in it (or a tensor moved at hand-over) now holds other "
            "tensors or values, so the hand-over would give a later batch's values; "
            "the source yields one object again and again, changing it (or the program "
            "changed a batch it was not handed yet): have the source yield a new object "
            "per batch (copy.copy it before yielding)"
        )


def side_stream_safe(t: torch.Tensor) -> bool:
    """Whether ``t`` may be copied on the side stream: a plain dense host tensor.

    Its copy is then guarded by ``record_stream`` at hand-over. Sparse and nested
    tensors and subclasses (whose storage ``record_stream`` cannot always reach)
    are moved at hand-over on the caller's stream instead, where stream order
    protects them.
    """
    return type(t) is torch.Tensor and t.is_cpu and t.layout == torch.strided and not t.is_nested
