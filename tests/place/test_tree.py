"""The tree walker: every container kind, sharing, skip_keys, and errors with paths."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, NamedTuple

import pytest
import torch

import torchport as tp
from torchport.place import settled
from torchport.place._tree import flatten_batch, flatten_tensors, map_tensors


class Pair(NamedTuple):
    first: Any
    second: Any


@dataclasses.dataclass(frozen=True)
class Frozen:
    x: torch.Tensor
    label: str = "f"
    derived: torch.Tensor | None = dataclasses.field(init=False, default=None)


@dataclasses.dataclass
class WithPostInit:
    x: torch.Tensor
    total: torch.Tensor = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.total = self.x.sum()


class Tagged(list[Any]):
    pass


class Row(tuple[Any, ...]):
    pass


class Box(dict[str, Any]):
    pass


class Movable:
    def __init__(self, t: torch.Tensor) -> None:
        self.t = t

    def to(self, device: torch.device, non_blocking: bool = False) -> Movable:
        return Movable(self.t.to(device, non_blocking=non_blocking))


def double(t: torch.Tensor) -> torch.Tensor:
    return t * 2


def test_distinct_tensors_in_first_seen_order_and_sharing_kept() -> None:
    a, b = torch.ones(2), torch.zeros(3)
    batch = {"a": a, "b": [a, b], "c": (b, a)}
    tensors, rebuild = flatten_tensors(batch)
    assert len(tensors) == 2 and tensors[0] is a and tensors[1] is b
    out: Any = rebuild([a + 1, b + 1])
    assert out["a"] is out["b"][0] is out["c"][1]
    assert out["b"][1] is out["c"][0]
    assert torch.equal(out["a"], torch.full((2,), 2.0))


def test_plain_tensor_and_non_tensor_roots() -> None:
    t = torch.ones(1)
    assert torch.equal(map_tensors(double, t), torch.full((1,), 2.0))  # type: ignore[arg-type]
    assert map_tensors(double, "text") == "text"
    assert map_tensors(double, None) is None
    assert flatten_tensors(3)[0] == []


def test_every_container_kind_is_rebuilt_with_its_type() -> None:
    t = torch.ones(2)
    dd: collections.defaultdict[str, list[int]] = collections.defaultdict(list, k=t)  # type: ignore[arg-type]
    od = collections.OrderedDict([("z", t), ("a", 1)])
    batch = {
        "dd": dd,
        "od": od,
        "nt": Pair(t, "s"),
        "frozen": Frozen(t),
        "list_sub": Tagged([t]),
        "tuple_sub": Row((t, 1)),
        "dict_sub": Box(k=t),
        "deque": collections.deque([t]),
        "none": None,
        "size": torch.Size([2, 3]),
    }
    out: Any = map_tensors(double, batch)
    assert type(out["dd"]) is collections.defaultdict and out["dd"].default_factory is list
    assert out["dd"]["missing"] == []  # the factory works on the copy
    assert type(out["od"]) is collections.OrderedDict and list(out["od"]) == ["z", "a"]
    assert type(out["nt"]) is Pair and out["nt"].second == "s"
    assert type(out["frozen"]) is Frozen and out["frozen"].label == "f"
    assert type(out["list_sub"]) is Tagged
    assert type(out["tuple_sub"]) is Row and out["tuple_sub"][1] == 1
    assert type(out["dict_sub"]) is Box
    assert type(out["deque"]) is collections.deque
    assert out["none"] is None
    assert out["size"] == torch.Size([2, 3])
    for moved in (
        out["dd"]["k"],
        out["od"]["z"],
        out["nt"].first,
        out["frozen"].x,
        out["list_sub"][0],
        out["tuple_sub"][0],
        out["dict_sub"]["k"],
        out["deque"][0],
    ):
        assert torch.equal(moved, torch.full((2,), 2.0))
    # Shared once, shared everywhere.
    assert out["dd"]["k"] is out["frozen"].x


def test_dataclass_fields_without_init_are_carried() -> None:
    frozen = Frozen(torch.ones(1))
    object.__setattr__(frozen, "derived", torch.ones(3))
    out: Any = map_tensors(double, frozen)
    assert torch.equal(out.derived, torch.full((3,), 2.0))

    post = WithPostInit(torch.ones(2))
    out = map_tensors(double, post)
    assert torch.equal(out.x, torch.full((2,), 2.0))
    assert out.total.item() == 4.0  # the moved original, which __post_init__ agrees with


class Sealed:
    """A ``.to`` object with no state the walker can read."""

    __slots__ = ()

    def to(self, device: torch.device) -> Sealed:
        return self


def test_tensors_inside_objects_with_to_are_listed() -> None:
    movable = Movable(torch.ones(1))
    t = torch.ones(1)
    tensors, rebuild = flatten_tensors({"m": movable, "t": t, "again": movable.t})
    assert tensors == [movable.t, t]  # listed once, shared with the rest of the batch
    assert rebuild(tensors)["m"] is movable  # nothing changed: the very object
    out: Any = rebuild([torch.zeros(1), t])
    # A copy holding the replacement (no .to without a move), the input as it was.
    assert type(out["m"]) is Movable and out["m"].t is out["again"]
    assert torch.equal(movable.t, torch.ones(1))


def test_objects_with_to_and_no_state_are_leaves() -> None:
    sealed = Sealed()
    layout = flatten_batch({"m": sealed, "again": [sealed]})
    assert layout.movers == [sealed] and layout.tensors == []


def test_input_is_not_modified() -> None:
    t = torch.ones(2)
    inner = [t]
    batch = {"a": inner, "b": Pair(t, 0)}
    out: Any = map_tensors(double, batch)
    assert batch["a"] is inner and inner[0] is t and torch.equal(t, torch.ones(2))
    assert out["a"] is not inner


def test_skip_keys_leave_values_as_they_are() -> None:
    t = torch.ones(2)
    meta = {"ids": torch.arange(3), "names": ["x"]}
    batch = {"x": t, "meta": meta, "deep": [{"meta": t}]}
    tensors, rebuild = flatten_tensors(batch, skip_keys={"meta"})
    assert tensors == [t]
    out: Any = rebuild([t * 0])
    assert out["meta"] is meta
    assert out["deep"][0]["meta"] is t  # skipped at any depth
    assert torch.equal(out["x"], torch.zeros(2))


def test_rebuild_checks_the_count() -> None:
    _, rebuild = flatten_tensors([torch.ones(1), torch.ones(1)])
    with pytest.raises(ValueError, match="expected 2 tensors, got 1"):
        rebuild([torch.ones(1)])


# --- errors -----------------------------------------------------------------------------


@dataclasses.dataclass
class RejectsItsFields:
    x: torch.Tensor

    def __init__(self, value: torch.Tensor) -> None:
        self.x = value


class Point(NamedTuple):
    x: Any
    y: Any


class FixedPoint(Point):
    def __new__(cls, value: Any) -> FixedPoint:
        return super().__new__(cls, value, value)


class TwoArgRow(tuple[Any, ...]):
    def __new__(cls, a: Any, b: Any) -> TwoArgRow:
        return super().__new__(cls, (a, b))


class SelfCopying:
    """A dataclass whose __copy__ returns the object itself: its fields cannot be replaced."""

    def __copy__(self) -> SelfCopying:
        return self


@dataclasses.dataclass
class SelfCopyingRecord(SelfCopying):
    x: torch.Tensor


def test_constructors_that_reject_their_contents_are_not_called() -> None:
    batch = {"meta": [1, 2, RejectsItsFields(torch.ones(1))], "row": TwoArgRow(torch.ones(1), 2)}
    out: Any = map_tensors(double, batch)
    assert type(out["meta"][2]) is RejectsItsFields
    assert torch.equal(out["meta"][2].x, torch.full((1,), 2.0))
    assert type(out["row"]) is TwoArgRow and out["row"][1] == 2
    assert torch.equal(out["row"][0], torch.full((1,), 2.0))


def test_dataclass_that_cannot_be_copied_names_the_path() -> None:
    batch = {"meta": [1, 2, SelfCopyingRecord(torch.ones(1))]}
    with pytest.raises(tp.UnsupportedBatchError) as info:
        map_tensors(double, batch)
    message = str(info.value)
    assert "batch['meta'][2]" in message
    assert "SelfCopyingRecord" in message and "copy.copy returned the object itself" in message
    assert "skip_keys" in message and ".to(device)" in message
    assert isinstance(info.value, TypeError)


def test_namedtuples_whose_new_takes_other_arguments_are_rebuilt_without_it() -> None:
    out: Any = map_tensors(double, {"p": Pair(0, [FixedPoint(torch.ones(1))])})
    point = out["p"].second[0]
    assert type(point) is FixedPoint
    assert torch.equal(point.x, torch.full((1,), 2.0)) and point.y is point.x


def test_cycle_is_an_error_with_its_path() -> None:
    loop: list[Any] = [torch.ones(1)]
    loop.append({"again": loop})
    with pytest.raises(tp.UnsupportedBatchError, match=r"batch\['z'\]\[1\]\['again'\]"):
        flatten_tensors({"z": loop})


def test_too_deep_is_an_error() -> None:
    deep: Any = torch.ones(1)
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(tp.UnsupportedBatchError, match="nested more than"):
        flatten_tensors(deep)


def test_settled_accepts_only_what_needs_nothing_done() -> None:
    cpu, meta = torch.device("cpu"), torch.device("meta")
    t = torch.ones(2)
    nested = {"x": t, "meta": {"id": 3, "path": "a.jpg"}, "tags": ["a", None], "again": (t, 1.5)}
    assert settled(nested, cpu) == 2  # each occurrence counts
    assert settled(nested, meta) == -1  # a tensor would have to move
    assert settled(t, cpu) == 1 and settled([], cpu) == 0
    for walk_it in (
        {"x": t, "box": Box(a=1)},  # a dict subclass: its attributes need the walker
        {"x": Pair(t, 1)},  # a namedtuple
        [torch.nn.Parameter(torch.ones(1)).to("meta")],  # off the target
        {"x": t, "m": Movable(t)},  # an object
        [list(range(300))],  # big: the walk is cheaper
        "text",
    ):
        assert settled(walk_it, cpu) == -1
