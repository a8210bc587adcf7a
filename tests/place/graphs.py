"""Object graphs for the invariant tests: one class of each kind a batch holds, and strategies.

Every class here stands for a class of inputs that once came back with a tensor
left behind, modified or rebuilt wrong: attrs classes (slotted, frozen, with a
``__attrs_post_init__``), pydantic models (frozen, with extra and private
attributes), plain classes (``__dict__``, ``__slots__`` with a mangled name, both,
a ``functools.cached_property``, attributes forwarded by ``__getattr__``),
``torch.distributions`` objects, container subclasses with tensor attributes,
a custom ``Mapping`` whose constructor takes other arguments, namedtuples (one
whose ``__new__`` transforms its arguments, one with instance attributes),
``OrderedDict`` after ``move_to_end``, and a stand-in for PyTorch Geometric's
``Data``/``Batch``/``HeteroData`` whose ``.to`` works in place (written from
PyG's ``torch_geometric/data/storage.py`` and ``data.py``: a storage that is a
``MutableMapping`` over ``_mapping`` with a weak ``_parent``, ``__copy__`` and
``__deepcopy__`` that repoint it, attribute access forwarded to the storage).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import functools
import types
import weakref
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, NamedTuple

import attrs
import pydantic
import torch
from hypothesis import strategies as st

# --- dataclasses, attrs, pydantic ----------------------------------------------------------


@dataclasses.dataclass
class Record:
    a: Any
    b: Any = None


@dataclasses.dataclass(frozen=True)
class FrozenRecord:
    a: Any


@dataclasses.dataclass(slots=True)
class SlotRecord:
    a: Any


@dataclasses.dataclass
class Counted:
    """``__post_init__`` changes a field: running it again would be seen."""

    a: Any
    n: int = 0

    def __post_init__(self) -> None:
        self.n += 1


@attrs.define
class AttrsSlotted:
    a: Any
    b: Any = None


@attrs.frozen
class AttrsFrozen:
    a: Any


@attrs.define(slots=False)
class AttrsCounted:
    a: Any
    n: int = 0

    def __attrs_post_init__(self) -> None:
        self.n += 1


class Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True, extra="allow")

    a: Any
    b: Any = None
    _note: Any = pydantic.PrivateAttr(default=None)


class FrozenModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True, frozen=True)

    a: Any


def model(a: Any, b: Any, extra: Any, note: Any) -> Model:
    m = Model(a=a, b=b, extra_field=extra)
    m._note = note
    return m


# --- plain classes ---------------------------------------------------------------------------


class Plain:
    def __init__(self, a: Any, b: Any) -> None:
        self.a = a
        self.b = b


class Slotted:
    __slots__ = ("__hidden", "a")

    def __init__(self, a: Any, hidden: Any) -> None:
        self.a = a
        self.__hidden = hidden


class SlottedWithDict(Slotted):
    def __init__(self, a: Any, hidden: Any, c: Any) -> None:
        super().__init__(a, hidden)
        self.c = c


class Cached:
    def __init__(self, a: Any) -> None:
        self.a = a

    @functools.cached_property
    def view(self) -> Any:
        return self.a  # the very child: the cache shares it


def cached(a: Any, warm: bool) -> Cached:
    obj = Cached(a)
    if warm:
        _ = obj.view
    return obj


class Forwarding:
    """Attribute reads go to ``_inner`` (``__getattr__``), as PyG's objects do."""

    def __init__(self, a: Any) -> None:
        self.__dict__["_inner"] = {"a": a}

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_inner"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__["_inner"][name] = value


class Boxed:
    """A ``.to`` that returns a new object, as most hand-written ones do."""

    def __init__(self, a: Any) -> None:
        self.a = a

    def to(self, device: Any, non_blocking: bool = False) -> Boxed:
        return Boxed(self.a.to(device) if isinstance(self.a, torch.Tensor) else self.a)


# --- torch.distributions ---------------------------------------------------------------------


def normal(loc: torch.Tensor) -> torch.distributions.Normal:
    return torch.distributions.Normal(loc, loc.abs() + 1, validate_args=False)


def independent(loc: torch.Tensor) -> torch.distributions.Independent:
    return torch.distributions.Independent(normal(loc), 1, validate_args=False)


def mixture(loc: torch.Tensor) -> torch.distributions.MixtureSameFamily:
    k = loc.shape[-1]
    mix = torch.distributions.Categorical(logits=torch.zeros(k), validate_args=False)
    return torch.distributions.MixtureSameFamily(mix, normal(loc), validate_args=False)


# --- containers -------------------------------------------------------------------------------


class TagDict(dict[str, Any]):
    pass


class TagList(list[Any]):
    pass


class OwnedDict(dict[str, Any]):
    """Its constructor takes an owner first: ``type(d)(items)`` would break it."""

    def __init__(self, owner: Any, items: dict[str, Any]) -> None:
        super().__init__(items)
        self.owner = owner


class TagTuple(tuple[Any, ...]):
    def __new__(cls, a: Any, b: Any) -> TagTuple:
        return super().__new__(cls, (a, b))


class MyUserDict(collections.UserDict[str, Any]):
    pass


class Encoding(collections.UserDict[str, Any]):
    """HuggingFace's ``BatchEncoding`` in outline: ``data`` plus encodings and a count."""

    def __init__(self, data: dict[str, Any], encodings: list[Any] | None = None) -> None:
        super().__init__(data)
        self._encodings = encodings
        self._n_sequences = 1

    def __getattr__(self, item: str) -> Any:
        try:
            return self.data[item]
        except KeyError:
            raise AttributeError(item) from None

    def __getstate__(self) -> dict[str, Any]:
        return {"data": self.data, "encodings": self._encodings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "data" in state:
            self.data = state["data"]
        if "encodings" in state:
            self._encodings = state["encodings"]

    def to(self, device: Any) -> Encoding:
        """In place, as ``BatchEncoding.to`` works (torchport walks it instead)."""
        self.data = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in self.items()}
        return self


class StarList(list[Any]):
    """``StarList(items)`` would nest the items one level deeper."""

    def __init__(self, *items: Any) -> None:
        super().__init__(items)


class Window(collections.deque[Any]):
    def __init__(self, items: list[Any]) -> None:
        super().__init__(items, maxlen=len(items) + 1)


class Store(MutableMapping[str, Any]):
    """A custom Mapping whose constructor takes a name first: ``type(m)(items)`` breaks it."""

    def __init__(self, name: str, **items: Any) -> None:
        self.name = name
        self._items = dict(items)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._items[key] = value

    def __delitem__(self, key: str) -> None:
        del self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def with_attr(container: Any, value: Any) -> Any:
    container.extra = value
    return container


def reordered(items: dict[str, Any], to_end: int) -> collections.OrderedDict[str, Any]:
    od = collections.OrderedDict(items)
    if od:
        od.move_to_end(list(od)[to_end % len(od)])
    return od


# --- namedtuples -------------------------------------------------------------------------------


class Pair(NamedTuple):
    left: Any
    right: Any


class Scaled(Pair):
    """``__new__`` transforms an argument: calling it again on the fields doubles twice."""

    def __new__(cls, left: Any, factor: int) -> Scaled:
        return super().__new__(cls, left, factor * 2)


class TaggedPair(Pair):
    """A namedtuple subclass without ``__slots__``: its instances take attributes."""


def tagged_pair(left: Any, right: Any, extra: Any) -> TaggedPair:
    pair = TaggedPair(left, right)
    pair.extra = extra  # type: ignore[attr-defined]
    return pair


# --- a stand-in for PyTorch Geometric's Data / Batch / HeteroData ------------------------------


class Storage(MutableMapping[str, Any]):
    """PyG's ``BaseStorage``: items in ``_mapping``, a weak ``_parent``, ``.to`` in place."""

    def __init__(self, _mapping: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.__dict__["_mapping"] = {}
        for key, value in {**(_mapping or {}), **kwargs}.items():
            setattr(self, key, value)

    def __getattr__(self, key: str) -> Any:
        if key == "_mapping":
            self.__dict__["_mapping"] = {}
            return self.__dict__["_mapping"]
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key: str, value: Any) -> None:
        if key == "_parent":
            self.__dict__[key] = weakref.ref(value)
        elif key[:1] == "_":
            self.__dict__[key] = value
        else:
            self[key] = value

    def __getitem__(self, key: str) -> Any:
        return self._mapping[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if value is None and key in self._mapping:
            del self._mapping[key]
        elif value is not None:
            self._mapping[key] = value

    def __delitem__(self, key: str) -> None:
        del self._mapping[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping)

    def __len__(self) -> int:
        return len(self._mapping)

    def __copy__(self) -> Storage:
        out = self.__class__.__new__(self.__class__)
        for key, value in self.__dict__.items():
            out.__dict__[key] = value
        out.__dict__["_mapping"] = copy.copy(out._mapping)
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> Storage:
        out = self.__class__.__new__(self.__class__)
        for key, value in self.__dict__.items():
            out.__dict__[key] = value
        out.__dict__["_mapping"] = copy.deepcopy(out._mapping, memo)
        return out

    def apply(self, func: Callable[[torch.Tensor], torch.Tensor]) -> Storage:
        for key, value in self.items():
            self[key] = _recursive_apply(value, func)
        return self

    def to(self, device: Any, non_blocking: bool = False) -> Storage:
        return self.apply(lambda x: x.to(device=device, non_blocking=non_blocking))


def _recursive_apply(data: Any, func: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(data, torch.Tensor):
        return func(data)
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_recursive_apply(d, func) for d in data))
    if isinstance(data, Sequence) and not isinstance(data, str):
        return [_recursive_apply(d, func) for d in data]
    if isinstance(data, Mapping):
        return {key: _recursive_apply(data[key], func) for key in data}
    try:  # PyG hands every other value to func too, and keeps it when func fails
        return func(data)
    except Exception:
        return data


def pyg_values(value: Any) -> Any:
    """``value`` with its tuples made lists, the way PyG's ``.to`` would give them back.

    PyG's own ``.to`` rebuilds tuples as lists and namedtuples through their class;
    a stand-in holding those would be changed by its own ``.to``, not by to_device.
    """
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [pyg_values(item) for item in value]
    if isinstance(value, Mapping):
        return {key: pyg_values(value[key]) for key in value}
    return value


class Data:
    """PyG's ``Data``: attributes forwarded to one ``_store``; ``.to`` moves it in place."""

    def __init__(self, **kwargs: Any) -> None:
        self.__dict__["_store"] = Storage()
        self._store._parent = self
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __getattr__(self, key: str) -> Any:
        if "_store" not in self.__dict__:
            raise AttributeError(key)
        return getattr(self._store, key)

    def __setattr__(self, key: str, value: Any) -> None:
        setattr(self._store, key, value)

    @property
    def stores(self) -> list[Storage]:
        return [self._store]

    def __copy__(self) -> Data:
        out = self.__class__.__new__(self.__class__)
        for key, value in self.__dict__.items():
            out.__dict__[key] = value
        out.__dict__["_store"] = copy.copy(self._store)
        out._store._parent = out
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> Data:
        out = self.__class__.__new__(self.__class__)
        for key, value in self.__dict__.items():
            out.__dict__[key] = copy.deepcopy(value, memo)
        out._store._parent = out
        return out

    def apply(self, func: Callable[[torch.Tensor], torch.Tensor]) -> Data:
        for store in self.stores:
            store.apply(func)
        return self

    def to(self, device: Any, non_blocking: bool = False) -> Data:
        return self.apply(lambda x: x.to(device=device, non_blocking=non_blocking))


class Batch(Data):
    """PyG's ``Batch``: a ``Data`` whose store also keeps ``_slice_dict`` (CPU tensors).

    As in PyG, ``batch._slice_dict = ...`` lands in the store's ``__dict__``, which the
    store's ``__deepcopy__`` shares with the original (only ``_mapping`` is deep-copied)
    and its ``.to`` leaves where it is.
    """


def moved_by_hand(value: Any, device: Any) -> Any:
    """``value`` with each tensor in it (through dicts and lists) ``.to(device)``: what a
    hand-written ``.to`` of a test's class does to its state."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: moved_by_hand(v, device) for k, v in value.items()}
    if isinstance(value, list):
        return [moved_by_hand(v, device) for v in value]
    return value


def batch(x: Any, y: Any, slices: torch.Tensor) -> Batch:
    out = Batch(x=x, y=y)
    out._slice_dict = {"x": slices}
    return out


class Cloning:
    """TensorDict's kind: ``__deepcopy__`` clones every tensor (the memo is ignored), ``.to``
    returns a new object and ``__copy__`` a shallow one."""

    def __init__(self, items: dict[str, torch.Tensor]) -> None:
        self._items = dict(items)

    def __copy__(self) -> Cloning:
        return Cloning(self._items)

    def __deepcopy__(self, memo: dict[int, Any]) -> Cloning:
        return Cloning({key: value.clone() for key, value in self._items.items()})

    def to(self, device: Any, non_blocking: bool = False) -> Cloning:
        moved = {k: v.to(device, non_blocking=non_blocking) for k, v in self._items.items()}
        return Cloning(moved)


class HeteroData(Data):
    """PyG's ``HeteroData``, cut down: a global store plus one store per node type."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.__dict__["_node_store_dict"] = {}

    def add_node_type(self, name: str, **items: Any) -> None:
        store = Storage(**items)
        store._parent = self
        self.__dict__["_node_store_dict"][name] = store

    @property
    def stores(self) -> list[Storage]:
        return [self._store, *self.__dict__["_node_store_dict"].values()]

    def __copy__(self) -> HeteroData:
        out = super().__copy__()
        assert isinstance(out, HeteroData)
        out.__dict__["_node_store_dict"] = {}
        for name, store in self.__dict__["_node_store_dict"].items():
            out.__dict__["_node_store_dict"][name] = copy.copy(store)
            out.__dict__["_node_store_dict"][name]._parent = out
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> HeteroData:
        out = super().__deepcopy__(memo)
        assert isinstance(out, HeteroData)
        for store in out.__dict__["_node_store_dict"].values():
            store._parent = out
        return out


def hetero(x: Any, paper: Any) -> HeteroData:
    out = HeteroData(x=x)
    out.add_node_type("paper", x=paper)
    return out


# --- strategies --------------------------------------------------------------------------------

DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64, torch.bool]


def make_tensor(dtype: torch.dtype, shape: list[int], seed: int, layout: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    base = torch.randn(shape, generator=gen) * 10
    t = base > 0 if dtype == torch.bool else base.to(dtype)
    if layout == 1 and t.dim() >= 2:
        t = t.transpose(0, 1)  # non-contiguous strides
    elif layout == 2:
        t = t.to("meta")  # already on the target
    return t


tensors = st.builds(
    make_tensor,
    st.sampled_from(DTYPES),
    st.lists(st.integers(0, 3), max_size=3),
    st.integers(0, 2**16),
    st.sampled_from([0, 0, 0, 1, 2]),
)
float_vectors = st.builds(
    lambda n, seed: torch.randn(n, generator=torch.Generator().manual_seed(seed)),
    st.integers(1, 3),
    st.integers(0, 2**16),
)


_SHARED: list[torch.Tensor] = [torch.ones(2), torch.arange(3)]


def leaves(pool: list[torch.Tensor]) -> st.SearchStrategy[Any]:
    """Tensors (often from ``pool``, so that they are shared) and plain values."""
    shared = st.integers(0, len(pool) - 1).map(pool.__getitem__)
    return shared | tensors | st.integers(-3, 3) | st.text(max_size=2) | st.none()


def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(["a", "b", "ids", "x"])
    leaves_only = tensors | st.sampled_from(_SHARED)
    dicts = st.dictionaries(keys, children, max_size=3)
    pairs = st.tuples(children, children)
    return st.one_of(
        dicts,
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.builds(reordered, dicts, st.integers(0, 3)),
        st.builds(Record, children, children),
        st.builds(FrozenRecord, children),
        st.builds(SlotRecord, children),
        st.builds(Counted, children),
        st.builds(AttrsSlotted, children, children),
        st.builds(AttrsFrozen, children),
        st.builds(AttrsCounted, children),
        st.builds(model, children, children, children, children),
        st.builds(FrozenModel, a=children),
        st.builds(Plain, children, children),
        st.builds(Slotted, children, children),
        st.builds(SlottedWithDict, children, children, children),
        st.builds(cached, children, st.booleans()),
        st.builds(Forwarding, children),
        st.builds(Boxed, children),
        st.builds(normal, float_vectors),
        st.builds(independent, float_vectors),
        st.builds(mixture, float_vectors),
        st.builds(with_attr, dicts.map(TagDict), children),
        st.builds(with_attr, st.lists(children, max_size=2).map(TagList), children),
        st.builds(with_attr, pairs.map(lambda p: TagTuple(*p)), children),
        st.builds(with_attr, dicts.map(MyUserDict), children),
        st.builds(Encoding, st.dictionaries(keys, leaves_only, max_size=3)),
        st.builds(Encoding, dicts, st.lists(st.integers(), max_size=2) | st.none()),
        st.builds(with_attr, dicts.map(lambda d: Store("s", **d)), children),
        st.builds(Pair, children, children),
        st.builds(Scaled, children, st.integers(-2, 2)),
        st.builds(tagged_pair, children, children, children),
        st.builds(lambda d: Data(**pyg_values(d)), dicts),
        st.builds(
            batch,
            children.map(pyg_values),
            children.map(pyg_values),
            st.just(torch.tensor([0, 2, 4])),
        ),
        st.builds(hetero, children.map(pyg_values), children.map(pyg_values)),
        st.builds(Cloning, st.dictionaries(keys, leaves_only, max_size=3)),
        st.builds(OwnedDict, children, dicts),
        st.lists(children, max_size=2).map(lambda items: StarList(*items)),
        st.lists(children, max_size=2).map(Window),
        dicts.map(types.MappingProxyType),
        st.lists(dicts, min_size=1, max_size=2).map(lambda maps: collections.ChainMap(*maps)),
        st.frozensets(st.integers(0, 3) | tensors, max_size=2),
        st.sets(tensors, max_size=2),
    )


def graphs(pool: list[torch.Tensor], max_leaves: int = 10) -> st.SearchStrategy[Any]:
    """Nested object graphs mixing every class above, sharing tensors from ``pool``."""
    return st.recursive(leaves(pool), extend, max_leaves=max_leaves)


def objects_in(root: Any) -> list[Any]:
    """The objects of a graph that take a new attribute (to close a cycle through one)."""
    found: list[Any] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen or isinstance(node, torch.Tensor):
            continue
        seen.add(id(node))
        if type(node) in (Plain, Record, SlottedWithDict, AttrsCounted):
            found.append(node)
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
        elif hasattr(node, "__dict__") and not isinstance(node, type):
            stack.extend(vars(node).values())
    return found
