"""Objects with their own ``.to``: what that ``.to`` gives on a shallow copy, and nothing more.

The invariant, against the real PyTorch Geometric and tensordict classes where they
are installed (skipped otherwise) and against stand-ins: ``to_device(obj, target)``
gives what ``copy.copy(obj).to(target)`` gives (the same tensors moved, the same
tensors left on the host: PyG's ``_slice_dict``/``_inc_dict``), leaves the input as it
was, shares non-tensor payload instead of copying it, and calls nothing when nothing
has to move. The oracle reads tensors by plain attribute access, apart from the walker.
"""

from __future__ import annotations

import collections
import copy
import operator
import re
from typing import Any

import numpy
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load

reachability = load("reachability")
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


def test_a_tensordict_inside_another_and_elsewhere_is_refused_with_the_input_alone() -> None:
    # Kept refusing (place/_sharing.py's _check_same): the outer .to gives the inner one
    # without _last_op, the inner one's own .to records it; one object cannot be both.
    tensordict = pytest.importorskip("tensordict")
    inner = tensordict.TensorDict({"a": torch.ones(2)}, batch_size=[2])
    outer = tensordict.TensorDict({"inner": inner, "c": torch.ones(2)}, batch_size=[2])
    a = inner["a"]
    with pytest.raises(tp.UnsupportedBatchError, match="held both inside an object"):
        tp.to_device({"outer": outer, "inner": inner}, META)
    assert outer["inner"] is inner and inner["a"] is a and not a.is_meta


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


# Breaks found by a break-it pass (branch b33) and left open: each test states what
# the invariant asks and fails today (strict xfail), so a fix shows up as XPASS.


class _Rebuilds:
    """A ``.to`` that, as PyG's does, rebuilds the containers it holds."""

    def __init__(self, table: dict[str, torch.Tensor]) -> None:
        self.table = table

    def to(self, device: Any) -> _Rebuilds:
        out = copy.copy(self)
        out.table = {key: value.to(device) for key, value in self.table.items()}
        return out


def test_a_container_shared_between_an_own_to_object_and_the_batch_comes_back_as_one() -> None:
    table = {"w": torch.ones(2)}
    out = tp.to_device({"obj": _Rebuilds(table), "table": table}, META)
    assert out["obj"].table["w"] is out["table"]["w"]  # holds today: the tensor is one
    assert out["obj"].table is out["table"]  # held twice, one (test_sharing.py: generated)


class _WritesThrough:
    """A ``.to`` that writes into a dict its shallow copy shares with the input."""

    def __init__(self) -> None:
        self.table = {"w": torch.ones(2)}

    def to(self, device: Any) -> _WritesThrough:
        self.table["w"] = self.table["w"].to(device)
        return self


def test_an_own_to_that_writes_through_the_copy_is_refused_with_the_input_as_it_was() -> None:
    obj = _WritesThrough()
    before = obj.table["w"]
    with pytest.raises(tp.UnsupportedBatchError, match="changed the input"):
        tp.to_device(obj, META)
    assert obj.table["w"] is before  # put back (tests/place/test_untouched.py: generated)


try:
    import tensordict as _tensordict
except ImportError:  # the dev extra installs it; without it these tests are skipped
    _tensordict = None  # type: ignore[assignment]

if _tensordict is not None:

    @_tensordict.tensorclass
    class Clip:
        """A tensorclass with a tensor field and a field for anything else."""

        pixels: torch.Tensor
        extra: Any = None


def _tensors_of(value: Any) -> list[torch.Tensor]:
    """Every tensor in plain dicts, lists and tuples (the oracle's own walk)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_of(v)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _tensors_of(v)]
    return []


def _same_values(a: Any, b: Any) -> bool:
    """Same structure, same non-tensor values (tensors compared by shape only)."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(_same_values(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(b) is type(a) and len(a) == len(b) and all(map(_same_values, a, b))
    return bool(a == b)


_field_leaves = st.one_of(st.integers(1, 3).map(torch.ones), st.integers(), st.text(max_size=3))


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        _field_leaves,
        st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
        st.lists(inner, max_size=3),
    )


_fields = st.dictionaries(
    st.sampled_from("abc"),
    _nested(_nested(_field_leaves)),  # two levels of dicts and lists below the field's dict
    min_size=1,
    max_size=3,
).filter(lambda value: bool(_tensors_of(value)))  # a dict: tensordict stacks a bare list


class TestTensorsAnOwnToLeavesBehind:
    """An object is moved by its own ``.to``; tensors that ``.to`` leaves off the target move too.

    A tensorclass's non-tensor field (and a ``TensorDict``'s non-tensor entry)
    holding tensors: the object's own ``.to`` leaves them on the CPU, ``to_device``
    moves them (its invariant: every tensor reachable from the result is on the
    target), keeps the field's other values, and leaves the input as it was.
    """

    @given(_fields)
    def test_a_tensorclass_field(self, extra: Any) -> None:
        if _tensordict is None:
            pytest.skip("tensordict is not installed")
        clip = Clip(pixels=torch.ones(2, 3), extra=extra, batch_size=[2])
        held = _tensors_of(clip.extra)
        own = copy.copy(clip).to(META)
        assert not any(t.is_meta for t in _tensors_of(own.extra))  # what its .to leaves
        for out in (tp.to_device(clip, META), tp.to_device({"clip": clip}, META)["clip"]):
            assert out.pixels.is_meta and all(t.is_meta for t in _tensors_of(out.extra))
            assert _same_values(clip.extra, out.extra)
            assert all(map(operator.is_, _tensors_of(clip.extra), held))  # input untouched
            assert not clip.pixels.is_meta

    @given(_fields)
    def test_a_tensordict_non_tensor_entry(self, extra: Any) -> None:
        if _tensordict is None:
            pytest.skip("tensordict is not installed")
        td = _tensordict.TensorDict({"a": torch.ones(2)}, batch_size=[2])
        td.set_non_tensor("meta", extra)
        held = _tensors_of(td.get_non_tensor("meta"))
        out = tp.to_device(td, META)
        moved = out.get_non_tensor("meta")
        assert out["a"].is_meta and all(t.is_meta for t in _tensors_of(moved))
        assert _same_values(td.get_non_tensor("meta"), moved)
        assert all(map(operator.is_, _tensors_of(td.get_non_tensor("meta")), held))


class _Holder:
    """A plain object on the way to a tensor a ``.to`` makes."""

    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


_steps = st.lists(
    st.one_of(
        st.tuples(st.just("key"), st.sampled_from(["a", "b", 3])),
        st.tuples(st.just("index"), st.integers(0, 2)),
        st.tuples(st.just("tuple"), st.integers(0, 2)),
        st.tuples(st.just("attr"), st.sampled_from(["p", "q"])),
    ),
    max_size=4,
)


def _build(steps: list[tuple[str, Any]], leaf: Any) -> Any:
    value = leaf
    for how, where in reversed(steps):
        if how == "key":
            value = {"other": 1, where: value}
        elif how == "attr":
            value = _Holder(**{where: value, "other": 1})
        else:
            items: list[Any] = [0] * (where + 1)
            items[where] = value
            value = items if how == "index" else tuple(items)
    return value


class MakesATensor:
    """An own ``.to`` that returns a result holding a new CPU tensor where ``steps`` say."""

    last: tuple[Any, torch.Tensor] | None = None

    def __init__(self, steps: list[tuple[str, Any]]) -> None:
        self.weight = torch.ones(2)
        self.steps = steps

    def to(self, device: Any) -> MakesATensor:
        out = copy.copy(self)
        out.weight = self.weight.to(device)
        made = torch.zeros(1)
        out.extra = _build(self.steps, made)
        MakesATensor.last = (out, made)
        return out


class TestATensorItsToMakesIsNamed:
    """A tensor an own ``.to`` makes off the target is refused, named by its real path.

    The oracle evaluates the reported path on the very result ``.to`` returned and
    checks that it reaches the very tensor ``.to`` made.
    """

    def _reaches(self, move: Any, obj: MakesATensor) -> None:
        with pytest.raises(tp.UnsupportedBatchError) as raised:
            move(obj)
        found = re.search(r" at (result\S*?); torchport moves", str(raised.value))
        assert found is not None, str(raised.value)
        assert MakesATensor.last is not None
        result, made = MakesATensor.last
        assert eval(found.group(1), {"result": result}) is made  # the path the error named

    @given(_steps)
    def test_as_the_batch_inside_one_and_through_the_loader(self, steps: Any) -> None:
        obj = MakesATensor(steps)
        self._reaches(lambda o: tp.to_device(o, META), obj)
        self._reaches(lambda o: tp.to_device({"obj": o, "n": 1}, META), obj)
        self._reaches(lambda o: next(iter(tp.DeviceLoader([o], device="meta"))), obj)


@pytest.mark.parametrize("outside", ["dict", "list", "twice"])
def test_a_tensordict_inside_another_and_elsewhere_is_never_split(outside: str) -> None:
    # Found by the x33 break-it pass: the inner TensorDict came back as two, silently.
    # The outer .to's inner copy differs from the inner's own .to (tensordict's
    # _last_op), so the move may refuse; it must not split.
    if _tensordict is None:
        pytest.skip("tensordict is not installed")
    inner = _tensordict.TensorDict({"a": torch.ones(2)}, batch_size=[2])
    outer = _tensordict.TensorDict({"s": inner, "b": torch.zeros(2)}, batch_size=[2])
    batch: Any = {
        "dict": {"t": outer, "s": inner},
        "list": [inner, [outer]],
        "twice": {"t": outer, "s": inner, "t2": outer},
    }[outside]
    try:
        out = tp.to_device(batch, META)
    except tp.UnsupportedBatchError as exc:
        assert "held both inside an object moved by its own .to" in str(exc)
    else:
        moved_outer, moved_inner = (
            (out[1][0], out[0]) if outside == "list" else (out["t"], out["s"])
        )
        assert moved_outer["s"] is moved_inner and moved_inner["a"].is_meta
    assert outer["s"] is inner and not inner["a"].is_meta  # the input as it was


class _Forwards:
    """An own ``.to`` that hands every argument on to each tensor (as TensorDict's casts all)."""

    def __init__(self, **state: Any) -> None:
        self.__dict__.update(state)

    def to(self, *args: Any, **kwargs: Any) -> _Forwards:
        return _Forwards(**{k: v.to(*args, **kwargs) for k, v in vars(self).items()})


class _TakesDtype(_Forwards):
    """The same, with the device, ``dtype`` and ``non_blocking`` named."""

    def to(  # type: ignore[override]
        self, device: Any, dtype: torch.dtype | None = None, non_blocking: bool = False
    ) -> _TakesDtype:
        moved = {
            k: v.to(device, dtype=dtype, non_blocking=non_blocking) for k, v in vars(self).items()
        }
        return _TakesDtype(**moved)


_KINDS_OF_DTYPE = [torch.int64, torch.int32, torch.uint8, torch.bool, torch.float32, torch.float64]


@given(
    cls=st.sampled_from([_Forwards, _TakesDtype]),
    held=st.lists(st.sampled_from(_KINDS_OF_DTYPE), min_size=1, max_size=4),
    where=st.sampled_from(["root", "dict", "list"]),
    dtype=st.sampled_from([torch.float16, torch.bfloat16, torch.float64]),
)
def test_dtype_casts_only_the_floating_tensors_of_an_own_to_object(
    cls: type, held: list[torch.dtype], where: str, dtype: torch.dtype
) -> None:
    # The promise: with dtype, floating tensors are cast and integer and bool ones are
    # untouched, also inside an object whose .to would cast whatever it is given
    # (token ids cast to float16 lose their values above 2048). Oracle: the reachability
    # walk with each input tensor's own expected dtype.
    obj = cls(**{f"t{i}": torch.arange(3).to(d) for i, d in enumerate(held)})
    batch = obj if where == "root" else {"o": obj} if where == "dict" else [torch.ones(1), obj]
    taken = reachability.snapshot(batch)
    out = tp.to_device(batch, "meta", dtype=dtype)

    def cast(t: torch.Tensor) -> torch.dtype:
        return dtype if t.is_floating_point() else t.dtype

    reachability.check_move(batch, taken, out, torch.device("meta"), cast=cast)


def test_a_tensordicts_token_ids_stay_integers_when_moved_with_a_dtype() -> None:
    tensordict = pytest.importorskip("tensordict")
    ids = torch.arange(2040, 2060)  # float16 rounds 2049 to 2048
    td = tensordict.TensorDict({"ids": ids, "x": torch.ones(20)}, batch_size=[20])
    for batch in (td, {"td": td, "t": torch.ones(1)}):
        out = tp.to_device(batch, "cpu", dtype=torch.float16)
        moved = out if batch is td else out["td"]
        assert moved["ids"].dtype == torch.int64 and torch.equal(moved["ids"], ids)
        assert moved["x"].dtype == torch.float16


class _KeysView:
    """A view of its owner, as tensordict's ``_TensorDictKeysView`` is."""

    def __init__(self, owner: Any) -> None:
        self.owner = owner


class _Memoizing:
    """A stand-in for a locked ``TensorDict``: it memoizes views of itself in ``_cache``."""

    def __init__(self, x: torch.Tensor) -> None:
        self.x = x
        self._cache: dict[str, Any] = collections.defaultdict(dict)

    def keys(self) -> _KeysView:
        return self._cache["keys"].setdefault((), _KeysView(self))  # type: ignore[no-any-return]

    def to(self, device: Any, non_blocking: bool = False) -> _Memoizing:
        return _Memoizing(self.x.to(device))


@pytest.mark.xfail(
    strict=True,
    raises=tp.UnsupportedBatchError,
    reason=(
        "issue 33, own .to objects (break-it pass 4, x33j): an object with its own .to whose "
        "state reaches the object itself (a locked TensorDict after td.keys(True, True) "
        "memoizes a keys view holding the TensorDict) is read by the walker, which refuses "
        "the cycle ('contains itself through its attributes'), though its .to on a shallow "
        "copy moves it; to_device and DeviceLoader both refuse it"
    ),
)
@pytest.mark.parametrize("way", ["alone", "in_a_dict", "loader"])
def test_an_object_whose_state_refers_back_to_it_moves_as_its_own_to_gives(way: str) -> None:
    obj = _Memoizing(torch.ones(2))
    obj.keys()  # (filled by any read of a locked TensorDict's nested keys)
    expected = copy.copy(obj).to(META)
    assert expected.x.is_meta
    if way == "loader":
        out = next(iter(tp.DeviceLoader([obj], device=META)))
    else:
        out = tp.to_device(obj if way == "alone" else {"o": obj}, META)
        out = out if way == "alone" else out["o"]
    assert type(out) is _Memoizing and out.x.is_meta
    assert not obj.x.is_meta and obj.keys().owner is obj
