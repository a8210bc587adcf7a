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
