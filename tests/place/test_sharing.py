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
import functools
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


@pytest.mark.parametrize("held", [[], {}, [1, "a"], ("t",), collections.deque()])
@pytest.mark.parametrize("where", ["first", "last", "deep"])
def test_a_container_an_unmoved_object_holds_is_the_input_s_everywhere(
    held: Any, where: str
) -> None:
    # An object in which nothing moves comes back as the very object, holding the
    # input's own container: every other place the batch holds that container takes
    # it too (hypothesis found `[[], Box(None, [])]` coming back as two lists).
    box = Box(None, held) if where != "deep" else Box(None, [Pair(held, 1)])
    batch = [held, box, torch.ones(1)] if where != "last" else [box, torch.ones(1), held]
    moved = tp.to_device(batch, META)
    _assert_sharing_kept(batch, moved)


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


class RebuildsAll:
    """An own ``.to`` that rebuilds every container it holds, as PyG's ``apply`` does.

    (One ``.to`` call keeps its own sharing: a container held twice inside is rebuilt once.)
    """

    def __init__(self, **state: Any) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(**{vars(self)!r})"

    def to(self, device: Any) -> Any:
        out = object.__new__(type(self))
        memo: dict[int, Any] = {}
        out.__dict__.update({k: self._rebuilt(v, device, memo) for k, v in vars(self).items()})
        return out

    def _rebuilt(self, value: Any, device: Any, memo: dict[int, Any]) -> Any:
        if isinstance(value, torch.Tensor):
            return value.to(device)
        if id(value) in memo:
            return memo[id(value)]
        again = functools.partial(self._rebuilt, device=device, memo=memo)
        out: Any
        if isinstance(value, dict):
            out = type(value)((k, again(v)) for k, v in value.items())
            self._mark(out)
        elif isinstance(value, Pair):
            out = Pair(*map(again, value))
        elif isinstance(value, Box):
            out = Box(again(value.first), again(value.second))
        elif isinstance(value, list | tuple | collections.deque | set | frozenset):
            out = type(value)(map(again, value))
        else:
            return value
        memo[id(value)] = out
        return out

    def _mark(self, rebuilt: dict[Any, Any]) -> None:
        pass


class MarksDicts(RebuildsAll):
    """An own ``.to`` that rebuilds its containers and adds a key to every dict it rebuilds."""

    def _mark(self, rebuilt: dict[Any, Any]) -> None:
        rebuilt["moved"] = True


def _edge_pairs(old: Any, new: Any, path: str = "batch") -> Iterator[tuple[str, Any, Any]]:
    """Every (path, input node, result node) at the same place, into own-``.to`` objects too.

    Dicts are paired by the keys both hold (a ``.to`` may add keys).
    """
    yield path, old, new
    if isinstance(old, torch.Tensor | int | str | type(None)):
        return
    assert type(new) is type(old), f"{path}: {type(new).__name__} for {type(old).__name__}"
    if isinstance(old, dict):
        for key in old:
            if key in new:
                yield from _edge_pairs(old[key], new[key], f"{path}[{key!r}]")
    elif isinstance(old, list | tuple | collections.deque):
        assert len(old) == len(new), path
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _edge_pairs(a, b, f"{path}[{i}]")
    elif isinstance(old, Box):
        yield from _edge_pairs(old.first, new.first, f"{path}.first")
        yield from _edge_pairs(old.second, new.second, f"{path}.second")
    elif isinstance(old, RebuildsAll):
        for name, value in vars(old).items():
            yield from _edge_pairs(value, vars(new)[name], f"{path}.{name}")


def _inside_and_out(batch: dict[str, Any]) -> tuple[list[set[int]], set[int]]:
    """The ids of the dicts inside each own-``.to`` object, and of every node outside them."""
    outside: set[int] = set()
    inside: list[set[int]] = []
    for mover in batch["movers"]:
        found = {id(node) for _, node, _ in _edge_pairs(mover, mover) if isinstance(node, dict)}
        inside.append(found - {id(vars(mover))})
    for node in batch["outer"]:
        if not isinstance(node, RebuildsAll):
            outside |= {id(n) for _, n, _ in _edge_pairs(node, node)}
    return inside, outside


@st.composite
def _edge_batches(draw: st.DrawFn) -> dict[str, Any]:
    """Containers from a pool held inside objects with their own ``.to`` and outside them."""
    pool: list[Any] = []
    for _ in range(draw(st.integers(1, 3))):
        reuse = st.sampled_from(pool) if pool else _TENSORS
        pool.append(draw(_node(_LEAVES | reuse | reuse)))
    cls = draw(st.sampled_from([RebuildsAll, MarksDicts]))
    held = st.sampled_from(pool) | st.sampled_from(pool) | _LEAVES
    movers = [
        cls(**{f"a{i}": draw(held) for i in range(draw(st.integers(1, 3)))})
        for _ in range(draw(st.integers(1, 2)))
    ]
    outer = draw(st.lists(st.sampled_from(pool) | st.sampled_from(movers), min_size=1, max_size=4))
    return {"movers": movers, "outer": outer}


class TestContainersHeldAcrossAnOwnToEdge:
    """A container inside an object moved by its own ``.to`` and elsewhere comes back as one.

    The oracle pairs input and result side by side (into own-``.to`` objects by
    their attributes) and asks that every input node held in several places comes
    back as one object, every tensor on the target. A ``.to`` that rebuilds its
    containers as they were (``RebuildsAll``) is always joined; one that adds a key
    to each dict it rebuilds (``MarksDicts``) cannot be, where such a dict is also
    held outside it (or in another such object) and its ``.to`` runs: the move
    then raises, and only then.
    """

    @settings(deadline=None)
    @given(batch=_edge_batches())
    def test_one_object_or_a_clear_error(self, batch: dict[str, Any]) -> None:
        inside, outside = _inside_and_out(batch)
        moving = [bool(_tensors_in(m)) for m in batch["movers"]]
        # Two such objects whose .to both run give the same rebuild: those are joined.
        kept = set(outside).union(
            *(f for f, moves in zip(inside, moving, strict=True) if not moves)
        )
        clash = isinstance(batch["movers"][0], MarksDicts) and any(
            moves and not found.isdisjoint(kept)
            for found, moves in zip(inside, moving, strict=True)
        )
        if clash:
            with pytest.raises(tp.UnsupportedBatchError, match="held both inside"):
                tp.to_device(batch, META)
            return
        moved = tp.to_device(batch, META)
        to_new: dict[int, int] = {}
        for path, a, b in _edge_pairs(batch, moved):
            if isinstance(a, torch.Tensor):
                assert b.is_meta, path
            elif not isinstance(a, int | str | type(None)):
                assert to_new.setdefault(id(a), id(b)) == id(b), f"{path}: came back as two"

    @given(
        shown=st.dictionaries(st.sampled_from("xyz"), _LEAVES, max_size=3),
        wrap=st.sampled_from(["bare", "list", "tuple", "box"]),
    )
    def test_a_dict_its_to_changes_is_refused(self, shown: dict[str, Any], wrap: str) -> None:
        outer: Any = {
            "bare": shown,
            "list": [shown],
            "tuple": (shown, 1),
            "box": Box(shown, None),
        }[wrap]
        obj = MarksDicts(table=outer, weight=torch.ones(1))
        with pytest.raises(tp.UnsupportedBatchError, match="held both inside"):
            tp.to_device({"obj": obj, "table": shown}, META)
        assert obj.table is outer and "moved" not in shown  # the input as it was


def _tensors_in(node: Any) -> list[torch.Tensor]:
    return [a for _, a, _ in _edge_pairs(node, node) if isinstance(a, torch.Tensor)] + [
        t
        for _, a, _ in _edge_pairs(node, node)
        if isinstance(a, set | frozenset)
        for t in a
        if isinstance(t, torch.Tensor)
    ]


class OwnInner:
    """An object with its own ``.to`` (a copy with its tensor moved)."""

    def __init__(self, t: torch.Tensor) -> None:
        self.t = t

    def to(self, device: Any) -> OwnInner:
        out = object.__new__(OwnInner)
        out.t = self.t.to(device)
        return out


class OwnOuter:
    """An object with its own ``.to`` that holds an ``OwnInner`` and calls its ``.to``."""

    def __init__(self, held: Any) -> None:
        self.held = held
        self.b = torch.ones(1)

    def to(self, device: Any) -> OwnOuter:
        out = object.__new__(OwnOuter)
        out.held = _moved_inner(self.held, device)
        out.b = self.b.to(device)
        return out


def _moved_inner(value: Any, device: Any) -> Any:
    if isinstance(value, OwnInner):
        return value.to(device)
    if isinstance(value, dict):
        return {k: _moved_inner(v, device) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved_inner(v, device) for v in value]
    return value


_around = st.sampled_from(["bare", "dict", "list"])  # how OwnOuter holds the inner object
_outside = st.sampled_from(["dict", "list", "tuple", "nested"])  # where the batch holds it too


@given(_around, _outside, st.booleans(), st.booleans())
def test_an_own_to_object_inside_another_and_elsewhere_comes_back_as_one(
    around: str, outside: str, outer_twice: bool, inner_first: bool
) -> None:
    # Found by the x33 break-it pass: the inner object came back as two (no error).
    inner = OwnInner(torch.ones(2))
    held = {"bare": inner, "dict": {"k": inner}, "list": [inner]}[around]
    outer = OwnOuter(held)
    parts = [inner, outer, outer] if outer_twice else [inner, outer]
    if not inner_first:
        parts.reverse()
    batch: Any = {
        "dict": dict(enumerate(parts)),
        "list": parts,
        "tuple": tuple(parts),
        "nested": {"a": [tuple(parts)]},
    }[outside]
    moved = tp.to_device(batch, META)
    flat = list(
        {"dict": lambda b: b.values(), "nested": lambda b: b["a"][0]}.get(outside, list)(moved)
    )
    inners = [x for x in flat if isinstance(x, OwnInner)]
    outers = [x for x in flat if isinstance(x, OwnOuter)]
    assert len({id(x) for x in outers}) == 1  # the outer object held twice: one
    inside = {"bare": lambda h: h, "dict": lambda h: h["k"], "list": lambda h: h[0]}[around]
    assert inside(outers[0].held) is inners[0]  # held twice: one
    assert inners[0].t.is_meta and outers[0].b.is_meta
    assert not inner.t.is_meta and outer.held is held  # the input as it was
