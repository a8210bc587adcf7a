"""An object's own ``.to`` must move what has to move: one that ignores the device is refused.

The invariant: after an own ``.to(target)`` every tensor reachable from the result is
on ``target`` or is one of the input's own tensors the ``.to`` left where it was, and,
when none of the input's tensors was on ``target``, the result holds at least one
tensor the ``.to`` moved. Otherwise ``UnsupportedBatchError`` names the class and the
input is as it was; nothing to move means no call. (An object partly on the target
already passes with nothing moved: a PyG ``Batch`` moved again has only its
bookkeeping on the CPU, and its right ``.to`` moves nothing; ``place/_moved_none.py``.)
Generated classes (a ``.to`` that returns ``self``, an unmoved copy, moves a subset,
makes tensors off the target, or is right) and inputs are checked against the spec of
each class by the test's own reachability walk (``reachability.py``), as the batch,
inside a dict (the walker) and through the loader.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load

_reach = load("reachability")

META = torch.device("meta")


class _Own:
    """``d``: tensors its ``.to`` is meant to move; ``books``: what it always leaves (bookkeeping).

    ``moves`` (the subset class only): the keys of ``d`` its ``.to`` moves.
    """

    calls = 0

    def __init__(self, d: dict[str, torch.Tensor], books: Any, moves: frozenset[str]) -> None:
        self.d = d
        self.books = books
        self.moves = tuple(sorted(moves))  # (a tuple of strings: read by the whole-object path)

    def __copy__(self) -> _Own:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.d = dict(self.d)
        return new

    def to(self, device: Any) -> Any:
        type(self).calls += 1
        return self._to(device)

    def _to(self, device: Any) -> Any:
        raise NotImplementedError


class ReturnsSelf(_Own):
    def _to(self, device: Any) -> Any:
        return self


class UnmovedCopy(_Own):
    def _to(self, device: Any) -> Any:
        return copy.copy(self)


class MovesSome(_Own):
    def _to(self, device: Any) -> Any:
        self.d = {k: v.to(device) if k in self.moves else v for k, v in self.d.items()}
        return self


class MakesElsewhere(_Own):
    def _to(self, device: Any) -> Any:
        self.d = {k: torch.zeros(v.shape) for k, v in self.d.items()}  # on the CPU, new
        return self


class Right(_Own):
    def _to(self, device: Any) -> Any:
        self.d = {k: v.to(device) for k, v in self.d.items()}
        return self


_CLASSES = (ReturnsSelf, UnmovedCopy, MovesSome, MakesElsewhere, Right)


def _expect_refused(obj: _Own) -> bool:
    """The spec of each class against the invariant (apart from torchport)."""
    held = [*obj.d.values(), *([obj.books] if isinstance(obj.books, torch.Tensor) else [])]
    none_there = not any(t.is_meta for t in held)
    off = [k for k, v in obj.d.items() if not v.is_meta]
    cls = type(obj)
    if cls is Right:
        return none_there and not off  # (only its books off the target: it moves nothing)
    if cls is MakesElsewhere:
        return bool(obj.d) or none_there  # a tensor off the target it made, or moved nothing
    if cls is MovesSome:
        return none_there and not set(off) & set(obj.moves)  # moved none
    return none_there  # returns self or an unmoved copy: it never moves anything


def _inputs() -> st.SearchStrategy[_Own]:
    keys = st.sampled_from(["a", "b", "c"])
    tensor = st.booleans().map(lambda meta: torch.ones(2, device=META if meta else "cpu"))
    return st.builds(
        lambda cls, d, books, moves: cls(d, books, moves),
        st.sampled_from(_CLASSES),
        st.dictionaries(keys, tensor, max_size=3),
        st.one_of(st.none(), tensor),
        st.frozensets(keys),
    )


_MOVES: dict[str, Callable[[Any], Any]] = {
    "whole": lambda o: tp.to_device(o, META),
    "in a dict": lambda o: tp.to_device({"o": o, "y": 1}, META)["o"],
    "loader": lambda o: next(iter(tp.DeviceLoader([o], device=META))),
}


@pytest.mark.parametrize("way", list(_MOVES))
@given(obj=_inputs())
def test_an_own_to_that_does_not_move_what_it_must_is_refused(way: str, obj: _Own) -> None:
    from torchport.place import whole_tensors

    with contextlib.suppress(tp.UnsupportedBatchError):
        tp.to_device([type(obj)({}, None, frozenset())], META)  # registers the class
    assert whole_tensors(obj) is not None  # as the batch it is moved whole, not walked
    move = _MOVES[way]
    own = {id(t) for _, t in _reach.tensors(obj)}
    taken = _reach.snapshot(obj)
    nothing_to_move = all(t.is_meta for _, t in _reach.tensors(obj))
    calls = type(obj).calls
    if nothing_to_move:
        assert move(obj) is obj and type(obj).calls == calls  # no call at all
        return
    if _expect_refused(obj):
        with pytest.raises(tp.UnsupportedBatchError, match=type(obj).__name__):
            move(obj)
        assert _reach.snapshot(obj) == taken, "the input changed"
        return
    out = move(obj)
    assert _reach.snapshot(obj) == taken, "the input changed"
    found = _reach.tensors(out)
    # Every tensor on the target, or one of the input's own left where it was ...
    assert all(t.is_meta or id(t) in own for _, t in found)
    # ... and what had to move (off the target, not its books) moved, as far as its .to moves.
    for key, t in obj.d.items():
        if not t.is_meta and (type(obj) is Right or (type(obj) is MovesSome and key in obj.moves)):
            assert out.d[key].is_meta


def test_threads_moving_one_object_whose_to_ignores_the_device_are_each_refused() -> None:
    obj = ReturnsSelf({"a": torch.ones(2)}, None, frozenset())
    taken = _reach.snapshot(obj)
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def run() -> None:
        barrier.wait()
        for move in _MOVES.values():
            try:
                move(obj)
                outcomes.append("moved")
            except tp.UnsupportedBatchError:
                outcomes.append("refused")

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes == ["refused"] * 12
    assert _reach.snapshot(obj) == taken


def test_real_pyg_moved_again_and_collated_elsewhere_keeps_its_books_on_the_host() -> None:
    pyg = pytest.importorskip("torch_geometric.data")
    graphs = [pyg.Data(x=torch.randn(3, 2), edge_index=torch.zeros(2, 2).long()) for _ in "ab"]
    on_meta = pyg.Batch.from_data_list([tp.to_device(g, META) for g in graphs])
    assert tp.to_device(on_meta, META).x.is_meta  # collated there: its books on the CPU
    moved = tp.to_device(pyg.Batch.from_data_list(graphs), META)
    # Moved again: only its _slice_dict/_inc_dict are off the target, and its .to moves none.
    again = tp.to_device(moved, META)
    assert again.x.is_meta and again._slice_dict["x"] is moved._slice_dict["x"]
    assert tp.to_device({"b": moved}, META)["b"]._slice_dict["x"] is moved._slice_dict["x"]

    class Ignores(pyg.Data):  # type: ignore[misc,name-defined]
        def to(self, *args: Any, **kwargs: Any) -> Any:
            return self

    with pytest.raises(tp.UnsupportedBatchError, match="moved none"):
        tp.to_device(Ignores(x=torch.ones(2)), META)
