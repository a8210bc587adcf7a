"""Property tests: random nested batches keep structure, types, dtypes, shapes and values."""

from __future__ import annotations

import collections
import dataclasses
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
    return (
        st.dictionaries(st.text(max_size=4), children, max_size=4)
        | st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.builds(Pair, children, children)
        | st.builds(Record, children, children)
        | st.builds(FrozenRecord, children)
        | st.dictionaries(st.text(max_size=3), children, max_size=3).map(
            lambda d: collections.OrderedDict(sorted(d.items()))
        )
    )


batches = st.recursive(leaves, _extend, max_leaves=12)


def _assert_same_shape(before: Any, after: Any, check: Any) -> None:
    """Walk both in step: same types and keys everywhere; ``check`` compares tensors."""
    assert type(before) is type(after)
    if isinstance(before, torch.Tensor):
        check(before, after)
    elif isinstance(before, dict):
        assert list(before) == list(after)
        for key in before:
            _assert_same_shape(before[key], after[key], check)
    elif isinstance(before, (list, tuple)):
        assert len(before) == len(after)
        for x, y in zip(before, after, strict=True):
            _assert_same_shape(x, y, check)
    elif dataclasses.is_dataclass(before):
        for field in dataclasses.fields(before):
            _assert_same_shape(getattr(before, field.name), getattr(after, field.name), check)
    else:
        assert before == after


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
def test_flatten_then_rebuild_is_identity(batch: Any) -> None:
    found, rebuild = flatten_tensors(batch)
    assert len({id(t) for t in found}) == len(found)

    def check(x: torch.Tensor, y: torch.Tensor) -> None:
        assert x is y

    _assert_same_shape(batch, rebuild(found), check)
