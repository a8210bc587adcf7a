"""Property tests: random nested batches keep structure, types, state, dtypes, shapes and values.

The batches mix optree's own containers with those the walker registers itself (each one
a container that once came back unmoved or rebuilt wrong): UserDict, MappingProxyType,
other Mappings, frozensets, dataclasses (plain, frozen, slots, with a ``__post_init__``
that changes a field, with attributes set after construction) and builtin subclasses
whose constructor takes other arguments."""

from __future__ import annotations

import collections
import dataclasses
import types
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp
from torchport.place._tree import flatten_tensors

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.uint8,
    torch.bool,
]


class Pair(NamedTuple):
    left: Any
    right: Any


@dataclasses.dataclass
class Record:
    a: Any
    b: Any


@dataclasses.dataclass(frozen=True)
class FrozenRecord:
    a: Any


@dataclasses.dataclass
class Doubling:
    a: Any
    n: int = 1

    def __post_init__(self) -> None:
        self.n *= 2


@dataclasses.dataclass(slots=True)
class SlotsRecord:
    a: Any


@dataclasses.dataclass(frozen=True, slots=True)
class FrozenSlotsRecord:
    a: Any


class StarList(list[Any]):
    """``StarList(items)`` would nest the items one level deeper."""

    def __init__(self, *items: Any) -> None:
        super().__init__(items)


class PairRow(tuple[Any, ...]):
    def __new__(cls, a: Any, b: Any) -> PairRow:
        return super().__new__(cls, (a, b))


class OwnedDict(dict[str, Any]):
    def __init__(self, owner: str, items: dict[str, Any]) -> None:
        super().__init__(items)
        self.owner = owner


class Window(collections.deque[Any]):
    def __init__(self, items: list[Any]) -> None:
        super().__init__(items, maxlen=len(items) + 1)
        self.owner = "w"


class ReadOnly(Mapping[str, Any]):
    def __init__(self, items: dict[str, Any]) -> None:
        self._items = dict(items)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def _with_extra(obj: Any) -> Any:
    """Set an attribute after construction (where the type allows one)."""
    if hasattr(obj, "__dict__"):
        object.__setattr__(obj, "extra", ["set later"])
    return obj


def _user_dict(items: dict[str, Any]) -> collections.UserDict[str, Any]:
    return _with_extra(collections.UserDict(items))  # type: ignore[no-any-return]


def _make_tensor(dtype: torch.dtype, shape: list[int], seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    base = torch.randn(shape, generator=gen) * 10
    return base > 0 if dtype == torch.bool else base.to(dtype)


tensors = st.builds(
    _make_tensor,
    st.sampled_from(DTYPES),
    st.lists(st.integers(0, 3), max_size=3),  # 0-dim and empty included
    st.integers(0, 2**16),
)
leaves = tensors | st.integers() | st.text(max_size=3) | st.none()


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    small_dicts = st.dictionaries(st.text(max_size=3), children, max_size=3)
    return (
        st.dictionaries(st.text(max_size=4), children, max_size=4)
        | st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.builds(Pair, children, children)
        | st.builds(Record, children, children)
        | st.builds(FrozenRecord, children).map(_with_extra)
        | small_dicts.map(lambda d: collections.OrderedDict(sorted(d.items())))
        | small_dicts.map(_user_dict)
        | small_dicts.map(types.MappingProxyType)
        | small_dicts.map(ReadOnly)
        | st.builds(Doubling, children, st.integers(-3, 3)).map(_with_extra)
        | st.builds(SlotsRecord, children)
        | st.builds(FrozenSlotsRecord, children)
        | st.lists(children, max_size=3).map(lambda items: StarList(*items))
        | st.builds(PairRow, children, children)
        | st.builds(OwnedDict, st.text(max_size=2), small_dicts)
        | st.lists(children, max_size=3).map(lambda items: _with_extra(collections.UserList(items)))
        | st.lists(small_dicts, min_size=1, max_size=3).map(
            lambda maps: collections.ChainMap(*maps)
        )
        | st.lists(children, max_size=3).map(Window)
        | st.frozensets(tensors | st.integers(), max_size=3)
        | st.sets(tensors, max_size=3)
    )


batches = st.recursive(leaves, _extend, max_leaves=12)


def _assert_same_shape(before: Any, after: Any, check: Any) -> None:
    """Walk both in step: same types, keys and state everywhere; ``check`` compares tensors."""
    assert type(before) is type(after)
    if isinstance(before, torch.Tensor):
        check(before, after)
        return
    if isinstance(before, Mapping):
        assert list(before) == list(after)
        for key in before:
            _assert_same_shape(before[key], after[key], check)
    elif isinstance(before, (list, tuple, collections.deque, collections.UserList)):
        assert len(before) == len(after)
        for x, y in zip(before, after, strict=True):
            _assert_same_shape(x, y, check)
    elif isinstance(before, (set, frozenset)):
        _assert_same_set(before, after, check)
    elif dataclasses.is_dataclass(before):
        for field in dataclasses.fields(before):
            _assert_same_shape(getattr(before, field.name), getattr(after, field.name), check)
    else:
        assert before == after
    if not isinstance(before, ReadOnly | types.MappingProxyType):  # those two are constructed
        # Every other attribute comes back as it is, the very object.
        walked = (
            {f.name for f in dataclasses.fields(before)}
            if dataclasses.is_dataclass(before)
            else set()
        )
        walked |= {"data", "maps"}
        extras = {k: v for k, v in getattr(before, "__dict__", {}).items() if k not in walked}
        assert {
            k: v for k, v in getattr(after, "__dict__", {}).items() if k not in walked
        }.keys() == extras.keys()
        assert all(getattr(after, k) is v for k, v in extras.items())


def _assert_same_set(before: Any, after: Any, check: Any) -> None:
    """Items of a set have no order: pair each tensor with one that passes ``check``."""
    assert len(before) == len(after)
    assert {x for x in before if not isinstance(x, torch.Tensor)} == {
        y for y in after if not isinstance(y, torch.Tensor)
    }
    unmatched = [y for y in after if isinstance(y, torch.Tensor)]
    for x in (x for x in before if isinstance(x, torch.Tensor)):
        for i, y in enumerate(unmatched):
            try:
                check(x, y)
            except AssertionError:
                continue
            del unmatched[i]  # by position: tensors compare elementwise
            break
        else:
            raise AssertionError(f"no moved counterpart of {x!r} in {after!r}")


@given(batches)
def test_to_meta_keeps_structure_dtypes_and_shapes(batch: Any) -> None:
    def check(x: torch.Tensor, y: torch.Tensor) -> None:
        assert y.device.type == "meta" and y.dtype == x.dtype and y.shape == x.shape

    _assert_same_shape(batch, tp.to_device(batch, "meta"), check)


@given(batches)
def test_to_meta_with_dtype_casts_only_floats(batch: Any) -> None:
    def check(x: torch.Tensor, y: torch.Tensor) -> None:
        expected = torch.float16 if x.is_floating_point() else x.dtype
        assert y.device.type == "meta" and y.dtype == expected and y.shape == x.shape

    _assert_same_shape(batch, tp.to_device(batch, "meta", dtype=torch.float16), check)


@given(batches, st.sampled_from([None, torch.float64]))
def test_to_cpu_keeps_values(batch: Any, dtype: torch.dtype | None) -> None:
    def check(x: torch.Tensor, y: torch.Tensor) -> None:
        expected = x.to(dtype) if dtype is not None and x.is_floating_point() else x
        assert y.dtype == expected.dtype and torch.equal(y, expected)

    _assert_same_shape(batch, tp.to_device(batch, "cpu", dtype=dtype), check)


@given(batches, st.sampled_from([torch.float64, torch.float32]))
def test_packed_to_cpu_keeps_values(batch: Any, dtype: torch.dtype) -> None:
    def check(x: torch.Tensor, y: torch.Tensor) -> None:
        expected = x.to(dtype) if x.is_floating_point() else x
        assert y.dtype == expected.dtype and torch.equal(y, expected)

    _assert_same_shape(batch, tp.to_device(batch, "cpu", dtype=dtype, pack=True), check)


@given(batches)
def test_packed_to_meta_keeps_structure(batch: Any) -> None:
    def check(x: torch.Tensor, y: torch.Tensor) -> None:
        assert y.device.type == "meta" and y.dtype == x.dtype and y.shape == x.shape

    _assert_same_shape(batch, tp.to_device(batch, "meta", pack=True), check)


@given(batches)
def test_no_op_move_returns_the_same_tensors(batch: Any) -> None:
    def check(x: torch.Tensor, y: torch.Tensor) -> None:
        assert y is x

    _assert_same_shape(batch, tp.to_device(batch, "cpu"), check)


@given(batches, tensors)
def test_a_tensor_met_twice_is_moved_once(batch: Any, t: torch.Tensor) -> None:
    out = tp.to_device([t, batch, {"again": t}], "meta")
    assert out[0] is out[2]["again"] and out[0].device.type == "meta"


@given(batches)
def test_flatten_then_rebuild_is_identity(batch: Any) -> None:
    found, rebuild = flatten_tensors(batch)
    assert len({id(t) for t in found}) == len(found)

    def check(x: torch.Tensor, y: torch.Tensor) -> None:
        assert x is y

    _assert_same_shape(batch, rebuild(found), check)
