"""A class's plan written out as straight-line code (``place/_whole_code.py``).

The first full read of an own-``.to`` object keeps a plan for its class; the plan's
``read`` (the input read), ``relay`` (the record laid again after the call) and the
result plan's ``walk`` are generated once per plan. Each must give what the generic
code gives, or None where the layout is not the plan's. The oracle reads the object
apart from the code under test (``reachability.py``: every tensor reachable, by its
path), on generated layouts: a plan made from one object, read on another of any
layout.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load
from torchport.place import _untouched, _whole, _whole_plans

_reach = load("reachability")

META = torch.device("meta")


class Box:
    """An object with its own ``.to`` and ``__copy__`` (as PyG's ``Data``): its ``.to``
    moves ``store`` on the copy and leaves ``books`` (shared with the input) as it is."""

    def __init__(self, store: dict[str, Any], books: Any, inner: Any) -> None:
        self.store = store
        self.books = books
        self.inner = inner

    def __copy__(self) -> Box:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.store = dict(self.store)
        if isinstance(self.inner, Inner):
            new.inner = copy.copy(self.inner)
        return new

    def to(self, device: Any) -> Box:
        self.store = {k: v.to(device) for k, v in self.store.items()}
        if isinstance(self.inner, Inner):
            self.inner = self.inner.to(device)
        return self


class Inner:
    """A storage held by a ``Box`` (walked through its ``__dict__``, with its own ``.to``)."""

    def __init__(self, mapping: dict[str, Any], extra: Any) -> None:
        self.mapping = mapping
        self.extra = extra

    def __copy__(self) -> Inner:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.mapping = dict(self.mapping)
        return new

    def to(self, device: Any) -> Inner:
        self.mapping = {k: v.to(device) for k, v in self.mapping.items()}
        return self


_SEED = iter(range(10**9))


def _tensor(_: Any = None) -> torch.Tensor:
    return torch.full((2,), float(next(_SEED)))


_LEAF = st.one_of(st.builds(_tensor), st.integers(0, 3), st.none(), st.just("s"))
_BOOKS = st.one_of(
    _LEAF,
    st.lists(_LEAF, max_size=3),
    st.dictionaries(st.sampled_from("abc"), _LEAF, max_size=3),
    st.dictionaries(st.sampled_from("ab"), st.lists(_LEAF, max_size=2), max_size=2),
)


@st.composite
def _boxes(draw: st.DrawFn) -> Box:
    store = {k: _tensor() for k in draw(st.lists(st.sampled_from("xyz"), unique=True, max_size=3))}
    inner: Any = draw(_LEAF)
    if draw(st.booleans()):
        mapping = {k: _tensor() for k in draw(st.lists(st.sampled_from("pq"), unique=True))}
        inner = Inner(mapping, draw(_BOOKS))
    return Box(store, draw(_BOOKS), inner)


def _planned(box: Box) -> _whole_plans.Plan | None:
    """The plan ``box``'s full read keeps (None where the read keeps none)."""
    _whole_plans.PLANS.pop(Box, None)
    _whole._read(box)  # the loop: keeps the plan of what it read
    return _whole_plans.PLANS.get(Box)


def _ids(items: Any) -> list[int]:
    return sorted(map(id, items))


@settings(max_examples=150, deadline=None)
@given(first=_boxes(), second=_boxes(), same=st.booleans())
def test_the_written_out_read_gives_the_generic_read_or_none_on_any_layout(
    first: Box, second: Box, same: bool
) -> None:
    tp.to_device([Box({}, None, Inner({}, None))], META)  # registers both classes
    plan = _planned(first)
    if plan is None:
        return
    box = copy.deepcopy(first) if same else second  # the plan's layout, or any other
    got = plan.read(box)
    generic = _whole_plans.read_planned(box, plan)
    if generic is None:
        assert got is None
        assert not same, "the plan's own layout was not read by its plan"
        return
    assert got is not None
    tensors, nodes, opened, ids, laid = got
    want_tensors, want_nodes, _, _, want_laid = generic
    assert [id(t) for t in tensors] == [id(t) for t in want_tensors]
    assert [id(n) for n in nodes] == [id(n) for n in want_nodes]
    assert opened == set(map(id, nodes)) and ids == set(map(id, tensors))
    assert len(laid) == len(want_laid) and all(map(lambda a, b: a is b, laid, want_laid))
    # Apart from the code under test: the tensors found are every one reachable from it.
    assert _ids(tensors) == _ids(t for _, t in _reach.tensors(box))
    # The record laid again (written out, or flatten itself): what _untouched lays.
    again = plan.relay(nodes)
    flat = _untouched.flatten(nodes)
    assert len(again) == len(flat) and all(map(lambda a, b: a is b, again, flat))


@settings(max_examples=100, deadline=None)
@given(first=_boxes(), second=_boxes())
def test_the_written_out_result_walk_gives_the_generic_walk_or_none(
    first: Box, second: Box
) -> None:
    tp.to_device([Box({}, None, Inner({}, None))], META)
    for box in (first, first):  # the first full read keeps the plans (the result's too)
        try:
            tp.to_device(box, META)
        except tp.UnsupportedBatchError:
            return  # (a .to that moves none: refused, no plan needed)
    plan = _whole_plans.RESULT_PLANS.get(Box)
    inside = _whole.whole_tensors(second)
    if plan is None or inside is None:
        return
    result = copy.copy(second).to(META)
    skipped: list[Any] = []
    got = plan.walk(result, inside.opened, skipped)
    generic_skipped: list[Any] = []
    generic = _whole_plans.unshared_planned(result, inside.opened, plan, generic_skipped)
    if generic is None:
        assert got is None
        return
    assert got is not None
    assert [id(t) for t in got] == [id(t) for t in generic]
    assert [id(n) for n in skipped] == [id(n) for n in generic_skipped]
    # Apart from the code under test: the result's tensors outside what it shares with
    # the input (the input's own are all of those the shared nodes hold).
    own = {id(t) for _, t in _reach.tensors(second)}
    new = [t for _, t in _reach.tensors(result) if id(t) not in own]
    assert set(map(id, new)) <= set(map(id, got))
    assert all(t.is_meta for t in got if id(t) not in own)


def test_a_layout_that_changed_since_the_plan_is_read_again_and_moved_in_full() -> None:
    # A value that was an int is a tensor now (same keys, same lengths): the plan's
    # types no longer match, the loop reads it, and the new tensor moves with the rest.
    tp.to_device([Box({}, None, Inner({}, None))], META)
    for _ in range(3):
        moved = tp.to_device(Box({"x": _tensor()}, None, Inner({"p": _tensor()}, 1)), META)
        assert moved.store["x"].is_meta
    box = Box({"x": _tensor()}, None, Inner({"p": _tensor()}, _tensor()))
    plan = _whole_plans.PLANS[Box]
    assert plan.read(box) is None
    tp.to_device(box, META)  # the loop keeps the new layout's plan
    read = _whole_plans.PLANS[Box].read(box)
    assert read is not None and len(read[0]) == 3
    moved = tp.to_device(box, META)
    assert moved.store["x"].is_meta and moved.inner.mapping["p"].is_meta
    assert moved.inner.extra is box.inner.extra  # Inner's .to leaves extra: the input's own


def test_a_write_through_caught_by_the_written_out_record() -> None:
    # The record laid again by the plan's relay, compared after the call: a .to that
    # writes into what the copy shares with the input is refused, the input put back.
    class_ = WritesBooks
    with pytest.raises(tp.UnsupportedBatchError):  # (the walker's move registers it)
        tp.to_device([class_({"x": _tensor()}, {"a": _tensor()}, None)], META)
    for _ in range(3):
        box = class_({"x": _tensor()}, {"a": _tensor()}, None)
        kept = box.books["a"]
        try:
            tp.to_device(box, META)
        except tp.UnsupportedBatchError as exc:
            assert "wrote" in str(exc) or "changed" in str(exc), exc
        else:
            raise AssertionError("a .to writing into the input was not refused")
        assert box.books == {"a": kept} and box.books["a"] is kept
    # (Moves 2 and 3 were read by the plan and compared by its written-out relay.)
    assert _whole_plans.PLANS[class_].relay is not _untouched.flatten


class WritesBooks(Box):
    """A ``.to`` that replaces an entry of the dict its copy shares with the input."""

    def to(self, device: Any) -> Box:
        super().to(device)
        self.books["a"] = self.books["a"].to(device)
        return self


class HostBox:
    """A ``.to`` that, when ``host`` is set, gives ``store["a"]`` back as a new host tensor."""

    def __init__(self, store: dict[str, torch.Tensor], host: bool) -> None:
        self.store = store
        self.host = host
        self.tag = ("t",)  # (a tuple: no plan of the input, which would decide the codes)

    def __copy__(self) -> HostBox:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.store = dict(self.store)
        return new

    def to(self, device: Any) -> HostBox:
        moved = {
            k: v.clone() if self.host and k == "a" else v.to(device) for k, v in self.store.items()
        }
        self.store = moved
        return self


def test_a_result_plan_made_where_the_tensor_type_is_first_decided_keeps_every_tensor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The loop reads a dict of tensors without deciding torch.Tensor's code; the result
    # plan made after it decided it there for the first time and (on main) then dropped
    # that first tensor from its picks: a later .to leaving that tensor on the host gave
    # a result with a host tensor, silently. Every tensor is picked; the move is refused.
    from torchport.place import _node_codes

    tp.to_device([HostBox({}, False), torch.ones(1)], META)  # registers the class
    monkeypatch.delitem(_node_codes.CODES, torch.Tensor, raising=False)  # (not decided yet)
    _whole_plans.RESULT_PLANS.pop(HostBox, None)
    made = tp.to_device(HostBox({"a": _tensor(), "b": _tensor()}, False), META)
    assert made.store["a"].is_meta and made.store["b"].is_meta
    plan = _whole_plans.RESULT_PLANS[HostBox]
    assert len(plan.walk(made, frozenset(), [])) == 2
    with pytest.raises(tp.UnsupportedBatchError, match="HostBox"):
        tp.to_device(HostBox({"a": _tensor(), "b": _tensor()}, True), META)
