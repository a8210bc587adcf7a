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


_VIEW_KINDS = [
    "proxy",
    "proxy_ordered",
    "proxy_default",
    "keys",
    "values",
    "items",
    "ordered_keys",
    "ordered_values",
    "ordered_items",
    "memoryview",
    "range",
    "slice",
    "frozenset",
    "bytes",
    "str",
    "tuple",
]


def _view(kind: str, shown: dict[str, Any]) -> Any:
    """A read-only container or view of ``kind`` over ``shown`` (where it shows a mapping)."""
    ordered = collections.OrderedDict(shown)
    made: dict[str, Any] = {
        "proxy": lambda: types.MappingProxyType(shown),
        "proxy_ordered": lambda: types.MappingProxyType(ordered),
        "proxy_default": lambda: types.MappingProxyType(collections.defaultdict(list, shown)),
        "keys": shown.keys,
        "values": shown.values,
        "items": shown.items,
        "ordered_keys": ordered.keys,
        "ordered_values": ordered.values,
        "ordered_items": ordered.items,
        "memoryview": lambda: memoryview(b"abc"),
        "range": lambda: range(3),
        "slice": lambda: slice(1, 2),
        "frozenset": lambda: frozenset(shown),
        "bytes": lambda: b"ab",
        "str": lambda: "ab",
        "tuple": lambda: tuple(shown.values()),
    }
    return made[kind]()


def _shown_values(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    # A dict view's tensors must already be where the move goes (it comes back as it is):
    # those views show values only, proxies and tuples tensors too.
    values = _LEAVES if kind.startswith("proxy") or kind == "tuple" else st.integers(-2, 2)
    return st.dictionaries(
        st.sampled_from("xyz"), values | st.lists(values, max_size=2), max_size=3
    )


class TestReadOnlyViewsHeldTwice:
    """Every read-only container and view Python has, held in several places, comes back one.

    The oracle: the result holds one object wherever the input held one view
    (identity), a view's items are what the input's showed (tensors moved), and a
    ``MappingProxyType`` whose mapping the batch also holds shows the result's
    mapping (a key written into that mapping is seen through the proxy).
    """

    @pytest.mark.parametrize("kind", _VIEW_KINDS)
    @given(data=st.data(), places=st.integers(2, 4), with_mapping=st.booleans())
    def test_one_object_wherever_it_was(
        self, kind: str, data: st.DataObject, places: int, with_mapping: bool
    ) -> None:
        shown = data.draw(_shown_values(kind))
        if kind == "proxy_ordered" or kind == "proxy_default":
            with_mapping = False  # the proxy shows a mapping made here, held nowhere else
        view = _view(kind, shown)
        batch: dict[str, Any] = {"t": torch.ones(1), "views": []}
        for _ in range(places):  # in a list, a tuple, a dict: several places
            holder = data.draw(st.sampled_from(["list", "tuple", "dict"]))
            batch["views"].append(
                [view] if holder == "list" else (view,) if holder == "tuple" else {"v": view}
            )
        if with_mapping:
            batch["shown"] = shown
        moved = tp.to_device(batch, META)
        found = [next(iter(h.values())) if isinstance(h, dict) else h[0] for h in moved["views"]]
        assert all(f is found[0] for f in found), (
            f"a {kind} held {places} times came back as several"
        )
        first = found[0]
        assert type(first) is type(view)
        if kind.startswith("proxy"):
            assert list(first) == list(view)
            for key in view:
                assert _same_shape(view[key], first[key])
            if with_mapping:
                moved["shown"]["probe"] = 1  # the result's mapping, seen through the result's proxy
                assert first["probe"] == 1 and "probe" not in view
        elif kind == "tuple":
            assert all(map(_same_shape, view, first))
        else:
            assert first is view or first == view  # values: as they were


def _same_shape(a: Any, b: Any) -> bool:
    """``b`` is ``a`` moved: tensors on meta of the same shape, other values equal."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and b.is_meta and a.shape == b.shape
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same_shape, a, b))
    return bool(a == b)


def test_a_mapping_proxy_held_twice_comes_back_as_one() -> None:
    # Found by the b33 break-it pass: the proxy and a list it shows with the rest of
    # the batch came back as two.
    shown: list[Any] = [torch.ones(1)]
    view = types.MappingProxyType({"x": shown})
    moved = tp.to_device([view, view, shown], META)
    assert moved[0] is moved[1] and moved[0]["x"] is moved[2]
