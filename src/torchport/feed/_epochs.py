"""Telling a loader's samplers the epoch: what ``DeviceLoader.set_epoch`` forwards to.

A ``DistributedSampler`` shuffles by epoch only when told; a plain ``DataLoader``
has no ``set_epoch``, so the call goes to what it holds (its sampler, batch sampler,
the samplers those wrap, its dataset and the datasets it wraps), each told once.
A wrapper without a ``set_epoch`` of its own is looked into: a sampler through its
``sampler`` and ``batch_sampler`` (a batch sampler that shards another, as
accelerate's ``BatchSamplerShard`` does), a dataset through its ``dataset`` and
``datasets`` (torch's ``Subset``, ``ConcatDataset``, ``ChainDataset``,
``StackDataset``, and wrappers of one's own).
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

    torch's ``Subset`` (``.dataset``), ``ConcatDataset``/``ChainDataset``
    (``.datasets``, a list) and ``StackDataset`` (``.datasets``, a tuple or a dict)
    have no ``set_epoch`` of their own, nor has a wrapper of one's own holding its
    dataset as ``.dataset``; the epoch-aware dataset is inside (at any depth).
    """
    return _wrapped(dataset, ("dataset",), ("datasets",), through=False)


def _samplers(loader: object) -> list[object]:
    """The loader's sampler and batch sampler and every sampler they wrap.

    A batch sampler with a ``set_epoch`` of its own may still wrap a sampler that
    shuffles by epoch (``DistributedSampler``): both are told.
    """
    names = ("sampler", "batch_sampler")
    found = _wrapped(getattr(loader, "sampler", None), names, (), through=True)
    for more in _wrapped(getattr(loader, "batch_sampler", None), names, (), through=True):
        if not any(more is seen for seen in found):
            found.append(more)
    return found


def _wrapped(
    root: object, single: tuple[str, ...], several: tuple[str, ...], *, through: bool
) -> list[object]:
    """``root`` and what it holds under ``single`` (one) and ``several`` (a list, tuple or
    dict of them) names, followed through every node without a ``set_epoch`` of its own
    (``through``: through those with one too)."""
    found: list[object] = []
    pending = [root]
    while pending and len(found) < 1024:
        node = pending.pop()
        if node is None or any(node is seen for seen in found):
            continue
        found.append(node)
        if not through and callable(getattr(node, "set_epoch", None)):
            continue
        inner: list[object] = []
        for name in several:
            held = getattr(node, name, None)
            if isinstance(held, dict):
                held = list(held.values())
            if isinstance(held, list | tuple):
                inner.extend(held)
        inner.extend(getattr(node, name, None) for name in single)
        pending.extend(reversed(inner))
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
    for owner in (*_samplers(loader), *_datasets(getattr(loader, "dataset", None))):
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
