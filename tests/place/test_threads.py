"""Threads moving batches of classes no one has seen, at the same moment.

Threaded inference servers and thread-based prefetchers move batches of a class
the walker meets for the first time in several threads at once. The invariant:
N threads started together (a barrier) give what one thread gives, and every
result passes the reachability oracle (``reachability.py``, which shares no code
with the walker): every tensor reachable from it is on the target, the input is
unchanged, sharing is kept. The classes are made fresh for each example
(``fresh.py``), so each run races on a first classification.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load

fresh = load("fresh")
reach = load("reachability")

META = torch.device("meta")
THREADS = 8


def signature(root: Any) -> list[tuple[tuple[str, ...], str, str]]:
    """What a result looks like, without identities: each path, its type and tensor device."""
    return [
        (path, type(node).__name__, node.device.type if isinstance(node, torch.Tensor) else "")
        for path, node, _ in reach.walk(root)
    ]


def _batches(classes: list[type], seed: int) -> list[Any]:
    """One batch per thread: every class, nested, so threads race on each of them."""
    return [
        {
            "items": [
                fresh.instance(cls, fresh.fresh_values(seed + k + i))
                for i, cls in enumerate(classes)
            ],
            "first": fresh.instance(classes[0], fresh.fresh_values(seed)),
        }
        for k in range(THREADS)
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fresh.specs, st.integers(0, 1000))
def test_threads_moving_new_classes_at_once_give_what_one_thread_gives(
    kinds: list[str], seed: int
) -> None:
    classes = [fresh.make_class(kind) for kind in kinds]
    batches = _batches(classes, seed)
    taken = [reach.snapshot(batch) for batch in batches]
    barrier = threading.Barrier(THREADS)

    def move(batch: Any) -> Any:
        barrier.wait()
        return tp.to_device(batch, META)

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(move, batches))
    alone = [tp.to_device(batch, META) for batch in batches]
    for batch, before, out, single in zip(batches, taken, results, alone, strict=True):
        reach.check_move(batch, before, out, META)
        assert signature(out) == signature(single)


def test_threads_met_a_class_first_under_a_skipped_key_and_elsewhere() -> None:
    # A node both under a skipped key and elsewhere stays as it is in both places,
    # in every thread, whichever registered its class first.
    for _ in range(10):
        cls = fresh.make_class("dataclass")
        barrier = threading.Barrier(THREADS)

        def move(seed: int, cls: type = cls, barrier: threading.Barrier = barrier) -> Any:
            kept = fresh.instance(cls, fresh.fresh_values(seed))
            moved = fresh.instance(cls, fresh.fresh_values(seed + 1))
            barrier.wait()
            out = tp.to_device({"ids": kept, "x": moved}, META, skip_keys="ids")
            return kept, out

        with ThreadPoolExecutor(THREADS) as pool:
            for kept, out in pool.map(move, range(THREADS)):
                assert out["ids"] is kept and not kept.x.is_meta
                assert out["x"].x.is_meta and out["x"].z[0].is_meta


class _WritesThrough:
    """An own ``.to`` (no ``__copy__``) writing the moved tensors into the dict its copy shares."""

    def __init__(self, table: dict[str, torch.Tensor]) -> None:
        self.table = table

    def to(self, device: Any) -> _WritesThrough:
        for k in list(self.table):
            self.table[k] = self.table[k].to(device)
        time.sleep(0.001)  # lets the other threads run while the input is changed
        return self


class _WritesThroughCopied(_WritesThrough):
    """The same with a ``__copy__`` of its own that shares the table (as PyG's ``Data``)."""

    def __copy__(self) -> _WritesThroughCopied:
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out


class _Clean(_WritesThrough):
    """An own ``.to`` that rebuilds its table: every move is right."""

    def to(self, device: Any) -> _Clean:
        return _Clean({k: v.to(device) for k, v in self.table.items()})


@settings(max_examples=15, deadline=None)
@given(
    st.sampled_from([_WritesThrough, _WritesThroughCopied, _Clean]),
    st.sampled_from(["batch", "inside", "loader"]),
    st.integers(1, 3),
)
def test_threads_moving_the_same_object_give_what_one_thread_gives(
    cls: type[_WritesThrough], how: str, size: int
) -> None:
    # Invariant: as one thread would: every move refused and the input intact at the end
    # (a .to that writes through), or every move right (one that does not): as the batch
    # (moved whole once its class is known: place/_whole.py), inside a dict (the walker),
    # through the loader. The oracle: the test's own record of the table, by identity.
    table = {"w": torch.ones(size), "b": torch.zeros(size)}
    obj = cls(table)
    held = list(table.items())
    barrier = threading.Barrier(THREADS)

    def move(_: int) -> Any:
        barrier.wait()
        try:
            if how == "batch":
                return tp.to_device(obj, META)
            if how == "inside":  # the walker's path
                return tp.to_device({"obj": obj, "n": 1}, META)["obj"]
            return next(iter(tp.DeviceLoader([obj], device="meta")))
        except tp.UnsupportedBatchError as exc:
            return exc

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(move, range(THREADS)))
    now = list(table.items())
    assert obj.table is table and len(now) == len(held)
    assert all(k is j and v is u for (k, v), (j, u) in zip(now, held, strict=True))
    for out in results:
        if cls is _Clean:
            assert isinstance(out, _Clean) and all(t.is_meta for t in out.table.values())
        else:
            assert isinstance(out, tp.UnsupportedBatchError), out
            assert "changed the input" in str(out)
