"""``DeviceLoader``: yields a loader's batches already on the device, copied ahead of use."""

from __future__ import annotations

import operator
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

import torch

from torchport import _skipped_copies, hardware
from torchport._device_types import CPU, CUDA
from torchport.errors import ConfigError, UnsupportedBatchError
from torchport.feed._epochs import set_epoch, unreached
from torchport.feed._in_flight import (
    InFlight,
    Whole,
    check_unchanged,
    read_later,
    side_stream_safe,
)
from torchport.feed._prefetch import prefetched
from torchport.feed._stats import FeedStats
from torchport.hardware import StagingPool
from torchport.place import (
    COPY_FAILURES,
    call_own_to,
    check_hidden,
    flatten_batch,
    move_whole,
    named_copy_failure,
    pick_device,
    resolve_device,
    settled,
    whole_tensors,
)

__all__ = ["DeviceLoader"]

_T = TypeVar("_T")
_ONLY_TENSOR = frozenset({torch.Tensor})
_IS_CPU = operator.attrgetter("is_cpu")


def _to(device: torch.device) -> Callable[[Any], Any]:
    """Calls an object's own ``.to(device)`` (blocking, on the caller's stream).

    A ``.to`` that returns ``None`` moved the object in place: the object is the result.
    """

    def call(obj: Any) -> Any:
        return call_own_to(obj, device, False, None)

    return call


class DeviceLoader(Generic[_T]):
    """Wraps any iterable of batches and yields each batch already on ``device``.

    Batches come out in the wrapped loader's order, each exactly once, moved as
    :func:`torchport.to_device` moves a batch: every tensor reachable from it
    (containers, attributes, fields) is on ``device``, the loader's own batches
    are left as they were, shared tensors stay shared, and what cannot be moved
    faithfully raises ``UnsupportedBatchError`` naming its path. A batch whose
    tensors are all on ``device`` already is yielded as it is.

    Passes and leaving early, the same on every device: each ``iter()`` over a
    re-iterable loader (a ``DataLoader``, a list) is a fresh pass; leaving a loop
    early abandons the rest of that pass, including batches already fetched ahead.
    A one-shot source (a generator or other iterator) loses nothing: the next
    ``iter()`` continues with the batch after the last one handed out, on CUDA too,
    where the batches copied ahead are kept for it (and hold their device memory
    and staging buffers until then). No threads are used.

    On CUDA, copies run on one side stream owned by the loader, issued ``depth``
    batches ahead of the one being handed over, from reused pinned staging buffers
    (so pinned memory held is about ``depth`` batches). When a batch is handed
    over, the caller's current stream waits on an event recorded after its copies,
    and ``record_stream`` marks each new tensor as used by that stream, so the
    caching allocator does not reuse its memory while work on it is queued.
    Sparse and nested tensors, tensor subclasses, tensors on other devices and
    objects with their own ``.to`` are moved at hand-over on the caller's stream
    (stream order protects them); a batch whose such parts changed since it was
    read ahead (a source that yields one object again and again, changing it) is
    refused with ``UnsupportedBatchError`` rather than handed over with a later
    batch's values. Batches of many small tensors are packed into
    one copy (``pack=None`` decides per batch by count and size, for CUDA only,
    see ``torchport.hardware.should_pack``; ``True``/``False`` force it). On the
    CPU the loader is a thin pass-through: batches already there are yielded as
    they are. On other devices (MPS, XPU, meta) each batch is moved
    with blocking copies when it is handed over.

    An exception raised by the wrapped loader reaches the caller unchanged, at the
    position where its batch would have been, after the batches fetched before it.

    Synchronization: on CUDA the host never waits for compute; it waits for a copy
    only when the staging buffer it needs is still being read by the copy issued
    ``depth`` batches earlier. Non-CUDA devices: the host waits for each batch's copy.

    Args:
        loader: any iterable of batches, e.g. a ``torch.utils.data.DataLoader``
            (give it ``pin_memory=True`` on CUDA to skip a host copy).
        device: where batches go; ``None`` means :func:`torchport.pick_device`. A
            bare ``"cuda"`` means the current CUDA device, as for ``to_device``;
            inside ``torchport.redirect(target)`` a CUDA device means ``target``.
        depth: batches copied ahead on CUDA (an int >= 1).
        pack: pack each batch into one copy; ``None`` decides per batch (CUDA only).

    Raises:
        ConfigError: ``depth`` or ``pack`` is not valid.
        DeviceError: ``device`` is malformed or not present.
    """

    def __init__(
        self,
        loader: Iterable[_T],
        device: str | torch.device | int | None = None,
        *,
        depth: int = 2,
        pack: bool | None = None,
    ) -> None:
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ConfigError(
                f"DeviceLoader got depth={depth!r}; expected an int >= 1 (the number of "
                "batches copied ahead); pass depth=2, or depth=1 to copy one batch ahead"
            )
        if pack not in (None, True, False):
            raise ConfigError(f"DeviceLoader got pack={pack!r}; pass True, False or None")
        if not isinstance(loader, Iterable):
            raise ConfigError(
                f"DeviceLoader needs an iterable of batches, got a {type(loader).__name__}; "
                "pass a DataLoader, a list of batches or a generator"
            )
        self._loader = loader
        self._device = (
            pick_device() if device is None else resolve_device(device, argument="device")
        )
        self._depth = depth
        self._pack = pack
        self._stream: torch.Stream | None = None
        # A one-shot source's prefetching pass, kept open across iter() calls.
        self._live: Iterator[_T] | None = None
        # Staging slots: `depth` of them, as that many batches are in flight on CUDA.
        # The CPU needs none (nothing crosses).
        self._pool = StagingPool(max_slots=depth) if self._device.type != CPU else None
        self._lock = threading.Lock()
        self._counts = [0, 0, 0, 0, 0]  # the fields of FeedStats, in order, minus pinned
        self._tallies: list[list[int]] = []  # [batches, tensors] of CPU passes running
        self._warned_epoch = False  # set_epoch's warning about persistent workers, once

    @property
    def device(self) -> torch.device:
        """The device batches are moved to."""
        return self._device

    @property
    def depth(self) -> int:
        """How many batches are copied ahead on CUDA."""
        return self._depth

    @property
    def loader(self) -> Iterable[_T]:
        """The wrapped loader."""
        return self._loader

    @property
    def side_stream(self) -> torch.Stream | None:
        """The stream copies run on; created at the first CUDA pass, then kept."""
        return self._stream

    @property
    def stats(self) -> FeedStats:
        """A snapshot of what this loader has moved so far."""
        with self._lock:
            batches, tensors, nbytes, copies, packed = self._counts
            for tally in self._tallies:
                batches += tally[0]
                tensors += tally[1]
        return FeedStats(
            batches=batches,
            tensors=tensors,
            bytes_moved=nbytes,
            copies=copies,
            packed_batches=packed,
            pinned_bytes=self._pool.pinned_nbytes if self._pool is not None else 0,
            staging_buffers=self._pool.allocations if self._pool is not None else 0,
        )

    def __len__(self) -> int:
        try:
            return len(self._loader)  # type: ignore[arg-type]
        except TypeError as exc:
            raise TypeError(
                f"len(DeviceLoader) needs a sized loader, but the wrapped "
                f"{type(self._loader).__name__} has no len(): {exc}"
            ) from exc

    @property
    def dataset(self) -> Any:
        """The wrapped loader's ``dataset``."""
        return self._passthrough("dataset")

    @property
    def sampler(self) -> Any:
        """The wrapped loader's ``sampler``."""
        return self._passthrough("sampler")

    @property
    def batch_sampler(self) -> Any:
        """The wrapped loader's ``batch_sampler``."""
        return self._passthrough("batch_sampler")

    def set_epoch(self, epoch: int) -> None:
        """Tells whatever orders the wrapped loader's batches that a new epoch starts.

        If the wrapped loader has a ``set_epoch`` of its own (another wrapper), only
        that is called: it knows its parts. Otherwise ``set_epoch(epoch)`` is called
        once on each of the loader's ``sampler``, ``batch_sampler``, the batch
        sampler's ``sampler`` and ``dataset`` that has one: a ``DistributedSampler``
        (found in ``sampler``, or in ``batch_sampler.sampler`` when a batch sampler
        wraps it), a batch sampler of your own, or an ``IterableDataset`` that
        shuffles by epoch (also inside torch's ``Subset``, ``ConcatDataset`` or
        ``ChainDataset``, which have no ``set_epoch`` of their own). Where none has
        one (a plain ``DataLoader``, whose ``RandomSampler`` draws a new order every
        epoch by itself; a list; a generator) this does nothing, as nothing depends
        on the epoch. A loader that
        combines several (Lightning's ``CombinedLoader``, which has no ``set_epoch``)
        is looked into: each of its ``flattened`` loaders is told as above.

        A ``DataLoader`` with ``persistent_workers=True`` over a dataset (iterable or
        map-style) that has a ``set_epoch`` keeps a copy of it in each worker, which
        this cannot reach: the first such call warns once (``UserWarning``) with
        what to do, also where that loader is one of a combined loader's parts.

        Raises:
            TypeError: ``epoch`` is not an int.
        """
        if isinstance(epoch, bool) or not isinstance(epoch, int):
            raise TypeError(f"set_epoch({epoch!r}): the epoch is an int, e.g. set_epoch(3)")
        set_epoch(self._loader, epoch, set())
        if not self._warned_epoch:
            why = unreached(self._loader)
            if why is not None:
                self._warned_epoch = True
                warnings.warn(why, UserWarning, stacklevel=2)

    def _passthrough(self, name: str) -> Any:
        try:
            return getattr(self._loader, name)
        except AttributeError:
            raise AttributeError(
                f"DeviceLoader.{name}: the wrapped {type(self._loader).__name__} has no "
                f"{name!r} attribute; reach it through the object you wrapped"
            ) from None

    def __repr__(self) -> str:
        return (
            f"DeviceLoader({type(self._loader).__name__}, device={str(self._device)!r}, "
            f"depth={self._depth}, pack={self._pack})"
        )

    def __iter__(self) -> Iterator[_T]:
        """Starts a pass over the wrapped loader (or resumes a one-shot source's).

        Synchronization: see the class docstring.
        """
        kind = self._device.type
        if kind == CPU:
            return self._iter_cpu()
        if kind != CUDA:
            return self._iter_blocking()
        if not isinstance(self._loader, Iterator):
            return self._iter_async()
        # A one-shot source: keep its pass open so batches fetched ahead survive a break.
        if self._live is None:
            self._live = self._iter_async()
        return self._live

    def _count(self, tensors: int, nbytes: int, copies: int, packed: bool) -> None:
        with self._lock:
            c = self._counts
            c[0] += 1
            c[1] += tensors
            if copies:
                c[2] += nbytes
                c[3] += copies
                c[4] += packed

    def _iter_cpu(self) -> Iterator[_T]:
        # The common batch (a tensor, or a tuple, list or dict of CPU tensors and
        # plain values such as ids and strings) is checked at C speed and yielded as
        # it is; anything else goes through the walker. Its counts go to a tally only
        # this pass writes (no lock per batch); `stats` adds the tallies of passes
        # still running.
        cpu = self._device
        only_tensor = _ONLY_TENSOR.issuperset
        is_cpu = _IS_CPU
        listeners = _skipped_copies.listeners  # changed in place, never rebound
        tally = [0, 0]  # batches, tensors
        with self._lock:
            self._tallies.append(tally)
        try:
            for batch in self._loader:
                cls = type(batch)
                items: Any = batch
                # A tuple or list of CPU tensors, decided here at C speed; the rest of
                # what needs nothing done (dicts, plain values, nesting) by settled().
                if (cls is tuple or cls is list) and only_tensor(map(type, items)):
                    found = len(items) if all(map(is_cpu, items)) else -1
                else:
                    found = settled(batch, cpu)
                if found >= 0:
                    tally[0] += 1
                    tally[1] += found
                    if listeners:  # an audit counts the copies a GPU run makes
                        passed = flatten_batch(batch).tensors
                        _skipped_copies.tell(passed, self._device, by="torchport.DeviceLoader")
                    yield batch
                else:
                    yield self._move_blocking(batch)
        finally:
            with self._lock:
                self._tallies.remove(tally)
                self._counts[0] += tally[0]
                self._counts[1] += tally[1]

    def _iter_blocking(self) -> Iterator[_T]:
        for batch in self._loader:
            yield self._move_blocking(batch)

    def _move_blocking(self, batch: _T) -> _T:
        """Moves one batch with blocking copies; the host waits for them.

        Raises:
            UnsupportedBatchError: The batch holds a tensor torch cannot copy to the
                loader's device; the message names its path.
        """
        try:
            inside = whole_tensors(batch)
            if inside is not None:  # one object with its own .to (PyG, TensorDict): moved whole
                self._count(len(inside.tensors), 0, 0, False)
                return cast(_T, move_whole(batch, inside, self._device, False))
            return self._copy_blocking(batch)
        except (*COPY_FAILURES, UnsupportedBatchError) as exc:
            # Also where an object's .to met it and the rebuild named only that object.
            failure = named_copy_failure(batch, self._device, exc)
            if failure is None:
                raise
            try:
                raise failure from failure.__cause__
            finally:
                del failure  # no cycle between this frame and the error it raises

    def _copy_blocking(self, batch: _T) -> _T:
        # (An object with its own .to is moved whole by _move_blocking, one frame less.)
        layout = flatten_batch(batch)
        tensors = layout.to_copy()  # not those an object's own .to moves
        device = self._device
        check_hidden(layout, device)
        movers = list(map(_to(device), layout.movers)) if layout.movers else None
        if _skipped_copies.listeners:  # an audit counts the copies a GPU run makes
            _skipped_copies.tell(
                [t for t in tensors if t.device == device], device, by="torchport.DeviceLoader"
            )
        plan = hardware.plan_copy(tensors, device, pack=self._pack, distinct=True)
        if plan.noop and movers is None and not layout.own:
            # Every tensor, those inside objects with a .to included, is already there.
            self._count(len(tensors), 0, 0, False)
            return batch
        done = plan.run(non_blocking=False, pool=self._pool)
        self._count(len(layout.tensors), done.nbytes, done.copies, done.packed and done.copies == 1)
        new = layout.merge(done.tensors)
        return cast(_T, layout.rebuild(new, movers, call_to=_to(device), target=device))

    def _iter_async(self) -> Iterator[_T]:
        device = self._device
        if self._stream is None:
            self._stream = hardware.new_stream(device)
        stream = self._stream
        pool = self._pool

        def prefetch() -> Iterator[_T]:
            try:
                yield from prefetched(
                    self._loader, self._depth, lambda b: self._issue(b, stream), self._hand_over
                )
            finally:
                self._live = None
                if pool is not None:
                    pool.trim()  # outside the loop: unpinning may synchronize

        return prefetch()

    def _issue(self, batch: _T, stream: torch.Stream) -> InFlight | Whole:
        """Queues one batch's host-to-device copies on the side stream; never waits for compute."""
        inside = whole_tensors(batch, lay=False)  # (its record taken at hand-over)
        if inside is not None:  # its own .to moves it at hand-over, on the caller's stream
            return Whole(batch, inside, read_later(batch, inside.tensors))
        layout = flatten_batch(batch)
        tensors = layout.tensors
        device = self._device
        check_hidden(layout, device)
        own = layout.own  # moved by their object's own .to, on the caller's stream
        side = [i for i, t in enumerate(tensors) if i not in own and side_stream_safe(t)]
        moved: list[torch.Tensor | None] = [
            t if i in own or t.device == device else None for i, t in enumerate(tensors)
        ]
        fresh: list[torch.Tensor] = []
        nbytes = copies = 0
        packed = False
        with hardware.use_stream(stream):
            if side:
                sources = [tensors[i] for i in side]
                plan = hardware.plan_copy(
                    sources, device, pack=self._pack, stage_pageable=True, distinct=True
                )
                done = plan.run(non_blocking=True, pool=self._pool)
                for i, t in zip(side, done.tensors, strict=True):
                    moved[i] = t
                fresh = done.fresh
                nbytes, copies, packed = done.nbytes, done.copies, done.packed
            event = hardware.new_event()
            event.record(stream)
        # Read again at hand-over: objects with their own .to (moved then) and what they
        # hold, tensors the side stream did not take. The batch is recorded whole then.
        late = [
            t
            for i, (t, done) in enumerate(zip(tensors, moved, strict=True))
            if done is None or i in own
        ]
        later = read_later(batch, late) if layout.movers or late else None
        return InFlight(layout, moved, fresh, event, nbytes, copies, packed and copies == 1, later)

    def _hand_over(self, item: InFlight | Whole) -> _T:
        """Makes the caller's stream wait for the batch's copies; the host does not wait."""
        device = self._device
        if item.later is not None:
            check_unchanged(item.later, self._depth)
        if isinstance(item, Whole):
            self._count(len(item.inside.tensors), 0, 0, False)
            return cast(_T, move_whole(item.batch, item.inside, device, False))
        consumer = hardware.current_stream(device)
        consumer.wait_event(item.event)
        for t in item.fresh:
            hardware.record_stream(t, consumer)
        tensors = item.layout.tensors
        # Tensors the side stream did not take, and objects with their own .to, are
        # moved here on the caller's stream: stream order then keeps them correct.
        new: list[torch.Tensor] = []
        nbytes = item.nbytes
        copies = item.copies
        for done, t in zip(item.moved, tensors, strict=True):
            if done is None:
                done = t.to(device)
                nbytes += t.numel() * t.element_size()
                copies += 1
            new.append(done)
        movers = list(map(_to(device), item.layout.movers)) if item.layout.movers else None
        self._count(len(tensors), nbytes, copies, item.packed)
        return cast(_T, item.layout.rebuild(new, movers, call_to=_to(device), target=device))


DeviceLoader.__module__ = "torchport"
