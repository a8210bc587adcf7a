"""One test per class of input that once came back with a tensor left behind or rebuilt wrong.

Each case is new (not the example that found the class): a different field, a
different way for a constructor to transform its arguments, a different place for
a tensor to hide. Checks go through the public API and read the result with plain
attribute access.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import functools
import threading
import types
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import attrs
import numpy
import pydantic
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load

META = torch.device("meta")


pyg = load("graphs")  # the stand-ins for PyTorch Geometric's Data, Batch and HeteroData


def on_meta(*tensors: torch.Tensor) -> bool:
    return all(t.device == META for t in tensors)


# --- objects without .to: attrs, pydantic, plain classes, torch.distributions ----------------


def _scaled(value: torch.Tensor) -> torch.Tensor:
    return value * 10


@attrs.define
class Sample:
    """A converter runs in __init__: running it again would scale twice."""

    pixels: torch.Tensor = attrs.field(converter=_scaled)
    label: int = 0
    weights: list[torch.Tensor] = attrs.Factory(list)


@attrs.frozen(slots=False)
class Frozen:
    mask: torch.Tensor
    name: str

    @functools.cached_property
    def count(self) -> torch.Tensor:
        return self.mask.sum()


def test_attrs_objects_move_without_converters_or_setattr() -> None:
    sample = Sample(torch.ones(2), label=3, weights=[torch.zeros(1), torch.full((1,), 2.0)])
    frozen = Frozen(torch.ones(3, dtype=torch.bool), "f")
    _ = frozen.count  # cached in __dict__
    out = tp.to_device({"s": sample, "f": frozen}, "cpu", dtype=torch.float64)
    s, f = out["s"], out["f"]
    assert type(s) is Sample and torch.equal(s.pixels, torch.full((2,), 10.0, dtype=torch.float64))
    assert s.label == 3 and [w.dtype for w in s.weights] == [torch.float64] * 2
    assert type(f) is Frozen and f.name == "f" and vars(f)["count"].item() == 3
    moved = tp.to_device(frozen, "meta")
    assert on_meta(moved.mask, vars(moved)["count"])
    assert not frozen.mask.is_meta and sample.pixels.dtype == torch.float32  # input as it was


class Encoded(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True, extra="allow", frozen=True)

    tokens: torch.Tensor
    lengths: list[int]
    _cache: Any = pydantic.PrivateAttr(default=None)

    @pydantic.field_validator("lengths")
    @classmethod
    def _count_calls(cls, value: list[int]) -> list[int]:
        return [*value, -1]  # validation changes the value: it must not run again


def test_pydantic_models_move_fields_extras_and_private_state() -> None:
    model = Encoded(tokens=torch.arange(6), lengths=[2, 4], segments=torch.zeros(2, 3))
    model._cache = {"embedding": torch.ones(4)}
    out = tp.to_device([model], "meta")[0]
    assert type(out) is Encoded and out.lengths == [2, 4, -1]
    assert on_meta(out.tokens, out.segments, out._cache["embedding"])  # type: ignore[attr-defined]
    assert out.model_fields_set == model.model_fields_set
    assert not model.tokens.is_meta and not model._cache["embedding"].is_meta


class Tracker:
    __slots__ = ("__best", "__dict__", "history")

    def __init__(self, best: torch.Tensor) -> None:
        self.__best = best
        self.history = [best, best * 2]

    @property
    def best(self) -> torch.Tensor:
        return self.__best


class Lazy:
    """Reads go through __getattr__ to a private dict, as many wrappers do."""

    def __init__(self, **values: Any) -> None:
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        return self._values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("read-only")


def test_plain_objects_move_their_slots_dict_and_forwarded_state() -> None:
    tracker = Tracker(torch.tensor(0.5))
    tracker.note = torch.ones(2)  # type: ignore[attr-defined]
    lazy = Lazy(hidden=torch.ones(3), k=7)
    out = tp.to_device({"t": tracker, "l": lazy, "again": tracker.best}, "meta")
    t, lz = out["t"], out["l"]
    assert on_meta(t.best, *t.history, t.note, lz.hidden) and lz.k == 7
    assert t.best is out["again"] and t.history[0] is t.best  # shared stays shared
    assert not tracker.best.is_meta and not lazy.hidden.is_meta


def test_torch_distributions_move_with_every_parameter() -> None:
    loc = torch.tensor([0.0, 1.0, 2.0])
    categorical = torch.distributions.Categorical(logits=torch.tensor([0.1, 0.2, 0.7]))
    _ = categorical.probs  # a lazy property, now cached in __dict__
    batch = {
        "normal": torch.distributions.Normal(loc, torch.ones(3)),
        "diag": torch.distributions.Independent(torch.distributions.Normal(loc, loc + 1), 1),
        "mix": torch.distributions.MixtureSameFamily(
            categorical, torch.distributions.Normal(loc, torch.full((3,), 0.5))
        ),
        "loc": loc,
    }
    out = tp.to_device(batch, "cpu", dtype=torch.float64)
    assert out["normal"].loc is out["loc"] and out["diag"].base_dist.loc is out["loc"]
    assert out["mix"].mixture_distribution.probs.dtype == torch.float64
    value = torch.tensor(1.0, dtype=torch.float64)
    assert torch.allclose(out["mix"].log_prob(value), batch["mix"].log_prob(value).double())
    meta = tp.to_device(batch, "meta")
    assert on_meta(meta["mix"].mixture_distribution.logits, meta["mix"].mixture_distribution.probs)
    assert on_meta(meta["diag"].base_dist.scale, meta["normal"].sample((2,)))
    assert meta["diag"].event_shape == (3,) and not batch["normal"].loc.is_meta


# --- container subclasses with tensor attributes, custom Mappings -----------------------------


class Padded(dict[str, torch.Tensor]):
    """Items plus the lengths the padding came from, as an attribute."""


class Tokens(list[torch.Tensor]):
    pass


class Features(Mapping[str, torch.Tensor]):
    """Built from a schema: ``type(m)(items)`` would pass the items as the schema."""

    def __init__(self, schema: tuple[str, ...], *columns: torch.Tensor) -> None:
        self.schema = schema
        self._columns = dict(zip(schema, columns, strict=True))
        self.index = torch.arange(len(schema))

    def __getitem__(self, key: str) -> torch.Tensor:
        return self._columns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


def test_container_attributes_move_with_the_items() -> None:
    padded = Padded(ids=torch.arange(4))
    padded.lengths = torch.tensor([3, 1])  # type: ignore[attr-defined]
    tokens = Tokens([torch.ones(2)])
    tokens.mask = torch.zeros(2, dtype=torch.bool)  # type: ignore[attr-defined]
    features = Features(("a", "b"), torch.ones(1), torch.zeros(1))
    out = tp.to_device((padded, tokens, features), "meta")
    assert type(out[0]) is Padded and on_meta(out[0]["ids"], out[0].lengths)
    assert type(out[1]) is Tokens and on_meta(out[1][0], out[1].mask)
    assert type(out[2]) is Features and out[2].schema == ("a", "b")
    assert on_meta(out[2]["a"], out[2]["b"], out[2].index)
    assert not padded.lengths.is_meta and not features.index.is_meta  # type: ignore[attr-defined]


# --- namedtuples: rebuilt without their __new__, attributes kept --------------------------------


class Logits(NamedTuple):
    values: torch.Tensor
    temperature: float


class Tempered(Logits):
    """``__new__`` divides by the temperature: calling it again divides twice."""

    def __new__(cls, values: torch.Tensor, temperature: float) -> Tempered:
        return super().__new__(cls, values / temperature, temperature)


class Annotated(Logits):
    pass  # no __slots__: instances take attributes


def test_namedtuples_are_rebuilt_without_their_constructor() -> None:
    tempered = Tempered(torch.tensor([2.0, 4.0]), 2.0)
    annotated = Annotated(torch.ones(1), 1.0)
    annotated.source = torch.zeros(3)  # type: ignore[attr-defined]
    out = tp.to_device({"t": [tempered], "a": annotated}, "cpu", dtype=torch.float64)
    assert type(out["t"][0]) is Tempered
    assert torch.equal(out["t"][0].values, torch.tensor([1.0, 2.0], dtype=torch.float64))
    assert type(out["a"]) is Annotated and out["a"].source.dtype == torch.float64
    assert on_meta(tp.to_device(annotated, "meta").source)


# --- OrderedDict order ---------------------------------------------------------------------------


def test_ordered_dicts_keep_their_own_order_wherever_they_sit() -> None:
    layers = collections.OrderedDict((f"l{i}", torch.full((1,), float(i))) for i in range(4))
    layers.move_to_end("l2", last=False)
    layers.move_to_end("l0")
    order = list(layers)

    @dataclasses.dataclass
    class Holder:
        layers: collections.OrderedDict[str, torch.Tensor]

    for batch, pick in (
        (layers, lambda o: o),
        ([1, {"deep": layers}], lambda o: o[1]["deep"]),
        (Holder(layers), lambda o: o.layers),
    ):
        assert list(pick(tp.to_device(batch, "meta"))) == order
        assert list(pick(tp.to_device(batch, "meta", pack=True))) == order
    assert list(tp.to_device(layers, "cpu")) == order  # nothing moves, order still kept


# --- objects whose .to works in place (PyTorch Geometric) ----------------------------------------


def test_in_place_to_objects_leave_the_input_and_keep_sharing() -> None:
    x = torch.randn(5, 2)
    data = pyg.Data(x=x, edge_index=torch.tensor([[0, 1], [1, 2]]), num_nodes=5)
    batch = pyg.batch(x, torch.arange(5), torch.tensor([0, 3, 5]))
    hetero = pyg.hetero(x, torch.ones(2, 2))
    out = tp.to_device({"data": data, "batch": batch, "hetero": hetero, "x": x}, "meta")
    d, b, h = out["data"], out["batch"], out["hetero"]
    paper = h.__dict__["_node_store_dict"]["paper"]
    # PyG keeps _slice_dict in the store, whose own deep copy shares it with the input.
    assert on_meta(d.x, d.edge_index, b.x, b.y, b._slice_dict["x"], paper["x"])
    assert not batch._slice_dict["x"].is_meta and b._store._parent() is b
    assert paper._parent() is h
    assert d.x is b.x is h.x is out["x"]  # one x, moved once
    assert d.num_nodes == 5 and d._store._parent() is d  # the copy's storage points at it
    assert data._store._parent() is data and data.x is x and not x.is_meta  # input as it was
    assert not hetero.__dict__["_node_store_dict"]["paper"]["x"].is_meta


class DeviceAware:
    """A ``.to`` that also records where it is, which only its own ``.to`` knows to update."""

    def __init__(self, state: torch.Tensor) -> None:
        self.state = state
        self.device = state.device

    def to(self, device: torch.device) -> DeviceAware:
        self.state = self.state.to(device)
        self.device = torch.device(device)
        return self


def test_an_objects_own_to_runs_on_a_copy() -> None:
    aware = DeviceAware(torch.ones(2))
    ref = weakref.ref(aware)
    out = tp.to_device([aware, aware.state], "meta")
    assert out[0] is not aware and out[0].device == META and out[0].state is out[1]
    assert ref() is aware and aware.device.type == "cpu" and not aware.state.is_meta


class Snapshot:
    """A ``.to`` object whose deep copy clones its tensors and ignores the memo (TensorDict's)."""

    def __init__(self, frames: list[torch.Tensor], stamp: torch.Tensor) -> None:
        self.frames = frames
        self.stamp = stamp

    def __deepcopy__(self, memo: dict[int, Any]) -> Snapshot:
        return Snapshot([f.clone() for f in self.frames], self.stamp.clone())

    def to(self, device: torch.device) -> Snapshot:
        return Snapshot([f.to(device) for f in self.frames], self.stamp.to(device))


class Ledger:
    """A ``.to`` object whose deep copy shares every attribute but ``rows`` (PyG's storage)."""

    def __init__(self, rows: dict[str, torch.Tensor], offsets: dict[str, torch.Tensor]) -> None:
        self.rows = rows
        self.offsets = offsets

    def __deepcopy__(self, memo: dict[int, Any]) -> Ledger:
        out = Ledger.__new__(Ledger)
        out.__dict__.update(self.__dict__)
        out.rows = copy.deepcopy(self.rows, memo)
        return out

    def to(self, device: torch.device) -> Ledger:
        self.rows = {key: value.to(device) for key, value in self.rows.items()}
        return self


def test_objects_whose_deep_copy_ignores_the_memo_still_share_and_move_everything() -> None:
    frame, stamp = torch.ones(2), torch.tensor(7)
    snap = Snapshot([frame, frame], stamp)
    ledger = Ledger({"a": frame}, {"a": stamp})
    for _ in range(2):  # the second call takes the remembered route
        out = tp.to_device({"snap": snap, "ledger": ledger, "frame": frame}, "meta")
        s, led = out["snap"], out["ledger"]
        assert s.frames[0] is s.frames[1] is led.rows["a"] is out["frame"]  # moved once
        assert s.stamp is led.offsets["a"] and on_meta(s.stamp, out["frame"])
        assert led.offsets is not ledger.offsets  # the input's dict was not moved in place
        assert not (frame.is_meta or stamp.is_meta or ledger.offsets["a"].is_meta)
        assert snap.frames == [frame, frame] and ledger.rows["a"] is frame


class TokenBatch(collections.UserDict[str, Any]):
    """A ``.to`` mapping whose pickling state leaves an attribute out (``BatchEncoding``'s)."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.count = len(data)

    def __getstate__(self) -> dict[str, Any]:
        return {"data": self.data}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.data = state["data"]

    def to(self, device: torch.device) -> TokenBatch:
        self.data = {key: value.to(device) for key, value in self.data.items()}
        return self


class Envelope:
    """Holds whatever it is given; its own ``.to`` moves only its ``body`` tensor."""

    def __init__(self, body: torch.Tensor, extra: Any) -> None:
        self.body = body
        self.extra = extra

    def to(self, device: torch.device) -> Envelope:
        self.body = self.body.to(device)
        return self


def test_an_object_with_its_own_to_gives_what_that_to_gives_on_a_shallow_copy() -> None:
    # Its .to decides what moves: what it leaves (the payload under `extra`) is shared
    # with the input as a shallow copy shares it, never copied, and never moved behind
    # the object's back; the input keeps its tensors.
    ids = torch.arange(3)
    encoded = TokenBatch({"ids": ids})
    envelope = Envelope(torch.ones(2), types.SimpleNamespace(encoded=encoded))
    expected = copy.copy(envelope).to(META)
    for _ in range(2):
        out = tp.to_device(envelope, "meta")
        assert type(out) is Envelope and out is not envelope
        assert out.body.is_meta and expected.body.is_meta
        assert out.extra is envelope.extra is expected.extra and out.extra.encoded is encoded
        assert encoded.count == 1 and encoded["ids"] is ids and not envelope.body.is_meta


# --- pack=True: results behave as .to's --------------------------------------------------------


def test_packed_moves_keep_layouts_and_give_tensors_their_own_storage() -> None:
    images = torch.randn(2, 3, 4, 4).contiguous(memory_format=torch.channels_last)
    table = torch.randn(6, 3).t()
    out = tp.to_device({"img": images, "table": table, "n": torch.arange(3)}, "meta", pack=True)
    assert out["img"].stride() == images.stride() and out["table"].stride() == table.stride()
    # Each sized to its own tensor, not views of one buffer (meta storages have no address).
    assert [o.untyped_storage().nbytes() for o in out.values()] == [384, 72, 24]
    # On the CPU (where packed_to_device gathers) they are independent: tests/feed/test_pack.py.


_REGISTRY = {"weights": torch.ones(2)}


class RegistryView(Mapping[str, torch.Tensor]):
    """Items that live outside the object: moving its attributes cannot move them."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getitem__(self, key: str) -> torch.Tensor:
        return _REGISTRY[key]

    def __iter__(self) -> Iterator[str]:
        return iter(_REGISTRY)

    def __len__(self) -> int:
        return len(_REGISTRY)


def test_a_mapping_whose_items_live_elsewhere_is_refused_not_passed_by() -> None:
    with pytest.raises(
        tp.UnsupportedBatchError, match=r"batch\['view'\].*not among its attributes"
    ):
        tp.to_device({"view": RegistryView("r"), "x": torch.ones(1)}, "meta")
    assert tp.to_device({"view": RegistryView("r")}, "cpu")["view"].name == "r"  # nothing moves


def test_a_custom_mapping_holding_what_an_own_to_leaves_on_the_host_moves() -> None:
    """Its items' host tensors are among its moved attributes: left there by the item's .to.

    (b33's draw, seed 1 of test_to_meta_keeps_the_invariant: the item check counted PyG's
    ``_slice_dict`` as a tensor the mapping computes from elsewhere and refused the batch.)
    """
    slices = torch.tensor([0, 2])
    graph = pyg.batch(torch.arange(4.0), torch.ones(2), slices)
    store = pyg.Store("s", graph=graph, w=torch.full((2,), 3.0))
    out = tp.to_device(store, "meta")
    moved = out["graph"]
    assert moved.x.is_meta and out["w"].is_meta
    assert moved._slice_dict["x"] is slices  # on the host, as the Batch's own .to leaves it
    assert graph.x.is_cpu and store["w"].is_cpu  # input untouched
    # A mapping whose items live elsewhere is still refused, inside the same kind of batch.
    with pytest.raises(tp.UnsupportedBatchError, match="not among its attributes"):
        tp.to_device(pyg.Store("s", graph=graph, view=RegistryView("r")), "meta")


class Track:
    """An object that holds a tensor, handed out by the containers below."""

    def __init__(self, points: torch.Tensor) -> None:
        self.points = points


class Tracks(Sequence[Track]):
    """Items built on access around tensors kept elsewhere: no tensor is among its attributes."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def __getitem__(self, i: Any) -> Any:
        return Track(_REGISTRY[self.names[i]])

    def __len__(self) -> int:
        return len(self.names)


def test_containers_handing_out_objects_with_tensors_they_do_not_hold_are_refused() -> None:
    kept = Track(torch.ones(3))
    weak_set = weakref.WeakSet([kept])  # items held by weak reference are not its state
    weak_values = weakref.WeakValueDictionary({"t": kept})
    for name, container in [
        ("set", weak_set),
        ("values", weak_values),
        ("seq", Tracks(["weights"])),
    ]:
        with pytest.raises(tp.UnsupportedBatchError, match=rf"batch\['{name}'\].*holding a tensor"):
            tp.to_device({name: container, "x": torch.ones(1)}, "meta")
        assert not kept.points.is_meta
    # A weak container of objects holding no tensor, or holding them on the target, passes.
    plain = Track(torch.ones(1, device="meta"))
    assert tp.to_device({"w": weakref.WeakSet([plain])}, "meta")["w"] is not None


# --- values that hold objects: numpy object arrays, dict views, iterators ----------------------


def test_tensors_inside_numpy_object_arrays_and_dict_views_must_already_be_there() -> None:
    import numpy as np

    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = torch.ones(3), {"deep": torch.zeros(1)}
    record = np.zeros(1, dtype=[("id", "i4"), ("payload", "O")])
    record["payload"][0] = [torch.ones(2)]
    lookup = {"w": torch.ones(1)}
    for name, value in [("ragged", ragged), ("record", record), ("view", lookup.values())]:
        with pytest.raises(tp.UnsupportedBatchError, match=rf"batch\['{name}'\].*holding a tensor"):
            tp.to_device({name: value, "x": torch.ones(1)}, "meta")
        # Already where the move goes: returned as it is (a CPU run keeps working).
        assert tp.to_device({name: value, "x": torch.ones(1)}, "cpu")[name] is value
        with pytest.raises(tp.UnsupportedBatchError, match=rf"batch\['{name}'\]"):
            tp.to_device({name: value}, "cpu", dtype=torch.float16)  # would stay uncast
        with pytest.raises(tp.UnsupportedBatchError, match=rf"batch\['{name}'\]"):
            list(tp.DeviceLoader([{name: value}], "meta"))
    numbers, names = np.arange(3.0), np.array(["a", None], dtype=object)
    out = tp.to_device({"n": numbers, "s": names, "x": torch.ones(1)}, "meta")
    assert out["n"] is numbers and out["s"] is names and out["x"].is_meta


def test_iterators_in_a_batch_are_refused_naming_their_path() -> None:
    def frames() -> Iterator[torch.Tensor]:
        yield torch.ones(1)

    lazy = [frames(), map(torch.ones, [1]), zip([torch.ones(1)]), iter([torch.ones(1)])]
    for it in lazy:
        with pytest.raises(tp.UnsupportedBatchError, match=r"batch\['it'\] is an iterator.*list"):
            tp.to_device({"it": it, "x": torch.ones(1)}, "cpu")
    with pytest.raises(tp.UnsupportedBatchError, match="the object is an iterator"):
        tp.to_device(frames(), "meta")
    with pytest.raises(tp.UnsupportedBatchError, match="iterator"):
        list(tp.DeviceLoader([{"it": frames()}], "cpu"))
    kept = frames()
    assert tp.to_device({"it": kept, "x": torch.ones(1)}, "meta", skip_keys="it")["it"] is kept


# --- objects copied through their own copy protocol ---------------------------------------------


class Session:
    """Pickles without its lock and its scratch value; unpickling makes new ones."""

    __slots__ = ("__weakref__", "lock", "scratch", "weights")

    def __init__(self, weights: torch.Tensor) -> None:
        self.weights = weights
        self.lock = threading.Lock()
        self.scratch = "warm"

    def __getstate__(self) -> dict[str, Any]:
        return {"weights": self.weights}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.weights = state["weights"]
        self.lock = threading.Lock()
        self.scratch = "cold"


class Owned:
    """A ``__copy__`` that points the copy's back reference at the copy."""

    def __init__(self, values: torch.Tensor) -> None:
        self.values = values
        self.owner = weakref.ref(self)

    def __copy__(self) -> Owned:
        out = Owned.__new__(Owned)
        out.__dict__.update(self.__dict__, owner=weakref.ref(out), stamp="copied")
        return out


def test_a_copy_made_by_the_class_protocol_keeps_exactly_the_objects_state() -> None:
    session, owned = Session(torch.ones(2)), Owned(torch.zeros(1))
    out = tp.to_device({"s": session, "o": owned}, "meta")
    s, o = out["s"], out["o"]
    assert s is not session and s.weights.is_meta and not session.weights.is_meta
    assert s.scratch == "warm" and s.lock is session.lock  # as the object had them
    assert o.values.is_meta and o.owner() is o and owned.owner() is owned
    assert not hasattr(o, "stamp")  # an attribute the input does not have is not added


class Odometer:
    """A ``.to`` that moves in place and, as many hand-written ones do, returns nothing."""

    def __init__(self, reading: torch.Tensor) -> None:
        self.reading = reading

    def to(self, device: torch.device) -> None:
        self.reading = self.reading.to(device)


def test_a_to_that_returns_none_gives_the_moved_object_not_none() -> None:
    odo = Odometer(torch.ones(2))
    out = tp.to_device({"odo": odo, "x": odo.reading}, "meta")
    assert isinstance(out["odo"], Odometer) and out["odo"] is not odo
    assert out["odo"].reading is out["x"] and out["x"].is_meta
    assert not odo.reading.is_meta  # it ran on a copy
    (batch,) = tp.DeviceLoader([[odo]], "meta")
    assert isinstance(batch[0], Odometer) and batch[0].reading.is_meta


class Pinned:
    """A ``.to`` whose device is keyword-only, as torch's storages take it."""

    def __init__(self, block: torch.Tensor) -> None:
        self.block = block

    def to(self, *, device: torch.device, non_blocking: bool = False) -> Pinned:
        return Pinned(self.block.to(device, non_blocking=non_blocking))


def test_a_to_that_takes_the_device_by_name_is_called_so() -> None:
    out = tp.to_device({"p": Pinned(torch.ones(2))}, "meta")
    assert isinstance(out["p"], Pinned) and out["p"].block.is_meta
    (batch,) = tp.DeviceLoader([[Pinned(torch.ones(1))]], "meta")
    assert batch[0].block.is_meta


class Adopting:
    """pydantic v1's pickling: ``__setstate__`` adopts the state's dict as its ``__dict__``."""

    def __init__(self, image: torch.Tensor) -> None:
        self.image = image
        self.label = 3

    def __getstate__(self) -> dict[str, Any]:
        return {"__dict__": self.__dict__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "__dict__", state["__dict__"])


def test_a_copy_handed_the_objects_own_dict_does_not_write_into_the_input() -> None:
    item = Adopting(torch.ones(2))
    out = tp.to_device([item], "meta")[0]
    assert out.image.is_meta and out.label == 3
    assert not item.image.is_meta and out.__dict__ is not item.__dict__


# --- nothing to move: the very object, whatever containers it holds -------------------------

_ON_META = st.integers(0, 3).map(lambda n: torch.zeros(n, device="meta"))
_VALUES = st.integers(-2, 2) | st.sampled_from(["a", "b"]) | st.none()


def _holders(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    hashable = leaf.filter(lambda v: not isinstance(v, list | dict))
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=3).map(tuple),
            st.lists(inner, max_size=3).map(collections.deque),
            st.dictionaries(st.sampled_from("xyz"), inner, max_size=3),
            st.dictionaries(st.sampled_from("xyz"), inner, max_size=3).map(collections.OrderedDict),
            st.sets(hashable, max_size=3),
            st.frozensets(hashable, max_size=3),
        ),
        max_leaves=6,
    )


@dataclasses.dataclass
class _Held:
    first: Any
    second: Any


class _HeldModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    first: Any
    second: Any


@given(first=_holders(_ON_META | _VALUES), second=_holders(_ON_META | _VALUES))
def test_an_object_in_which_nothing_moves_is_the_very_object(first: Any, second: Any) -> None:
    # The promise for objects without .to: nothing under it moves, so it comes back as
    # itself (pydantic models always hold a set, their fields_set).
    for obj in (_Held(first, second), _HeldModel(first=first, second=second)):
        assert tp.to_device(obj, META) is obj
        assert tp.to_device({"k": obj}, META)["k"] is obj
        moved = tp.to_device(_Held(obj, torch.ones(1)), META)  # a tensor beside it moves
        assert moved.first is obj and moved.second.is_meta


# --- a tensor torch cannot copy, inside a class made at run time: named by its path ------


def _made_at_run_time(kind: str, leaf: Any) -> Any:
    if kind == "dataclass":
        return dataclasses.make_dataclass("Made", [("a", Any), ("b", Any)])(1, leaf)
    if kind == "namedtuple":
        return collections.namedtuple("Made", "a b")(1, leaf)
    if kind == "attrs":
        return attrs.make_class("Made", ["a", "b"])(1, leaf)
    made = type("Made", (), {})()
    made.a, made.b = 1, [leaf]
    return made


@given(
    kinds=st.lists(st.sampled_from(["dataclass", "namedtuple", "attrs", "plain"]), max_size=3),
    where=st.sampled_from(["top", "dict", "list"]),
)
def test_an_uncopyable_tensor_in_run_time_classes_is_named_by_its_path(
    kinds: list[str], where: str
) -> None:
    # The oracle: the message's path, evaluated on the input, is the very tensor.
    leaf = torch.zeros(2, device="meta")  # torch cannot copy it to the CPU
    batch: Any = leaf
    for kind in kinds:
        batch = _made_at_run_time(kind, batch)
    batch = {"top": batch, "dict": {"k": batch}, "list": [0, batch]}[where]
    for move in (
        lambda: tp.to_device(batch, "cpu"),
        lambda: next(iter(tp.DeviceLoader([batch], device="cpu"))),
    ):
        with pytest.raises(tp.UnsupportedBatchError) as caught:
            move()
        path = str(caught.value).split(" is a ", 1)[0]
        assert eval(path, {"batch": batch}) is leaf, str(caught.value)


@given(
    kinds=st.lists(st.sampled_from(["dataclass", "namedtuple", "attrs", "plain"]), max_size=3),
    where=st.sampled_from(["top", "dict", "list"]),
)
def test_a_hidden_tensor_in_run_time_classes_is_named_by_its_path(
    kinds: list[str], where: str
) -> None:
    # A numpy array of Python objects holding a CPU tensor cannot be rebuilt around
    # the moved tensor: refused, and the message's path, evaluated on the input, is it.
    hidden = numpy.empty(1, dtype=object)
    hidden[0] = torch.ones(1)
    batch: Any = hidden
    for kind in kinds:
        batch = _made_at_run_time(kind, batch)
    batch = {"top": batch, "dict": {"k": batch}, "list": [0, batch]}[where]
    for move in (
        lambda: tp.to_device(batch, META),
        lambda: next(iter(tp.DeviceLoader([batch], device=META))),
    ):
        with pytest.raises(tp.UnsupportedBatchError) as caught:
            move()
        path = str(caught.value).split(" is a ", 1)[0]
        assert eval(path, {"batch": batch}) is hidden, str(caught.value)


class _Encoded(collections.UserDict):  # type: ignore[type-arg]
    """A ``UserDict`` with a value attribute, as HuggingFace's ``BatchEncoding`` is."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.n_sequences = 2


@given(n=st.integers(0, 4), extra=st.booleans())
def test_a_user_dict_in_which_nothing_moves_is_the_very_object_at_the_top_too(
    n: int, extra: bool
) -> None:
    # The promise holds wherever the object sits: a UserDict (BatchEncoding) whose tensors
    # are all on the target comes back as itself, alone as inside a list or a dataclass.
    data = {f"k{i}": torch.zeros(i, device="meta") for i in range(n)}
    if extra:
        data["label"] = 3  # type: ignore[assignment]
    for obj in (_Encoded(data), collections.UserDict(data)):
        assert tp.to_device(obj, META) is obj
        assert tp.to_device([obj, torch.ones(1)], META)[0] is obj
        assert tp.to_device(_Held(obj, 1), META).first is obj
    moved = tp.to_device(_Encoded({**data, "x": torch.ones(1)}), META)  # one tensor to move
    assert moved["x"].is_meta and all(moved[k] is v for k, v in data.items())
