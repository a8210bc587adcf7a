"""Objects with their own ``.to``: what that ``.to`` gives on a shallow copy, and nothing more.

The invariant, against the real PyTorch Geometric and tensordict classes where they
are installed (skipped otherwise) and against stand-ins: ``to_device(obj, target)``
gives what ``copy.copy(obj).to(target)`` gives (the same tensors moved, the same
tensors left on the host: PyG's ``_slice_dict``/``_inc_dict``), leaves the input as it
was, shares non-tensor payload instead of copying it, and calls nothing when nothing
has to move. The oracle reads tensors by plain attribute access, apart from the walker.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy
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


def _pyg() -> Any:
    return pytest.importorskip("torch_geometric.data")


def _graphs(pyg: Any, n: int = 3) -> list[Any]:
    return [
        pyg.Data(
            x=torch.randn(4 + i, 3),
            edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
            y=torch.tensor([i]),
        )
        for i in range(n)
    ]


def _devices(store: Any) -> dict[str, str]:
    return {key: value.device.type for key, value in store.items() if torch.is_tensor(value)}


def test_a_pyg_batch_moves_as_its_own_to_moves_it_and_keeps_its_bookkeeping_on_the_host() -> None:
    pyg = _pyg()
    batch = pyg.Batch.from_data_list(_graphs(pyg))
    before = {key: value for key, value in batch._store.items()}
    expected = copy.copy(batch).to(META)
    out = tp.to_device(batch, META)
    assert type(out) is type(batch) and out is not batch
    assert _devices(out._store) == _devices(expected._store) == dict.fromkeys(before, "meta")
    for name in ("_slice_dict", "_inc_dict"):
        kept = getattr(out, name)
        assert {k: v.device.type for k, v in kept.items()} == dict.fromkeys(kept, "cpu")
        assert all(kept[k] is getattr(batch, name)[k] for k in kept)  # not copied either
    # The input is as it was, and the moved batch still splits into its graphs.
    assert all(batch._store[key] is value for key, value in before.items())
    assert out.get_example(1).x.shape == (5, 3) and out.get_example(1).x.is_meta
    assert out.num_graphs == 3


def test_pyg_data_and_hetero_data_share_payload_and_are_not_touched_when_already_there() -> None:
    pyg = _pyg()
    data = pyg.Data(x=torch.randn(4, 3))
    data.payload = numpy.zeros(1000)
    out = tp.to_device(data, META)
    assert out.x.is_meta and out.payload is data.payload and not data.x.is_meta
    hetero = pyg.HeteroData()
    hetero["paper"].x = torch.ones(2, 2)
    hetero["paper", "cites", "paper"].edge_index = torch.tensor([[0], [1]])
    moved = tp.to_device(hetero, META)
    assert moved["paper"].x.is_meta and moved["paper", "cites", "paper"].edge_index.is_meta
    assert not hetero["paper"].x.is_meta
    assert tp.to_device(data, "cpu") is data and tp.to_device(hetero, "cpu") is hetero


def test_tensordict_and_tensorclass_move_by_their_own_to() -> None:
    tensordict = pytest.importorskip("tensordict")
    td = tensordict.TensorDict(
        {"a": torch.ones(3), "nested": {"b": torch.zeros(3, 2)}}, batch_size=[3]
    )
    out = tp.to_device(td, META)
    assert out["a"].is_meta and out["nested", "b"].is_meta and not td["a"].is_meta
    assert tp.to_device(td, "cpu") is td

    @tensordict.tensorclass
    class Frames:
        pixels: torch.Tensor
        name: str

    frames = Frames(pixels=torch.ones(2, 4), name="clip", batch_size=[2])
    moved = tp.to_device({"frames": frames, "step": 3}, META)["frames"]
    assert moved.pixels.is_meta and moved.name == "clip" and not frames.pixels.is_meta


class Counting:
    """A ``.to`` that counts its calls (on the class: a copy's calls count too)."""

    calls = 0

    def __init__(self, weight: torch.Tensor, payload: Any) -> None:
        self.weight = weight
        self.payload = payload

    def to(self, device: Any) -> Counting:
        type(self).calls += 1
        self.weight = self.weight.to(device)
        return self


def test_nothing_to_move_means_no_call_and_the_same_object() -> None:
    Counting.calls = 0
    obj = Counting(torch.ones(2), numpy.ones(4))
    assert tp.to_device([obj], "cpu")[0] is obj and Counting.calls == 0
    moved = tp.to_device({"obj": obj}, META)["obj"]
    assert Counting.calls == 1 and moved.weight.is_meta and moved.payload is obj.payload
    assert tp.to_device(moved, META) is moved and Counting.calls == 1
    assert not obj.weight.is_meta


def test_a_tensor_shared_with_the_rest_of_the_batch_stays_one_tensor() -> None:
    pyg = _pyg()
    data = pyg.Data(x=torch.randn(4, 3))
    out = tp.to_device({"graph": data, "x": data.x}, META)
    assert out["graph"].x is out["x"] and out["x"].is_meta and not data.x.is_meta


def test_the_loader_hands_over_pyg_batches_with_their_bookkeeping_on_the_host() -> None:
    pyg = _pyg()
    batches = [pyg.Batch.from_data_list(_graphs(pyg)) for _ in range(2)]
    for batch, out in zip(batches, tp.DeviceLoader(batches, device="meta"), strict=True):
        assert out.x.is_meta and out.batch.is_meta and not batch.x.is_meta
        assert not out._slice_dict["x"].is_meta and out.get_example(0).x.is_meta


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
    alone = tp.to_device(holder, META)
    listed = tp.to_device([holder], META)[0]
    assert snapshot(holder) == taken, "to_device changed its input"
    repeated = len({id(t) for _, t in tensors(holder)}) != len(tensors(holder))
    nested = isinstance(holder.inner, Holder) and isinstance(holder.inner.inner, Holder)
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
