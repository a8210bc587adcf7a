"""What a ``DeviceLoader`` has done so far: batches, tensors, bytes, copies, staging."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FeedStats"]


@dataclass(frozen=True)
class FeedStats:
    """What a :class:`DeviceLoader` has done so far, summed over every epoch.

    Attributes:
        batches: batches handed to the caller.
        tensors: tensors in those batches (distinct ones; on the CPU pass-through a
            tensor repeated in a flat tuple, list or dict counts each time).
        bytes_moved: bytes copied from the host (or another device) to the device.
        copies: copy calls issued; a packed batch costs one.
        packed_batches: batches sent as one packed copy.
        pinned_bytes: pinned host staging memory held now.
        staging_buffers: staging buffers allocated so far (flat when they are reused).
    """

    batches: int = 0
    tensors: int = 0
    bytes_moved: int = 0
    copies: int = 0
    packed_batches: int = 0
    pinned_bytes: int = 0
    staging_buffers: int = 0


FeedStats.__module__ = "torchport"
