"""An object with its own ``.to`` inside a container moves as it moves alone.

The invariant: the object's result in ``{"o": obj, ...}``, ``[obj, ...]``, a tuple, a
nested container or a dataclass is what ``to_device(obj)`` gives (the same tensors
moved, the same ones of the input's kept, the same refusal), the container's own
tensors move, the input is untouched, an object held twice comes back as one
result, and a tensor held both inside the object and elsewhere stays one tensor.
The oracle: the generated classes of ``test_own_to_moves`` and their spec
(``_expect_refused``), and the suite's own reachability walk (``reachability.py``),
which shares no code with ``torchport.place``. Also pinned: such a batch of builtin
containers takes the whole-object path (``place/_whole_held.py``), not the walker.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load
from tests.place.test_own_to_moves import _CLASSES, META, Right, _expect_refused, _inputs, _Own

_reach = load("reachability")


@dataclasses.dataclass
class _Holder:
    obj: Any
    y: torch.Tensor


# Each placement: (wrap the object, get its result back, the path of the object).
_PLACES: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], str]] = {
    "dict": (lambda o: {"o": o, "y": torch.ones(1), "n": 1}, lambda b: b["o"], "batch['o']"),
    # (One object and one plain tensor: _whole_held's pair lane, either order.)
    "pair": (lambda o: {"y": torch.ones(1), "o": o}, lambda b: b["o"], "batch['o']"),
    "pair, object first": (lambda o: {"o": o, "y": torch.ones(1)}, lambda b: b["o"], "batch['o']"),
    "list": (lambda o: [torch.ones(1), o, "s"], lambda b: b[1], "batch[1]"),
    "tuple": (lambda o: (o, torch.ones(1)), lambda b: b[0], "batch[0]"),
    "nested": (
        lambda o: {"a": [1, (torch.ones(1), o)]},
        lambda b: b["a"][1][1],
        "batch['a'][1][1]",
    ),
    "dataclass": (lambda o: _Holder(o, torch.ones(1)), lambda b: b.obj, "batch.obj"),
}


def _register() -> None:
    for cls in _CLASSES:  # registers each class (its first batch is the walker's)
        with contextlib.suppress(tp.UnsupportedBatchError):
            tp.to_device([cls({}, None, frozenset())], META)


def _shape(obj: _Own, out: Any) -> list[tuple[Any, ...]]:
    """Per tensor of ``out`` (the oracle's walk): its path, device, whether it is the input's."""
    own = {id(t) for _, t in _reach.tensors(obj)}
    return [(path, t.device, id(t) in own) for path, t in _reach.tensors(out)]


@pytest.mark.parametrize("place", list(_PLACES))
@given(obj=_inputs())
def test_an_object_in_a_container_moves_as_it_moves_alone(place: str, obj: _Own) -> None:
    _register()
    wrap, unwrap, path = _PLACES[place]
    batch = wrap(obj)
    taken = _reach.snapshot(batch)
    calls = type(obj).calls
    if all(t.is_meta for _, t in _reach.tensors(obj)):
        assert unwrap(tp.to_device(batch, META)) is obj and type(obj).calls == calls  # no call
        return
    if _expect_refused(obj):
        with pytest.raises(tp.UnsupportedBatchError, match=type(obj).__name__) as caught:
            tp.to_device(batch, META)
        assert str(caught.value).startswith(f"cannot rebuild {path} ")  # the container's path
        assert _reach.snapshot(batch) == taken, "the input changed"
        return
    out = tp.to_device(batch, META)
    assert _reach.snapshot(batch) == taken, "the input changed"
    own = {id(t) for _, t in _reach.tensors(obj)}
    # The promise, by the oracle: every tensor on the target or the object's own left there.
    assert all(t.is_meta or id(t) in own for _, t in _reach.tensors(out))
    alone = tp.to_device(obj, META)
    assert type(unwrap(out)) is type(alone)
    assert _shape(obj, unwrap(out)) == _shape(obj, alone)


@pytest.mark.parametrize("wrap", [lambda o: [o, o], lambda o: {"a": o, "b": (o,)}])
@given(obj=_inputs())
def test_an_object_held_twice_comes_back_as_one(wrap: Callable[[Any], Any], obj: _Own) -> None:
    _register()
    batch = wrap(obj)
    if _expect_refused(obj) and not all(t.is_meta for _, t in _reach.tensors(obj)):
        with pytest.raises(tp.UnsupportedBatchError):
            tp.to_device(batch, META)
        return
    out = tp.to_device(batch, META)
    first, second = (out[0], out[1]) if isinstance(out, list) else (out["a"], out["b"][0])
    assert first is second
    assert _shape(obj, first) == _shape(obj, tp.to_device(obj, META))


@given(moves=st.frozensets(st.sampled_from("ab"), min_size=1), nested=st.booleans())
def test_a_tensor_held_inside_the_object_and_elsewhere_stays_one_tensor(
    moves: frozenset[str], nested: bool
) -> None:
    _register()
    obj = Right({"a": torch.ones(2), "b": torch.zeros(2)}, None, moves)
    batch: Any = {"obj": obj, "x": obj.d["a"]}
    if nested:
        batch = [batch, (obj.d["b"],)]
    taken = _reach.snapshot(batch)
    out = tp.to_device(batch, META)
    assert _reach.snapshot(batch) == taken
    top = out[0] if nested else out
    assert top["x"].is_meta and top["obj"].d["a"] is top["x"]
    if nested:
        assert top["obj"].d["b"] is out[1][0] and out[1][0].is_meta
    assert all(t.is_meta for _, t in _reach.tensors(out))


@given(tensor_first=st.booleans(), there=st.booleans(), overlap=st.booleans())
def test_one_object_beside_one_tensor_moves_as_each_moves_alone(
    tensor_first: bool, there: bool, overlap: bool
) -> None:
    # The pair lane (place/_whole_held.py): keys in their order, the tensor as to_device
    # moves it alone, the object as alone, a tensor held inside it too kept one tensor.
    _register()
    obj = Right({"a": torch.ones(2), "b": torch.zeros(2)}, None, frozenset("ab"))
    y = obj.d["a"] if overlap else torch.ones(3, device=META) if there else torch.ones(3)
    batch = {"y": y, "obj": obj} if tensor_first else {"obj": obj, "y": y}
    taken = _reach.snapshot(batch)
    out = tp.to_device(batch, META)
    assert _reach.snapshot(batch) == taken, "the input changed"
    assert list(out) == list(batch) and out is not batch
    assert out["y"].is_meta and (out["y"] is y) == (there and not overlap)
    assert _shape(obj, out["obj"]) == _shape(obj, tp.to_device(obj, META))
    if overlap:
        assert out["obj"].d["a"] is out["y"]


def test_a_container_held_inside_the_object_and_elsewhere_stays_one() -> None:
    _register()
    obj = Right({"a": torch.ones(2)}, [torch.ones(1)], frozenset())
    out = tp.to_device({"obj": obj, "books": obj.books}, META)
    assert out["obj"].books is out["books"]  # (the walker: the object deep-copied around)
    assert all(t.is_meta for _, t in _reach.tensors(out))


def test_builtin_containers_of_objects_take_the_whole_object_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torchport.place._whole_held as held

    _register()
    seen: list[Any] = []
    real = held.move_whole

    def spy(obj: Any, *args: Any) -> Any:
        seen.append(obj)
        return real(obj, *args)

    monkeypatch.setattr(held, "move_whole", spy)
    a = Right({"a": torch.ones(2)}, None, frozenset())
    b = Right({"b": torch.ones(2)}, torch.ones(1), frozenset())
    out = tp.to_device({"a": a, "rest": [b, torch.ones(3), (a, 1)]}, META)
    assert [id(x) for x in seen] == [id(a), id(b)]  # each object once, by move_whole
    assert out["a"] is out["rest"][2][0] and out["rest"][0].d["b"].is_meta
    assert out["a"].d["a"].is_meta and out["rest"][1].is_meta
    seen.clear()
    tp.to_device({"obj": a, "x": a.d["a"]}, META)  # overlap: the walker keeps it one tensor
    assert seen == []
    big = tp.to_device([a, *[torch.ones(1) for _ in range(70)]], META)  # past 64 items
    assert seen == [] and big[0].d["a"].is_meta and all(t.is_meta for t in big[1:])


def test_real_pyg_and_tensordict_in_a_dict_move_as_they_move_alone() -> None:
    pyg = pytest.importorskip("torch_geometric.data")
    graphs = [pyg.Data(x=torch.randn(3, 2), edge_index=torch.zeros(2, 2).long()) for _ in "ab"]
    objects: list[Any] = [pyg.Batch.from_data_list(graphs), graphs[0]]
    with contextlib.suppress(ImportError):
        from tensordict import TensorDict

        objects.append(TensorDict({"a": torch.ones(2, 3), "b": {"c": torch.zeros(2)}}, [2]))
    for obj in objects:
        for _ in range(2):  # the first meets the class (the walker), the second its plan
            batch = {"g": obj, "y": torch.ones(2)}
            taken = _reach.snapshot(batch)
            out = tp.to_device(batch, META)
            assert _reach.snapshot(batch) == taken and out["y"].is_meta
            assert _shape(obj, out["g"]) == _shape(obj, tp.to_device(obj, META))


def test_threads_moving_one_container_of_two_objects_each_get_what_one_thread_gets() -> None:
    import threading
    from concurrent.futures import ThreadPoolExecutor

    _register()
    a = Right({"a": torch.ones(2), "b": torch.ones(1, device=META)}, None, frozenset())
    b = Right({"c": torch.ones(3)}, torch.ones(1), frozenset())
    bad = _CLASSES[0]({"d": torch.ones(2)}, None, frozenset())  # returns self: refused
    batches = [{"a": a, "rest": [b, torch.ones(2)]}, [a, (b, bad)]]
    taken = [_reach.snapshot(batch) for batch in batches]
    barrier = threading.Barrier(4)

    def move(i: int) -> Any:
        barrier.wait()
        try:
            return tp.to_device(batches[i % 2], META)
        except tp.UnsupportedBatchError as exc:
            return exc

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(move, range(8)))
    for i, out in enumerate(results):
        if i % 2:
            assert isinstance(out, tp.UnsupportedBatchError)
            assert str(out).startswith("cannot rebuild batch[1][1] of type")
            continue
        assert not isinstance(out, Exception)
        assert _shape(a, out["a"]) == _shape(a, tp.to_device(a, META))
        assert _shape(b, out["rest"][0]) == _shape(b, tp.to_device(b, META))
        assert out["rest"][1].is_meta
    assert [_reach.snapshot(batch) for batch in batches] == taken


_LEAVES = st.one_of(
    st.builds(lambda meta: torch.ones(2, device=META if meta else "cpu"), st.booleans()),
    st.integers(),
    st.none(),
    st.text(max_size=2),
)
_NESTED = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=2), inner, max_size=4),
    ),
    max_leaves=24,
)


@given(batch=_NESTED, with_object=st.booleans())
def test_small_nested_builtin_batches_keep_the_promise(batch: Any, with_object: bool) -> None:
    # Such batches (with or without an own-.to object) take place/_whole_held.py's path;
    # the oracle: the suite's check_move (every tensor on the target, input unchanged,
    # values unchanged, sharing kept) on what they give.
    _register()
    if with_object:
        batch = [batch, Right({"a": torch.ones(2)}, None, frozenset())]
    taken = _reach.snapshot(batch)
    out = tp.to_device(batch, META)
    _reach.check_move(batch, taken, out, META)
