"""Containers optree does not know: each moves exactly, keeps type and state, or raises.

The walker's past failures on containers: dataclasses were rebuilt through ``__init__``
(``__post_init__`` ran again), non-dict mappings and sets came back unmoved, builtin
subclasses with other constructors came back emptied or re-nested, and
``skip_keys="ids"`` meant the keys ``i``, ``d``, ``s``."""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import types
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

import torchport as tp
from torchport.place._tree import flatten_batch, flatten_tensors, map_tensors

META = torch.device("meta")


def on_meta(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.device == META


# --- dataclasses --------------------------------------------------------------------------


@dataclasses.dataclass
class Doubling:
    x: torch.Tensor
    n: int = 1

    def __post_init__(self) -> None:
        self.n *= 2


@dataclasses.dataclass(frozen=True)
class FrozenDoubling:
    x: torch.Tensor
    n: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", self.n * 2)


@dataclasses.dataclass(slots=True)
class Slotted:
    x: torch.Tensor
    label: str = "s"


@dataclasses.dataclass(frozen=True, slots=True)
class FrozenSlotted:
    x: torch.Tensor
    label: str = "fs"


@dataclasses.dataclass
class WithCache:
    x: torch.Tensor

    @functools.cached_property
    def total(self) -> torch.Tensor:
        return self.x.sum()


@dataclasses.dataclass
class LateField:
    x: torch.Tensor
    late: torch.Tensor = dataclasses.field(init=False)


@dataclasses.dataclass
class OtherInit:
    x: torch.Tensor
    scale: int

    def __init__(self, raw: list[float]) -> None:
        self.x = torch.tensor(raw)
        self.scale = len(raw)


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("cls", [Doubling, FrozenDoubling])
def test_post_init_does_not_run_again(cls: type[Any], device: str) -> None:
    before = cls(torch.ones(2), n=3)
    assert before.n == 6
    out = tp.to_device(before, device)
    assert type(out) is cls and out.n == 6 and out.x.device.type == device
    assert tp.to_device(tp.to_device(out, device), device).n == 6  # twice more: still 6


def test_attributes_set_after_construction_are_kept() -> None:
    plain = Doubling(torch.ones(1))
    plain.note = "kept"  # type: ignore[attr-defined]
    frozen = FrozenDoubling(torch.ones(1))
    object.__setattr__(frozen, "note", ["kept"])
    for before in (plain, frozen):
        out = tp.to_device(before, "meta")
        assert on_meta(out.x)
        assert out.note == before.note  # type: ignore[attr-defined]
    # Walked like the fields: a list holding no tensor comes back equal.
    assert tp.to_device(frozen, "meta").note == ["kept"]  # type: ignore[attr-defined]
    # Nothing under it moved: the very object comes back.
    assert tp.to_device(frozen, "cpu") is frozen


@pytest.mark.parametrize("cls", [Slotted, FrozenSlotted])
def test_slots_dataclasses(cls: type[Any]) -> None:
    before = cls(torch.ones(2), "lbl")
    out = tp.to_device(before, "meta")
    assert type(out) is cls and on_meta(out.x) and out.label == "lbl"
    assert before.x.device.type == "cpu"  # the input is not modified


def test_cached_property_values_move_with_the_fields() -> None:
    before = WithCache(torch.ones(3))
    assert before.total.device.type == "cpu"  # cached in __dict__
    out = tp.to_device(before, "cpu", dtype=torch.float64)
    # The cache is state like any attribute: kept, moved and cast, never left behind.
    assert vars(out)["total"].dtype == torch.float64 and out.total.item() == 3.0
    assert before.total.dtype == torch.float32
    assert on_meta(tp.to_device(before, "meta").total)


def test_init_false_fields_set_or_unset() -> None:
    unset = LateField(torch.ones(1))
    out = tp.to_device(unset, "meta")
    assert not hasattr(out, "late")
    unset.late = torch.zeros(2)
    out = tp.to_device(unset, "meta")
    assert on_meta(out.late) and out.late.shape == (2,)


def test_dataclass_with_another_init_is_copied_not_constructed() -> None:
    before = OtherInit([1.0, 2.0])
    out = tp.to_device({"d": before}, "meta")["d"]
    assert type(out) is OtherInit and on_meta(out.x) and out.scale == 2


@dataclasses.dataclass(frozen=True)
class _Frozen:
    a: torch.Tensor


@pytest.mark.parametrize("frozen", [False, True])
def test_tensors_set_after_construction_move_with_the_fields(frozen: bool) -> None:
    obj: Any = _Frozen(torch.ones(2)) if frozen else OtherInit([1.0, 2.0])
    object.__setattr__(obj, "extra", torch.zeros(3))
    object.__setattr__(obj, "tag", "kept")
    out = tp.to_device([obj, obj.extra], "meta")
    assert on_meta(out[0].extra) and out[0].tag == "kept"
    assert out[0].extra is out[1]  # shared with the rest of the batch, copied once
    assert obj.extra.device.type == "cpu"  # the input is left as it was
    assert tp.to_device(obj, "cpu").extra is obj.extra  # a no-op stays a no-op


class ModelOutput(collections.OrderedDict[str, Any]):
    """A stand-in faithful to transformers' ``ModelOutput``: a dataclass base that is an
    OrderedDict mirroring each non-None field in an item."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            if value is not None:
                self[field.name] = value

    def update(self, *args: Any, **kwargs: Any) -> None:
        raise Exception(f"You cannot use ``update`` on a {type(self).__name__} instance.")

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return dict(self.items())[key]
        return self.to_tuple()[key]

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.keys() and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def __reduce__(self) -> Any:
        callable_, _args, *remaining = super().__reduce__()
        args = tuple(getattr(self, field.name) for field in dataclasses.fields(self))  # type: ignore[arg-type]
        return (callable_, args, *remaining)

    def to_tuple(self) -> tuple[Any, ...]:
        return tuple(self[k] for k in self.keys())


@dataclasses.dataclass
class CausalLMOutput(ModelOutput):
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None


def test_model_output_items_and_attributes_move_together() -> None:
    before = CausalLMOutput(logits=torch.ones(2, 3), hidden_states=(torch.ones(1), torch.ones(2)))
    out = tp.to_device({"out": before}, "meta")["out"]
    assert type(out) is CausalLMOutput and list(out.keys()) == ["logits", "hidden_states"]
    assert on_meta(out.logits) and out["logits"] is out.logits and out[0] is out.logits
    assert all(on_meta(h) for h in out["hidden_states"]) and out.hidden_states is out[1]
    assert out.loss is None and "loss" not in out
    assert before.logits.device.type == "cpu" and before["logits"] is before.logits


class Mirrored(dict[str, Any]):
    """A dict base whose dataclasses mirror every field in an item (no __setattr__ of its own)."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            self[field.name] = getattr(self, field.name)


@dataclasses.dataclass
class MirroredOutput(Mirrored):
    logits: torch.Tensor
    n: int = 0


def test_dict_items_mirroring_fields_follow_the_fields() -> None:
    before = MirroredOutput(torch.ones(2), 3)
    out = tp.to_device(before, "meta")
    assert on_meta(out.logits) and out["logits"] is out.logits and out["n"] == out.n == 3
    assert before["logits"] is before.logits and before.logits.device.type == "cpu"


# --- mappings that are not dicts ----------------------------------------------------------


class BatchEncoding(collections.UserDict[str, Any]):
    """A stand-in faithful to transformers' ``BatchEncoding`` in what the walker can see."""

    def __init__(
        self,
        data: dict[str, Any] | None = None,
        encoding: Any = None,
        tensor_type: Any = None,
        prepend_batch_axis: bool = False,
        n_sequences: int | None = None,
    ) -> None:
        super().__init__(data)
        self._encodings = encoding
        self._n_sequences = n_sequences

    @property
    def n_sequences(self) -> int | None:
        return self._n_sequences

    def __getattr__(self, item: str) -> Any:
        try:
            return self.data[item]
        except KeyError:
            raise AttributeError from None

    def __getstate__(self) -> dict[str, Any]:  # drops _n_sequences, as transformers does
        return {"data": self.data, "encodings": self._encodings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "data" in state:
            self.data = state["data"]
        if "encodings" in state:
            self._encodings = state["encodings"]

    def to(self, device: Any, *, non_blocking: bool = False) -> BatchEncoding:
        # transformers moves in place and returns self.
        self.data = {
            k: v.to(device=device, non_blocking=non_blocking) if isinstance(v, torch.Tensor) else v
            for k, v in self.data.items()
        }
        return self


def _encoding() -> BatchEncoding:
    return BatchEncoding(
        {"input_ids": torch.ones(2, 4, dtype=torch.long), "attention_mask": torch.ones(2, 4)},
        encoding=["enc0", "enc1"],
        n_sequences=1,
    )


def test_batch_encoding_is_walked_like_a_dict() -> None:
    before = _encoding()
    layout = flatten_batch(before)
    assert layout.movers == []  # its tensors are the batch's: packed, counted, async
    assert {id(t) for t in layout.tensors} == {id(t) for t in before.data.values()}
    out = tp.to_device({"enc": before, "y": torch.zeros(2)}, "meta")["enc"]
    assert type(out) is BatchEncoding
    assert on_meta(out["input_ids"]) and out["input_ids"].dtype == torch.long
    assert on_meta(out.attention_mask)  # __getattr__ still reaches the data
    assert out._encodings == ["enc0", "enc1"] and out.n_sequences == 1
    assert list(out.keys()) == ["input_ids", "attention_mask"]
    # Not moved in place, as BatchEncoding.to would have done.
    assert before["input_ids"].device.type == "cpu" and out.data is not before.data


def test_device_loader_sees_batch_encoding_tensors() -> None:
    # The loader flattens with the same walker: its tensors are counted (and, on
    # CUDA, packed and copied ahead on the side stream) instead of .to() at hand-over.
    batches = [_encoding() for _ in range(3)]
    loader = tp.DeviceLoader(batches, "cpu")
    out = list(loader)
    assert all(type(b) is BatchEncoding and b.n_sequences == 1 for b in out)
    assert loader.stats.tensors == 6


def test_batch_encoding_no_op_keeps_tensors() -> None:
    before = _encoding()
    out = tp.to_device(before, "cpu")
    assert out["input_ids"] is before["input_ids"] and out._encodings is before._encodings


def test_user_dict_and_user_list_keep_extras_and_skip_keys() -> None:
    ud: collections.UserDict[str, Any] = collections.UserDict(a=torch.ones(1), ids=torch.ones(1))
    ud.tag = "t"  # type: ignore[attr-defined]
    ul: collections.UserList[Any] = collections.UserList([torch.ones(1), 2])
    out = tp.to_device({"ud": ud, "ul": ul}, "meta", skip_keys="ids")
    assert type(out["ud"]) is collections.UserDict and out["ud"].tag == "t"
    assert on_meta(out["ud"]["a"]) and out["ud"]["ids"] is ud["ids"]
    assert type(out["ul"]) is collections.UserList and on_meta(out["ul"][0]) and out["ul"][1] == 2


@pytest.mark.parametrize(
    "inner",
    [
        {"a": 1},
        collections.OrderedDict([("b", 1), ("a", 2)]),
        collections.defaultdict(list, a=1),
    ],
)
def test_mapping_proxy_keeps_the_type_it_shows(inner: dict[str, Any]) -> None:
    inner["t"] = torch.ones(1)
    out = tp.to_device({"p": types.MappingProxyType(inner)}, "meta")["p"]
    assert type(out) is types.MappingProxyType
    assert on_meta(out["t"]) and list(out) == list(inner)
    assert type(out.copy()) is type(inner)
    assert inner["t"].device.type == "cpu"


class Layers(collections.ChainMap[str, Any]):
    def __init__(self, name: str, *maps: dict[str, Any]) -> None:
        super().__init__(*maps)
        self.name = name


def test_chain_map_moves_every_map() -> None:
    before = collections.ChainMap({"a": torch.ones(1)}, {"a": torch.zeros(1), "b": torch.ones(2)})
    out = tp.to_device(before, "meta")
    assert type(out) is collections.ChainMap and len(out.maps) == 2
    assert all(on_meta(v) for m in out.maps for v in m.values())
    layers = tp.to_device(Layers("l", {"a": torch.ones(1)}, {"b": 2}), "meta")
    assert type(layers) is Layers and layers.name == "l" and on_meta(layers["a"])
    assert layers["b"] == 2 and len(layers.maps) == 2


class ReadOnly(Mapping[str, Any]):
    """A Mapping whose constructor takes a dict of its items."""

    built = 0

    def __init__(self, items: dict[str, Any]) -> None:
        type(self).built += 1
        self._items = dict(items)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Renaming(ReadOnly):
    """Its constructor accepts a dict but stores something else."""

    def __init__(self, items: dict[str, Any]) -> None:
        super().__init__({"_" + k: v for k, v in items.items()})


class Raising(ReadOnly):
    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)


def test_other_mappings_are_moved_with_their_type() -> None:
    before = ReadOnly({"x": torch.ones(1), "n": 3})
    out = tp.to_device({"m": before}, "meta", skip_keys=["n"])["m"]
    assert type(out) is ReadOnly and on_meta(out["x"]) and out["n"] == 3


def test_an_unchanged_mapping_is_returned_without_its_constructor() -> None:
    before = ReadOnly({"x": torch.ones(1), "n": 3})
    built = ReadOnly.built
    assert tp.to_device({"m": before}, "cpu")["m"] is before
    assert ReadOnly.built == built
    renaming = Renaming({"n": 1})
    assert tp.to_device({"m": renaming}, "meta")["m"] is renaming  # nothing in it to move


def test_a_mapping_whose_constructor_changes_its_items_is_not_constructed() -> None:
    before = Renaming({"x": torch.ones(1)})
    before.owner = torch.zeros(2)  # type: ignore[attr-defined]
    built = ReadOnly.built
    out = tp.to_device({"meta": [0, before]}, "meta")["meta"][1]
    assert type(out) is Renaming and list(out) == ["_x"] and on_meta(out["_x"])
    assert on_meta(out.owner) and ReadOnly.built == built  # attributes moved, no __init__
    assert before["_x"].device.type == "cpu"


def test_a_mapping_that_fails_to_give_its_items_names_the_path() -> None:
    with pytest.raises(tp.UnsupportedBatchError, match=r"batch\['m'\] of type .*Raising.*KeyError"):
        tp.to_device({"m": Raising({"x": torch.ones(1)})}, "meta")


# --- sets -----------------------------------------------------------------------------------


def test_sets_are_moved_and_share_their_tensors() -> None:
    a, b = torch.ones(1), torch.zeros(2)
    batch = {"s": {a, b, "tag"}, "f": frozenset({a, (b, 1)}), "a": a}
    out = tp.to_device(batch, "meta")
    assert type(out["s"]) is set and type(out["f"]) is frozenset
    assert len(out["s"]) == 3 and "tag" in out["s"]
    moved = {id(t) for t in out["s"] if isinstance(t, torch.Tensor)}
    assert all(on_meta(t) for t in out["s"] if isinstance(t, torch.Tensor))
    assert id(out["a"]) in moved  # a is copied once and stays shared
    inner = next(x for x in out["f"] if isinstance(x, tuple))
    assert on_meta(inner[0]) and id(inner[0]) in moved


def test_sets_whose_items_become_equal_are_an_error() -> None:
    shared = torch.ones(1)
    with pytest.raises(tp.UnsupportedBatchError, match=r"batch\['s'\].*2 items became 1"):
        map_tensors(lambda _: shared, {"s": {(torch.ones(1),), (torch.ones(1),)}})


@dataclasses.dataclass(frozen=True, eq=False)
class Holder:
    held: Any


def test_error_paths_inside_sets_are_python() -> None:
    with pytest.raises(tp.UnsupportedBatchError, match=r"list\(batch\['s'\]\)\[0\]\.held "):
        tp.to_device({"s": frozenset({Holder(Raising({"x": 1}))})}, "meta")


# --- subclasses whose constructor differs from the base ---------------------------------------


class TwoArgList(list[Any]):
    __slots__ = ("tag",)

    def __init__(self, a: Any, b: Any) -> None:
        super().__init__([a, b])
        self.tag = "two"


class StarList(list[Any]):
    """``StarList(items)`` would nest the items one level deeper."""

    def __init__(self, *items: Any) -> None:
        super().__init__(items)


class ForgetfulList(list[Any]):
    """``ForgetfulList(items)`` would come back empty."""

    def __init__(self, *_: Any) -> None:
        super().__init__()

    def append(self, item: Any) -> None:  # not how the walker fills it
        raise AssertionError("append must not be called")


class PairTuple(tuple[Any, ...]):
    def __new__(cls, a: Any, b: Any) -> PairTuple:
        obj = super().__new__(cls, (a, b))
        obj.label = "pair"
        return obj


class NeedsArgs(dict[str, Any]):
    def __init__(self, owner: str, **items: Any) -> None:
        super().__init__(**items)
        self.owner = owner

    def __setitem__(self, key: str, value: Any) -> None:
        raise AssertionError("__setitem__ must not be called")


class Ordered(collections.OrderedDict[str, Any]):
    def __init__(self, owner: str) -> None:
        super().__init__()
        self.owner = owner


class Factory(collections.defaultdict[str, Any]):
    def __init__(self, owner: str) -> None:
        super().__init__(list)
        self.owner = owner


class Window(collections.deque[Any]):
    def __init__(self, size: int) -> None:
        super().__init__(maxlen=size)


class TagSet(set[Any]):
    def __init__(self, tag: str, *items: Any) -> None:
        super().__init__(items)
        self.tag = tag


def test_builtin_subclasses_are_rebuilt_without_their_constructor() -> None:
    t = torch.ones(1)
    ordered = Ordered("o")
    ordered["b"], ordered["a"] = t, 2
    ordered.move_to_end("b")
    factory = Factory("f")
    factory["t"] = t
    window = Window(2)
    window.extend([1, t])
    tagged_set = TagSet("s", t, 1)
    batch = {
        "two": TwoArgList(t, 2),
        "star": StarList(t, 2),
        "forget": ForgetfulList(),
        "pair": PairTuple(t, 2),
        "args": dict.__new__(NeedsArgs),
        "ordered": ordered,
        "factory": factory,
        "window": window,
        "set": tagged_set,
    }
    batch["forget"].extend([t, 2])
    dict.__setitem__(batch["args"], "t", t)
    batch["args"].owner = "n"
    out = tp.to_device(batch, "meta")
    for key, before in batch.items():
        assert type(out[key]) is type(before), key
    assert out["two"].tag == "two" and len(out["two"]) == 2 and on_meta(out["two"][0])
    assert len(out["star"]) == 2 and on_meta(out["star"][0])  # not re-nested
    assert len(out["forget"]) == 2 and on_meta(out["forget"][0])  # not emptied
    assert out["pair"].label == "pair" and on_meta(out["pair"][0]) and out["pair"][1] == 2
    assert out["args"].owner == "n" and on_meta(out["args"]["t"])
    assert list(out["ordered"]) == ["a", "b"] and out["ordered"].owner == "o"
    assert on_meta(out["ordered"]["b"])
    assert out["factory"].default_factory is list and out["factory"]["missing"] == []
    assert out["window"].maxlen == 2 and on_meta(out["window"][1])
    assert out["set"].tag == "s" and len(out["set"]) == 2
    assert {x.device.type for x in out["set"] if isinstance(x, torch.Tensor)} == {"meta"}
    assert out["two"][0] is out["pair"][0] is out["factory"]["t"]  # shared once moved


class Color(tuple[int, int], enum.Enum):
    RED = (1, 2)


def test_enum_members_that_are_tuples_stay_the_member() -> None:
    out = tp.to_device({"c": Color.RED, "s": {Color.RED}, "t": torch.ones(1)}, "meta")
    assert out["c"] is Color.RED and next(iter(out["s"])) is Color.RED


# --- PackedSequence: a namedtuple whose batch_sizes stays on the CPU ---------------------------


def test_packed_sequence_keeps_batch_sizes_on_the_cpu() -> None:
    x = torch.randn(3, 2, 4)
    packed = pack_padded_sequence(x, torch.tensor([3, 2]), enforce_sorted=False)
    assert flatten_batch({"p": packed}).movers == []  # its fields move with the batch
    out = tp.to_device({"p": packed, "y": torch.ones(1)}, "meta")
    moved = out["p"]
    assert type(moved) is PackedSequence
    assert on_meta(moved.data) and on_meta(moved.sorted_indices) and on_meta(out["y"])
    assert moved.batch_sizes.device.type == "cpu"  # where RNNs require it
    half = tp.to_device([packed], "cpu", dtype=torch.float16)[0]
    assert half.data.dtype == torch.float16 and half.batch_sizes.dtype == torch.int64
    ids = pack_padded_sequence(torch.ones(3, 2, dtype=torch.long), torch.tensor([3, 2]))
    assert tp.to_device(ids, "cpu", dtype=torch.float16).data.dtype == torch.long  # floats only
    assert tp.to_device((packed,), "cpu")[0] is packed  # nothing to move


def test_packed_sequence_fields_held_elsewhere_stay_shared() -> None:
    lengths = torch.tensor([2, 4, 1])
    packed = pack_padded_sequence(torch.randn(4, 3, 2), lengths, enforce_sorted=False)
    out = tp.to_device({"p": packed, "flat": packed.data, "order": packed.sorted_indices}, "meta")
    assert out["p"].data is out["flat"] and out["p"].sorted_indices is out["order"]
    assert out["p"].unsorted_indices.is_meta and out["p"].batch_sizes is packed.batch_sizes
    assert not packed.data.is_meta  # the input as it was


# --- skip_keys -------------------------------------------------------------------------------


def test_a_string_skip_key_is_one_key() -> None:
    t = torch.ones(1)
    batch = {"ids": t, "i": t * 2, "d": t * 3, "s": t * 4, 3: t * 5}
    out = tp.to_device(batch, "meta", skip_keys="ids")
    assert out["ids"] is t and all(on_meta(out[k]) for k in ("i", "d", "s", 3))
    assert tp.to_device({b"ids": t}, "meta", skip_keys=b"ids")[b"ids"] is t
    assert tp.to_device(batch, "meta", skip_keys={3, "i"})[3] is batch[3]


@dataclasses.dataclass
class OnlyUnderSkippedKeys:
    """Met for the first time under a skipped key (no other test uses it)."""

    x: torch.Tensor


def test_a_new_container_type_under_a_skipped_key_is_left_as_it_is() -> None:
    first = OnlyUnderSkippedKeys(torch.ones(1))
    for _ in range(2):  # first sight registers the type; the second call must agree
        out = tp.to_device({"ids": first, "y": torch.ones(1)}, "meta", skip_keys="ids")
        assert out["ids"] is first and on_meta(out["y"])
    assert on_meta(tp.to_device({"x": first}, "meta", skip_keys="ids")["x"].x)


@pytest.mark.parametrize(
    ("skip", "found"), [(3, r"of type int.*skip_keys=\[3\]"), ([["a"]], "cannot be a dict key")]
)
def test_bad_skip_keys_are_config_errors(skip: Any, found: str) -> None:
    with pytest.raises(tp.ConfigError, match=found) as info:
        tp.to_device({"a": torch.ones(1)}, "meta", skip_keys=skip)
    assert "skip_keys=" in str(info.value)


# --- identity, sharing, cycles, depth ---------------------------------------------------------


def test_no_op_move_returns_every_tensor_itself() -> None:
    t = torch.ones(1)
    batch = [
        Doubling(t),
        FrozenSlotted(t),
        _encoding(),
        types.MappingProxyType({"t": t}),
        {t},
        TwoArgList(t, t),
        ReadOnly({"t": t}),
    ]
    found, _ = flatten_tensors(batch)
    out = tp.to_device(batch, "cpu")
    after, _ = flatten_tensors(out)
    assert len(after) == len(found) and all(x is y for x, y in zip(found, after, strict=True))


def test_cycles_through_new_containers_name_the_path() -> None:
    ud: collections.UserDict[str, Any] = collections.UserDict(x=torch.ones(1))
    ud["self"] = [ud]
    with pytest.raises(tp.UnsupportedBatchError, match=r"batch\['u'\]\.data\['self'\]\[0\]"):
        tp.to_device({"u": ud}, "meta")
    late = LateField(torch.ones(1))
    late.late = [late]  # type: ignore[assignment]
    with pytest.raises(tp.UnsupportedBatchError, match=r"batch\.late\[0\] refers back"):
        tp.to_device(late, "meta")


def test_deep_nesting_through_new_containers_is_an_error() -> None:
    deep: Any = torch.ones(1)
    for _ in range(600):  # two levels each (the UserList, its .data): past optree's 1000
        deep = collections.UserList([deep])
    with pytest.raises(tp.UnsupportedBatchError, match="nested more than"):
        tp.to_device(deep, "meta")


# --- skip_keys at any depth, in any mapping (property) ------------------------------------


_keys = st.sampled_from(["a", "b", "ids"])
_leaf = st.builds(torch.ones, st.integers(0, 3)) | st.integers() | st.none()


def _nest(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    mappings = st.dictionaries(_keys, children, max_size=3)
    return (
        mappings
        | mappings.map(lambda d: collections.UserDict(d))
        | mappings.map(ReadOnly)
        | mappings.map(types.MappingProxyType)
        | st.lists(children, max_size=3)
        | st.builds(Holder, children)
    )


def _check_skipped(before: Any, after: Any, skipped: bool) -> None:
    """Under an ``ids`` key everything is the very object; elsewhere every tensor moved."""
    if skipped:
        assert after is before
    elif isinstance(before, torch.Tensor):
        assert on_meta(after) and after.shape == before.shape
    elif isinstance(before, Mapping):
        assert type(after) is type(before) and list(after) == list(before)
        for key in before:
            _check_skipped(before[key], after[key], key == "ids")
    elif isinstance(before, list):
        for x, y in zip(before, after, strict=True):
            _check_skipped(x, y, False)
    elif isinstance(before, Holder):
        _check_skipped(before.held, after.held, False)
    else:
        assert after == before


@given(st.recursive(_leaf, _nest, max_leaves=10))
def test_skip_keys_hold_in_every_mapping_at_any_depth(batch: Any) -> None:
    _check_skipped(batch, tp.to_device(batch, "meta", skip_keys="ids"), False)
