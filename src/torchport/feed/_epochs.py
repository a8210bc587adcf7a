"""Telling a loader's samplers the epoch: what ``DeviceLoader.set_epoch`` forwards to.

A ``DistributedSampler`` shuffles by epoch only when told; a plain ``DataLoader``
has no ``set_epoch``, so the call goes to what it holds (its sampler, batch sampler,
the batch sampler's sampler, its dataset), each told once.
"""

from __future__ import annotations

import torch

__all__ = ["set_epoch", "unreached"]


def unreached(loader: object) -> str | None:
    """Why ``set_epoch`` on ``loader``'s dataset cannot reach the copies its workers use; or None.

    A ``DataLoader`` with ``persistent_workers=True`` keeps the copy of the dataset
    each worker process received when it started (an ``IterableDataset`` or a
    map-style one alike: both are read in the workers): telling the dataset here the
    epoch changes this process's copy only, and the workers still see the first
    epoch. (The sampler runs in this process, so telling it is enough.) A loader
    that combines several (``flattened``, as :func:`set_epoch` follows) is looked
    into: the first of its parts that cannot be reached is named.
    """
    own = _unreached_here(loader)
    if own is not None:
        return own
    parts = (
        getattr(loader, "flattened", None)
        if not callable(getattr(loader, "set_epoch", None))
        else None
    )
    if isinstance(parts, list | tuple):
        for part in parts:
            if part is not loader:
                why = unreached(part)
                if why is not None:
                    return why
    return None


def _datasets(dataset: object) -> list[object]:
    """``dataset`` and, where it has no ``set_epoch``, the datasets it wraps.

    torch's ``Subset`` (``.dataset``) and ``ConcatDataset``/``ChainDataset``
    (``.datasets``) have no ``set_epoch`` of their own; the epoch-aware dataset is
    inside (at any depth).
    """
    found: list[object] = []
    pending = [dataset]
    while pending and len(found) < 1024:
        node = pending.pop()
        if node is None or any(node is seen for seen in found):
            continue
        found.append(node)
        if callable(getattr(node, "set_epoch", None)):
            continue
        if isinstance(node, torch.utils.data.Subset):
            pending.append(node.dataset)
        elif isinstance(node, torch.utils.data.ConcatDataset | torch.utils.data.ChainDataset):
            pending.extend(reversed(list(node.datasets)))
    return found


def _unreached_here(loader: object) -> str | None:
    """:func:`unreached` for ``loader`` itself, its parts left out."""
    dataset = next(
        (
            d
            for d in _datasets(getattr(loader, "dataset", None))
            if callable(getattr(d, "set_epoch", None))
        ),
        None,
    )
    if not (
        isinstance(loader, torch.utils.data.DataLoader)
        and dataset is not None
        and loader.persistent_workers
        and loader.num_workers > 0
        and callable(getattr(dataset, "set_epoch", None))
    ):
        return None
    kind = (
        "an IterableDataset"
        if isinstance(dataset, torch.utils.data.IterableDataset)
        else "a map-style dataset"
    )
    return (
        f"DeviceLoader.set_epoch: the wrapped DataLoader keeps {loader.num_workers} "
        f"persistent workers, each with its own copy of the {type(dataset).__name__} "
        f"({kind}), so set_epoch reaches this process's copy only and the "
        "workers keep reading it as in their first epoch; build the DataLoader with "
        "persistent_workers=False, or have the dataset read the epoch from a value "
        "shared with the workers (a torch.multiprocessing.Value it is given)"
    )


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
        *_datasets(getattr(loader, "dataset", None)),
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
