"""A container of objects with their own ``.to`` gives what the walker gives for it.

The invariant: ``to_device`` of a builtin dict, list or tuple holding objects with
their own ``.to`` (the whole-object path, ``place/_whole_held.py``) gives the walker's
answer for the same batch (the path forced off): the same outcome (result, or the
same refusal naming the same path), every tensor on the same device with the same
values, every node where the input had it held once held once, the same input
objects handed back where the walker hands them back, and the input untouched.
The oracle: the walker's own result, compared by a description written here
(``_described``: per reachable node, its type, which input node it is, its tensors'
device and values, and which earlier node it is the same object as), plus the suite's
reachability walk (``reachability.py``) for the promise itself. Batches are
generated graphs: tensors on and off the target, values, tuples of values, nested
dicts/lists/tuples, objects of several classes (one rebuilding every tuple it holds,
one returning a copy, one returning itself), any node held again anywhere.
(Whether a tuple in which nothing changed comes back as the very tuple is not
compared: the walker makes a new one, this path hands it back, both hold the same
items.)
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp
import torchport.place._move as move_module
from tests.place.siblings import load
from torchport.place._direct import NOT_FLAT

_reach = load("reachability")

META = torch.device("meta")
_VALUES = (int, float, str, bytes, bool, type(None), torch.dtype, torch.device)


def _moved(v: Any, device: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return v.to(device)
    if type(v) is dict:
        return {k: _moved(w, device) for k, w in v.items()}
    if type(v) is list:
        return [_moved(w, device) for w in v]
    if type(v) is tuple:
        return tuple(_moved(w, device) for w in v)  # a new tuple, even of values
    if hasattr(v, "to") and not isinstance(v, type):
        return v.to(device)
    return v


class Rebuilds:
    """``.to`` moves what it holds in place (on the shallow copy), every container anew."""

    def __init__(self, **state: Any) -> None:
        self.__dict__.update(state)

    def to(self, device: Any, non_blocking: bool = False) -> Any:
        for k, v in list(self.__dict__.items()):
            self.__dict__[k] = _moved(v, device)
        return self


class Copies(Rebuilds):
    """``.to`` returns a moved copy (an object with nothing to move: a copy too)."""

    def to(self, device: Any, non_blocking: bool = False) -> Any:
        return Rebuilds.to(copy.copy(self), device)


class ReturnsSelf(Rebuilds):
    """``.to`` ignores the device: refused when none of its tensors is on the target."""

    def to(self, device: Any, non_blocking: bool = False) -> Any:
        return self


_CLASSES = (Rebuilds, Copies, ReturnsSelf)


def _register() -> None:
    for cls in _CLASSES:  # the first batch of a class is the walker's
        for _ in range(2):
            with contextlib.suppress(tp.UnsupportedBatchError):
                tp.to_device([cls(x=torch.ones(1))], META)


def _walker(batch: Any, **kwargs: Any) -> Any:
    """The walker's answer: the container path and the whole-object path forced off."""
    held, whole = move_module.move_held, move_module.whole_tensors
    move_module.move_held = lambda *_: NOT_FLAT  # type: ignore[assignment]
    move_module.whole_tensors = lambda *_, **__: None  # type: ignore[assignment]
    try:
        return tp.to_device(batch, META, **kwargs)
    finally:
        move_module.move_held, move_module.whole_tensors = held, whole


def _described(out: Any, batch: Any) -> list[tuple[Any, ...]]:
    """Per node reachable from ``out``: path, type, the input node it is, tensor device, sharing."""
    inputs: dict[int, str] = {}

    def index(v: Any, path: str) -> None:
        if isinstance(v, _VALUES) or id(v) in inputs:
            return
        inputs[id(v)] = path
        for step, child in _children(v):
            index(child, path + step)

    index(batch, "")
    seen: dict[int, str] = {}
    rows: list[tuple[Any, ...]] = []

    def walk(v: Any, path: str) -> None:
        if isinstance(v, _VALUES):
            rows.append((path, repr(v)))
        elif id(v) in seen:
            rows.append((path, "the same object as", seen[id(v)]))
        else:
            seen[id(v)] = path
            same = "a tuple" if type(v) is tuple else inputs.get(id(v))
            if isinstance(v, torch.Tensor):
                rows.append((path, type(v), same, v.device, v.dtype, tuple(v.shape)))
            else:
                rows.append((path, type(v), same))
            for step, child in _children(v):
                walk(child, path + step)

    walk(out, "")
    return rows


def _children(v: Any) -> list[tuple[str, Any]]:
    if isinstance(v, torch.Tensor):
        return []
    if isinstance(v, dict):
        return [(f"[{k!r}]", w) for k, w in v.items()]
    if isinstance(v, list | tuple):
        return [(f"[{i}]", w) for i, w in enumerate(v)]
    return [(f".{k}", w) for k, w in sorted(vars(v).items())]


@st.composite
def _batches(draw: st.DrawFn) -> Any:
    made: list[Any] = []  # every node made so far: any may be held again
    count = [0]

    def tensor() -> torch.Tensor:
        count[0] += 1
        t = torch.full((2,), float(count[0]))
        return t.to(META) if draw(st.booleans()) else t

    def node(depth: int, nesting: int) -> Any:
        if made and draw(st.integers(0, 4)) == 0:
            return draw(st.sampled_from(made))
        kinds = ["tensor", "value", "tuple of values"]
        if depth < 3:
            kinds += ["list", "dict", "tuple", *(["object"] * 2 if nesting < 2 else [])]
        kind = draw(st.sampled_from(kinds))
        sizes = st.integers(0, 3)
        x: Any
        if kind == "value":
            return draw(st.sampled_from([1, "s", None, (), (1, "v")]))
        if kind == "tensor":
            x = tensor()
        elif kind == "tuple of values":
            count[0] += 1
            x = (count[0], ("t",))
        elif kind == "list":
            x = [node(depth + 1, nesting) for _ in range(draw(sizes))]
        elif kind == "dict":
            x = {f"k{i}": node(depth + 1, nesting) for i in range(draw(sizes))}
        elif kind == "tuple":
            x = tuple(node(depth + 1, nesting) for _ in range(draw(st.integers(1, 3))))
        else:
            state = {f"a{i}": node(depth + 1, nesting + 1) for i in range(draw(sizes))}
            state["store"] = {"x": tensor()}
            x = draw(st.sampled_from(_CLASSES))(**state)
        made.append(x)
        return x

    items = [node(1, 0) for _ in range(draw(st.integers(1, 4)))]
    top = draw(st.sampled_from([list, tuple, dict]))
    return {f"t{i}": v for i, v in enumerate(items)} if top is dict else top(items)


def _outcome(move: Any) -> tuple[str, Any]:
    try:
        return "result", move()
    except tp.UnsupportedBatchError as exc:
        return "refused", str(exc).split(":")[0]  # "cannot rebuild <path> of type <class>"


@given(
    batch=_batches(),
    kwargs=st.sampled_from([{}, {"non_blocking": True}, {"pack": False}]),
)
def test_a_container_of_objects_gives_the_walkers_answer(
    batch: Any, kwargs: dict[str, Any]
) -> None:
    _register()
    taken = _reach.snapshot(batch)
    kind, out = _outcome(lambda: tp.to_device(batch, META, **kwargs))
    assert _reach.snapshot(batch) == taken, "the input changed"
    walker_kind, walker_out = _outcome(lambda: _walker(batch, **kwargs))
    assert (kind, out if kind == "refused" else None) == (
        walker_kind,
        walker_out if walker_kind == "refused" else None,
    )
    if kind == "result":
        assert _described(out, batch) == _described(walker_out, batch)
        left = _reach.left_by_own_to(batch, META)
        assert all(t.is_meta or path in left for path, t in _reach.tensors(out))


@pytest.mark.parametrize(
    "make",
    [
        lambda tup: {"obj": Rebuilds(x=torch.ones(2), t=tup), "t": tup},  # inside and outside
        lambda tup: [Rebuilds(x=torch.ones(2), d={"t": (tup, 1)}), [tup]],  # deeper, nested
        lambda tup: [Rebuilds(x=torch.ones(2), t=tup), Copies(y=torch.ones(1), t=tup)],  # two
    ],
)
def test_a_tuple_of_values_held_inside_an_object_and_elsewhere_stays_one(make: Any) -> None:
    # No tensor or dict/list tells this overlap; the object's .to makes a new tuple.
    _register()
    tup = (1, ("two",))
    batch = make(tup)
    out = tp.to_device(batch, META)
    held = [node for _, node, _ in _reach.walk(out) if type(node) is tuple and node == tup]
    assert len(held) == 2 and held[0] is held[1]
    assert _described(out, batch) == _described(_walker(batch), batch)


@pytest.mark.parametrize(
    "make",
    [
        lambda tup: [Rebuilds(x=torch.ones(2), t=[tup, ()], u=tup), ()],
        lambda tup: [Rebuilds(x=torch.ones(2), t=[tup, ()], u=tup), Copies(y=torch.ones(1), e=())],
        lambda tup: {"a": Rebuilds(x=torch.ones(2), t=[tup, ()], u=tup), "b": [(), ((),)]},
    ],
)
def test_the_empty_tuple_is_a_value_on_both_paths(make: Any) -> None:
    # One object in CPython that holds nothing: held by an object and elsewhere it
    # shares nothing, as the same small int does not. So the object's result is what
    # its .to makes of it on either path: a tuple held twice inside it comes back as
    # two, as the class rebuilds it (the walker deep-copied the object around the
    # "shared" () and kept it one; this path split it: the answer hung on a ()).
    _register()
    tup = (1, ("two",))
    batch = make(tup)
    out = tp.to_device(batch, META)
    moved = out[0] if isinstance(out, list) else out["a"]
    assert moved.t[0] == moved.u == tup and moved.t[0] is not moved.u  # (Rebuilds' own rule)
    assert _described(out, batch) == _described(_walker(batch), batch)


class ChangesTheBatch(Copies):
    """``.to`` changes the batch it is in (reached through the class, not its state)."""

    batch: Any = None

    def to(self, device: Any, non_blocking: bool = False) -> Any:
        batch = type(self).batch
        if isinstance(batch, dict):
            batch["added"] = torch.ones(3)
            batch["y"] = torch.ones(4)
        elif isinstance(batch, list):
            batch.append(torch.ones(3))
            batch[-2] = torch.ones(4)
        return super().to(device)


@pytest.mark.parametrize("top", [dict, list])
def test_a_container_changed_during_the_move_gives_the_batch_as_read(top: type) -> None:
    # What another thread may do at any moment, done here deterministically from inside
    # the .to: the result is rebuilt from the containers as read (as the walker's one
    # flatten is), never with an item put there since (a host tensor handed back).
    with contextlib.suppress(tp.UnsupportedBatchError):
        for _ in range(2):
            tp.to_device([ChangesTheBatch(x=torch.ones(1))], META)

    def make() -> Any:
        items = [ChangesTheBatch(x=torch.ones(2)), torch.ones(1), torch.zeros(2)]
        return dict(zip(["o", "z", "y"], items, strict=True)) if top is dict else items

    answers = []
    for move in (lambda b: tp.to_device(b, META), _walker):
        batch = ChangesTheBatch.batch = make()
        try:
            as_read = _described(batch, batch)
            out = move(batch)
        finally:
            ChangesTheBatch.batch = None
        assert all(t.is_meta for _, t in _reach.tensors(out)), "a host tensor in the result"
        assert len(out) == 3
        answers.append([row[:2] for row in _described(out, batch)])
        assert [row[0] for row in _described(out, batch)] == [row[0] for row in as_read]
    assert answers[0] == answers[1]


def test_real_pyg_data_with_a_tuple_held_elsewhere_gives_the_walkers_answer() -> None:
    pyg = pytest.importorskip("torch_geometric.data")
    for _ in range(2):  # the first meets the class (the walker), the second its plan
        data = pyg.Data(x=torch.randn(3, 2), edge_index=torch.zeros(2, 2).long())
        data.shape = (3, 4)
        batch = {"g": data, "shape": data.shape, "y": torch.ones(2)}
        taken = _reach.snapshot(batch)
        kind, out = _outcome(lambda b=batch: tp.to_device(b, META))
        assert _reach.snapshot(batch) == taken
        walker_kind, walker_out = _outcome(lambda b=batch: _walker(b))
        assert kind == walker_kind  # (PyG's .to rebuilds the tuple: the walker refuses)
        if kind == "refused":
            assert out == walker_out
        else:
            assert out["g"].shape is out["shape"]
