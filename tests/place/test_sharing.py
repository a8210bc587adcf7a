"""Sharing at every level: a container or object held twice in a batch comes back as one.

The oracle, apart from the code under test, walks the input and the result side by
side (builtin containers and their subclasses by their items, dataclasses by their
fields) and pairs each input node with the result node at the same place. Sharing
is kept when every input node pairs with one result node and every result node with
one input node: held twice in the input, one object in the result; distinct in the
input, distinct in the result. Graphs are generated with containers drawn from a
pool, so the same list, dict, tuple, deque, set or dataclass lands in several places,
empty ones too. A batch that holds itself is refused with an error naming its path.
"""

from __future__ import annotations

import collections
import dataclasses
import types
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport as tp

META = torch.device("meta")


class Pair(NamedTuple):
    left: Any
    right: Any


@dataclasses.dataclass
class Box:
    first: Any
    second: Any


def _pairs(old: Any, new: Any, path: str = "batch") -> Iterator[tuple[str, Any, Any]]:
    """Every (path, input node, result node) at the same place; tensors end a path."""
    yield path, old, new
    if isinstance(old, torch.Tensor):
        return
    assert type(new) is type(old), f"{path}: {type(new).__name__} for {type(old).__name__}"
    if isinstance(old, dict):
        assert list(old) == list(new), path
        for key in old:
            yield from _pairs(old[key], new[key], f"{path}[{key!r}]")
    elif isinstance(old, list | tuple | collections.deque):
        assert len(old) == len(new), path
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _pairs(a, b, f"{path}[{i}]")
    elif isinstance(old, set | frozenset):
        assert len(old) == len(new), path  # items hashable: the node's own identity is paired
    elif dataclasses.is_dataclass(old):
        for field in dataclasses.fields(old):
            yield from _pairs(
                getattr(old, field.name), getattr(new, field.name), f"{path}.{field.name}"
            )


def _assert_sharing_kept(old: Any, new: Any) -> None:
    to_new: dict[int, int] = {}
    to_old: dict[int, int] = {}
    for path, a, b in _pairs(old, new):
        if isinstance(a, int | str | type(None)):
            continue  # values: Python may share equal ones on its own
        assert to_new.setdefault(id(a), id(b)) == id(b), f"{path}: held twice, came back as two"
        assert to_old.setdefault(id(b), id(a)) == id(a), f"{path}: two nodes came back as one"


_TENSORS = st.integers(0, 20).map(lambda i: torch.full((2,), float(i)))
_LEAVES = _TENSORS | st.integers(-2, 2) | st.none() | st.sampled_from(["a", "b"])
_HASHABLE = _TENSORS | st.integers(-2, 2) | st.sampled_from(["a", "b"])


def _node(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    items = st.lists(children, max_size=3)
    return st.one_of(
        items,
        items.map(tuple),
        items.map(collections.deque),
        st.dictionaries(st.sampled_from("xyz"), children, max_size=3),
        st.dictionaries(st.sampled_from("xyz"), children, max_size=3).map(collections.OrderedDict),
        st.tuples(children, children).map(lambda p: Pair(*p)),
        st.tuples(children, children).map(lambda p: Box(*p)),
        st.sets(_HASHABLE, max_size=3),
        st.frozensets(_HASHABLE, max_size=3),
    )


@st.composite
def _shared_graphs(draw: st.DrawFn) -> Any:
    """A graph whose containers come from a pool, so one may sit in several places."""
    pool: list[Any] = []
    for _ in range(draw(st.integers(1, 5))):
        reuse = st.sampled_from(pool) if pool else _LEAVES
        pool.append(draw(_node(_LEAVES | reuse | reuse)))
    return draw(_node(st.sampled_from(pool) | _LEAVES))


@settings(max_examples=150, deadline=None)
@given(batch=_shared_graphs(), target=st.sampled_from(["meta", "cpu"]))
def test_a_container_held_twice_comes_back_as_one(batch: Any, target: str) -> None:
    moved = tp.to_device(batch, target)
    _assert_sharing_kept(batch, moved)
    for _, a, b in _pairs(batch, moved):
        if isinstance(a, torch.Tensor):
            assert b.device.type == target


def test_shared_containers_seen_by_hand() -> None:
    ids: list[Any] = [1, 2]
    empty: dict[str, Any] = {}
    x = torch.ones(3)
    meta = (ids, "tag")
    batch = {"a": ids, "b": ids, "c": [empty, empty], "d": (meta, meta), "box": Box(ids, x)}
    moved = tp.to_device(batch, META)
    assert moved["a"] is moved["b"] is moved["box"].first
    assert moved["c"][0] is moved["c"][1] and moved["d"][0] is moved["d"][1]
    assert moved["box"].second.is_meta and moved["a"] is not ids


def test_sizes_and_torch_return_types_held_twice() -> None:
    x = torch.arange(6.0).reshape(2, 3)
    tags: list[Any] = ["a"]
    best = torch.max(x, 0)  # a structseq (torch.return_types.max)
    shape = x.shape
    batch = {"best": [best, best], "shape": [shape, shape], "tags": (tags, tags)}
    moved = tp.to_device(batch, META)
    assert moved["best"][0] is moved["best"][1] and moved["best"][0].values.is_meta
    assert type(moved["best"][0]) is type(best)
    assert moved["shape"][0] is shape and moved["tags"][0] is moved["tags"][1]


def test_a_batch_that_holds_itself_is_refused_naming_the_path() -> None:
    loop: list[Any] = [torch.ones(1)]
    loop.append({"again": loop})
    with pytest.raises(tp.UnsupportedBatchError, match="batch"):
        tp.to_device(loop, META)


@pytest.mark.xfail(strict=True, reason="a MappingProxyType is rebuilt each time it is met")
def test_a_mapping_proxy_held_twice_comes_back_as_one() -> None:
    # Found by the b33 break-it pass and left open: the sharing walk does not look into
    # proxies (a rebuilt proxy's mapping cannot be written through it), so the proxy
    # and a list it shows with the rest of the batch come back as two.
    shown: list[Any] = [torch.ones(1)]
    view = types.MappingProxyType({"x": shown})
    moved = tp.to_device([view, view, shown], META)
    assert moved[0] is moved[1] and moved[0]["x"] is moved[2]
