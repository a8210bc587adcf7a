"""A batch that is one object with its own ``.to``, moved whole (``place/_whole.py``).

The first move of a class registers it with the walker; from then on a batch that is
one such object is moved without the walker's flatten and rebuild. The oracle reads
tensors apart from the code under test (``reachability.py``) and compares that move
with the walker's (the same object inside a list) and with ``copy.copy(obj).to(...)``,
on generated objects; a ``.to`` that makes a tensor on the host, writes into the
input, or returns another type is handled as the walker handles it.
"""

from __future__ import annotations

import copy
import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load

_reach = load("reachability")
Path = _reach.Path
snapshot = _reach.snapshot
tensors = _reach.tensors

META = torch.device("meta")


class Holder:
    """An object with its own ``.to`` and ``__copy__``, as PyG's ``Data`` has them.

    Its ``.to`` moves ``store`` (in place, on the object it is called on) and leaves
    ``books`` where it is, as PyG leaves ``_slice_dict``; ``__copy__`` copies what
    ``.to`` replaces. ``inner`` may hold another one (a storage inside a ``Data``).
    """

    def __init__(self, store: dict[str, Any], books: Any, inner: Any = None) -> None:
        self.store = store
        self.books = books
        self.inner = inner

    def __copy__(self) -> Holder:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.store = dict(self.store)
        if isinstance(self.inner, Holder):
            new.inner = copy.copy(self.inner)
        return new

    def to(self, device: Any) -> Holder:
        self.store = {k: v.to(device) for k, v in self.store.items()}
        if isinstance(self.inner, Holder):
            self.inner = self.inner.to(device)
        return self


def _tensor(seed: int) -> torch.Tensor:
    return torch.arange(seed % 5 + 1, dtype=torch.float32) + seed


_BOOKS = st.recursive(
    st.one_of(st.integers(0, 50).map(_tensor), st.integers(), st.none(), st.text(max_size=3)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=2), inner, max_size=3),
    ),
    max_leaves=6,
)


@st.composite
def _holders(draw: st.DrawFn, depth: int = 0) -> Holder:
    store = {f"k{i}": _tensor(draw(st.integers(0, 50))) for i in range(draw(st.integers(0, 3)))}
    inner = draw(_holders(depth + 1)) if depth < 2 and draw(st.booleans()) else draw(_BOOKS)
    return Holder(store, draw(_BOOKS), inner)


def _picture(root: Any, source: Any) -> list[tuple[Path, str, bool]]:
    """Each reachable tensor's path, device, and whether it is the input's own object."""
    own = {id(t) for _, t in tensors(source)}
    return [(path, t.device.type, id(t) in own) for path, t in tensors(root)]


@settings(max_examples=60, deadline=None)
@given(holder=_holders())
def test_a_batch_that_is_one_object_moves_as_its_own_to_on_a_shallow_copy(holder: Holder) -> None:
    # The first move of a class registers it with the walker; from then on a batch that
    # is one such object is moved whole (place/_whole.py), one inside a list by the walker.
    tp.to_device(Holder({"w": torch.ones(1)}, None), META)
    taken = snapshot(holder)
    repeated = len({id(t) for _, t in tensors(holder)}) != len(tensors(holder))
    nested = isinstance(holder.inner, Holder) and isinstance(holder.inner.inner, Holder)
    stores = [holder.store, *([holder.inner.store] if isinstance(holder.inner, Holder) else [])]
    held = [t for _, t in tensors(holder)]
    none_there = held and not any(t.is_meta for t in held)
    if not repeated and not nested and none_there and not any(stores):
        # Its .to moves nothing (only books), and nothing is there yet: refused.
        for move in (lambda h: tp.to_device(h, META), lambda h: tp.to_device([h], META)):
            with pytest.raises(tp.UnsupportedBatchError, match="moved none"):
                move(holder)
        assert snapshot(holder) == taken, "a refused move changed its input"
        return
    alone = tp.to_device(holder, META)
    listed = tp.to_device([holder], META)[0]
    assert snapshot(holder) == taken, "to_device changed its input"
    picture = _picture(alone, holder)
    assert picture == _picture(listed, holder)
    if not repeated and not nested:
        # The documented exceptions: one tensor held twice (the walker copies it once,
        # the .to twice) and objects nested past a storage's depth (an in-place .to would
        # change the input's), where the object is deep-copied and all of it moves.
        assert picture == _picture(copy.copy(holder).to(META), holder)
    if all(t.is_meta for _, t in tensors(holder)) or not tensors(holder):
        assert alone is holder


class HostMaker(Holder):
    """A ``.to`` that makes a new tensor on the host: refused, whichever way it is moved."""

    def to(self, device: Any) -> HostMaker:
        super().to(device)
        self.books = torch.zeros(2)
        return self


class SharedWriter:
    """No ``__copy__``, and a ``.to`` that writes through the list a shallow copy shares."""

    def __init__(self, items: list[torch.Tensor]) -> None:
        self.items = items

    def to(self, device: Any) -> SharedWriter:
        self.items[:] = [t.to(device) for t in self.items]
        return self


@pytest.mark.parametrize(
    "make", [lambda: HostMaker({"w": torch.ones(2)}, None), lambda: SharedWriter([torch.ones(2)])]
)
def test_a_to_that_makes_host_tensors_or_writes_into_the_input_is_refused_both_ways(
    make: Callable[[], Any],
) -> None:
    for _ in range(2):  # the first call registers the class; the second is moved whole
        obj = make()
        kept = list(tensors(obj))
        with pytest.raises(tp.UnsupportedBatchError, match="cannot rebuild batch"):
            tp.to_device(obj, META)
        if isinstance(obj, SharedWriter):
            continue  # its .to wrote into the input before the check could see it
        assert [t for _, t in tensors(obj)] == [t for _, t in kept]


class Other:
    """What a ``.to`` may return: an object of another type, holding the moved tensor."""

    def __init__(self, weight: torch.Tensor) -> None:
        self.weight = weight


class Converts(Holder):
    """A ``.to`` that returns an object of another class (a plain class made here)."""

    def to(self, device: Any) -> Any:
        return Other(self.store["w"].to(device))


def test_a_to_that_returns_another_type_is_checked_by_the_walker() -> None:
    for _ in range(2):  # the second move takes the whole-object path
        out = tp.to_device(Converts({"w": torch.ones(2)}, None), META)
        assert type(out) is Other and out.weight.is_meta


def _cycle(make: Callable[[list[Any]], Any]) -> Any:
    looped: list[Any] = [torch.ones(1), 3]
    looped.append(make(looped))
    return looped


@pytest.mark.parametrize(
    "books",
    [
        lambda: _cycle(lambda x: x),  # a list that holds itself
        lambda: {"a": _cycle(lambda x: x)},
        lambda: (_cycle(lambda x: (x,)),),  # through a tuple
        lambda: _cycle(lambda x: {"back": x}),  # through a dict
    ],
)
def test_a_cycle_inside_the_object_is_refused_as_the_walker_refuses_it(
    books: Callable[[], Any],
) -> None:
    # The whole-object loop must notice the container it has opened before (else it
    # would loop for ever) and leave the batch to the walker, which names the cycle.
    tp.to_device(Holder({"w": torch.ones(1)}, None), META)  # registers the class
    holder = Holder({"w": torch.ones(2)}, books())
    for move in (lambda: tp.to_device(holder, META), lambda: tp.to_device([holder], META)):
        with pytest.raises(tp.UnsupportedBatchError, match="contains itself"):
            move()


def test_a_list_held_twice_inside_the_object_comes_back_as_the_walker_gives_it() -> None:
    tp.to_device(Holder({"w": torch.ones(1)}, None), META)
    twice = [1, torch.ones(1)]
    holder = Holder({"w": torch.ones(2)}, {"a": twice, "b": twice})
    alone = tp.to_device(holder, META)
    listed = tp.to_device([holder], META)[0]
    assert _picture(alone, holder) == _picture(listed, holder)
    assert (alone.books["a"] is alone.books["b"]) == (listed.books["a"] is listed.books["b"])


def _sharing(root: Any) -> list[tuple[int, int]]:
    """Which of the tensors reachable from ``root`` (by path order) are one object."""
    found = [t for _, t in tensors(root)]
    return [(i, j) for i in range(len(found)) for j in range(i) if found[i] is found[j]]


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(1, 3),
    twice=st.sampled_from(["nothing", "a tensor", "the store"]),
    nested=st.booleans(),
)
def test_a_later_move_shaped_as_an_earlier_one_is_read_again_where_it_shares(
    size: int, twice: str, nested: bool
) -> None:
    # The loop remembers where the last input of a class held its nodes and tensors
    # (place/_whole.py's plans); an input of the same shape that holds a tensor or a
    # dict twice must still come back as the walker gives it (one tensor, one dict).
    def make(shared: str) -> Holder:
        store = {f"k{i}": _tensor(i) for i in range(size)}
        books: Any = {f"b{i}": _tensor(10 + i) for i in range(size)}
        if shared == "a tensor":
            books["b0"] = store["k0"]
        elif shared == "the store":
            books = store
        inner = Holder({"w": _tensor(20)}, None) if nested else None
        return Holder(store, books, inner)

    tp.to_device(make("nothing"), META)  # the first: read in full, its plan kept
    tp.to_device(make("nothing"), META)
    holder = make(twice)
    taken = snapshot(holder)
    alone = tp.to_device(holder, META)
    listed = tp.to_device([holder], META)[0]
    assert snapshot(holder) == taken, "to_device changed its input"
    assert _picture(alone, holder) == _picture(listed, holder)
    assert _sharing(alone) == _sharing(listed)
    assert (alone.books is alone.store) == (listed.books is listed.store)


class LateHostMaker(Holder):
    """From its ``late``-th call on, a ``.to`` that gives the copy new ``books`` on the host.

    Before, the result shares the input's ``books``; after, the same place holds a new
    dict of the same shape, whose tensors it made on the host.
    """

    calls = 0
    late = 0

    def to(self, device: Any) -> LateHostMaker:
        super().to(device)
        LateHostMaker.calls += 1
        if LateHostMaker.calls >= LateHostMaker.late and isinstance(self.books, dict):
            self.books = {key: torch.zeros(1) for key in self.books}
        return self


@settings(max_examples=20, deadline=None)
@given(late=st.integers(2, 4), size=st.integers(1, 3))
def test_a_result_shaped_as_an_earlier_one_is_read_where_it_no_longer_shares(
    late: int, size: int
) -> None:
    # What the results of a class held is remembered (place/_whole.py's result plans),
    # the input's nodes they shared skipped; a later result holding a new node where
    # an earlier one shared the input's must be read there: its host tensors refused.
    LateHostMaker.calls, LateHostMaker.late = 0, late
    for call in range(1, late + 2):
        holder = LateHostMaker({"w": torch.ones(2)}, {f"b{i}": torch.ones(1) for i in range(size)})
        if call < late:
            assert tp.to_device(holder, META).store["w"].is_meta
            continue
        with pytest.raises(tp.UnsupportedBatchError, match="cannot rebuild batch"):
            tp.to_device(holder, META)
        assert all(not t.is_meta for _, t in tensors(holder)), "a refused move changed its input"


def test_a_key_of_a_class_made_at_run_time_is_not_kept_by_what_the_read_remembers() -> None:
    # The read remembers where the last input of a class held its nodes (its plan, the
    # types of its keys among them); a key of a class made per batch must not be kept.
    tp.to_device(Holder({"w": torch.ones(1)}, None), META)

    def batch() -> tuple[Holder, weakref.ref[type]]:
        key = type("Key", (), {})  # a class made at run time, as a per-batch Enum is
        return Holder({"w": torch.ones(2)}, {key(): torch.ones(1)}), weakref.ref(key)

    holder, alive = batch()
    for _ in range(2):
        assert tp.to_device(holder, META).store["w"].is_meta
    del holder
    gc.collect()
    assert alive() is None, "a class made at run time was kept after its batch was dropped"
