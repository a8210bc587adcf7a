"""Telling a loader's samplers the epoch: what ``DeviceLoader.set_epoch`` forwards to.

A ``DistributedSampler`` shuffles by epoch only when told; a plain ``DataLoader``
has no ``set_epoch``, so the call goes to what it holds (its sampler, batch sampler,
the batch sampler's sampler, its dataset), each told once.
"""

from __future__ import annotations

__all__ = ["set_epoch"]


def set_epoch(loader: object, epoch: int, called: set[int]) -> None:
    """``DeviceLoader.set_epoch`` for one loader; ``called`` holds the owners already told."""
    own = getattr(loader, "set_epoch", None)
    if callable(own):
        if id(loader) not in called:
            called.add(id(loader))
            own(epoch)
        return
    batch_sampler = getattr(loader, "batch_sampler", None)
    for owner in (
        getattr(loader, "sampler", None),
        batch_sampler,
        getattr(batch_sampler, "sampler", None),
        getattr(loader, "dataset", None),
    ):
        method = getattr(owner, "set_epoch", None) if owner is not None else None
        if callable(method) and id(owner) not in called:
            called.add(id(owner))
            method(epoch)
    # Lightning's CombinedLoader holds several loaders and tells none of them itself.
    parts = getattr(loader, "flattened", None)
    if isinstance(parts, list | tuple):
        for part in parts:
            if part is not loader:
                set_epoch(part, epoch, called)
