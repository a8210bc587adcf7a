"""A layout trusted for one target or ``non_blocking``, or for some objects of a batch only.

``place/_trust.py`` skips most checks of an own-``.to`` call once a layout's first
``FIRST`` calls passed them. A ``.to`` may treat each device, or a non-blocking call,
its own way (moves to ``meta`` right and ignores any other device; pins its tensors
for a non-blocking call and forgets to move them): such a ``.to`` misbehaves for
every object of the layout, whatever its values, and must be refused on the first
call with that target or ``non_blocking``, however many calls of another passed
before (z33: both passed unseen with the result's tensors on the host).

Calls of two kinds taken in turn, and several objects of one layout in one batch
(moved in turn), must each meet the sentinel (every ``EVERY``-th call checked in
full): a ``.to`` bad for good on one kind, or on one of the objects only, is refused
by its ``EVERY``-th bad call (z33: with one count per plan and ``EVERY = 64`` every
sentinel fell on the same kind, or on the same object of two).

The oracle is each class's own spec, written here: a call is bad when its target's
type, or its ``non_blocking``, is not the one the class moves right, or (the classes
that turn) from a drawn call on, for one kind or for objects holding more than 3 values.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.sim.isolated import run_isolated
from torchport.place import _trust

META = torch.device("meta")
_WAYS = ["whole", "in a dict", "pair"]


class ByBlocking:
    """Moves right when ``non_blocking`` is ``good``; else clones its tensors on the host."""

    good: Any = False

    def __init__(self, size: int) -> None:
        self.x = torch.arange(float(size))
        self.parts = {"y": torch.ones(2), "z": torch.zeros(size)}

    def to(self, device: Any, non_blocking: Any = False) -> Any:
        right = non_blocking == type(self).good
        out = object.__new__(type(self))
        out.x = self.x.to(device) if right else self.x.clone()
        out.parts = {k: v.to(device) if right else v.clone() for k, v in self.parts.items()}
        return out


class _Made:
    """Holds the classes made per example, so that they last (``place/_lasting.py``)."""


def _lasting(good: Any) -> type[ByBlocking]:
    name = f"ByBlocking{len(vars(_Made))}"
    made = type(name, (ByBlocking,), {"__module__": __name__, "__qualname__": f"_Made.{name}"})
    made.good = good
    setattr(_Made, name, made)
    return made


def _move(way: str, obj: Any, non_blocking: Any) -> Any:
    if way == "whole":
        return tp.to_device(obj, META, non_blocking=non_blocking)
    batch: dict[str, Any] = {"obj": obj, "n": 1} if way == "in a dict" else {"obj": obj}
    if way == "pair":
        batch["y"] = torch.ones(2)
    return tp.to_device(batch, META, non_blocking=non_blocking)["obj"]


def _on_meta(out: ByBlocking) -> bool:
    return out.x.is_meta and all(v.is_meta for v in out.parts.values())


@settings(max_examples=15, deadline=None)
@given(
    way=st.sampled_from(_WAYS),
    good=st.sampled_from([False, True]),
    calls=st.integers(_trust.FIRST, _trust.FIRST + 70),
    size=st.integers(1, 4),
)
def test_a_to_bad_for_another_non_blocking_is_refused_on_its_first_such_call(
    way: str, good: bool, calls: int, size: int
) -> None:
    cls = _lasting(good)
    for _ in range(calls):
        assert _on_meta(_move(way, cls(size), good))
    with pytest.raises(tp.UnsupportedBatchError, match="still holds a tensor on cpu"):
        _move(way, cls(size), not good)
    assert cls in _trust.FAILED  # (refused once: checked in full for good)


# Targets: ``meta`` and the simulated accelerator, in a child (the simulator stays
# installed in a process for good). ``MetaOnly`` moves to meta right and ignores any
# other device; ``SimOnly`` the other way round; ``Right`` moves to any device.
_CHILD = """
import sys, types
import torchport as tp
from torchport.place import _trust
from hypothesis import given, settings, strategies as st

SIM = simulate_accelerator()
META = torch.device("meta")
CPU = torch.device("cpu")
home = types.ModuleType("z33_classes")
sys.modules["z33_classes"] = home


class Moves:
    kind = None  # the device type it moves to right; None: every one

    def __init__(self, size):
        self.x = torch.arange(float(size)) + 0.5
        self.parts = {"y": torch.ones(2) * size, "i": torch.arange(size)}

    def to(self, device, non_blocking=False):
        device = torch.device(device)
        right = type(self).kind in (None, device.type)
        out = object.__new__(type(self))
        out.x = self.x.to(device) if right else self.x.clone()
        out.parts = {k: v.to(device) if right else v.clone() for k, v in self.parts.items()}
        return out


made = [0]


def lasting(kind):
    made[0] += 1
    name = f"Moves{made[0]}"
    cls = type(name, (Moves,), {"__module__": "z33_classes", "__qualname__": name, "kind": kind})
    setattr(home, name, cls)
    return cls


def way_move(way, obj, target):
    if way == "whole":
        return tp.to_device(obj, target)
    if way == "loader":
        return next(iter(tp.DeviceLoader([obj], device=target)))
    return tp.to_device({"obj": obj, "y": torch.ones(2)}, target)["obj"]


def same(out, obj, target):
    tensors = [out.x, *out.parts.values()]
    if not all(t.device.type == target.type for t in tensors):
        return False
    if target.type == "meta":
        return True
    want = [obj.x, *obj.parts.values()]
    return all(torch.equal(t.cpu(), w.cpu()) for t, w in zip(tensors, want))


count = {"refused": 0, "right": 0}
WAYS = ["whole", "pair", "loader"]


@settings(max_examples=12, deadline=None, database=None, derandomize=True)
@given(st.sampled_from(WAYS), st.sampled_from(["meta", "sim"]), st.integers(8, 80),
       st.integers(1, 4))
def wrong_target(way, trusted, calls, size):
    first, then = (META, SIM) if trusted == "meta" else (SIM, META)
    cls = lasting(trusted)
    for _ in range(calls):
        obj = cls(size)
        assert same(way_move(way, obj, first), obj, first)
    try:
        out = way_move(way, cls(size), then)
    except tp.UnsupportedBatchError:
        count["refused"] += 1
        return
    raise AssertionError(f"{way}: a .to that ignores {then} passed after {calls} on {first}")


@settings(max_examples=12, deadline=None, database=None, derandomize=True)
@given(st.sampled_from(WAYS), st.lists(st.sampled_from(["meta", "sim", "back"]), min_size=20,
       max_size=90), st.integers(1, 4))
def right_any_target(way, targets, size):
    # A right .to, moved to meta, to sim and from sim back to the CPU by one plan, in any
    # order: every result on its target with the input's values, the input unchanged.
    cls = lasting(None)
    for target in targets:
        obj = cls(size)
        if target == "back":
            obj = obj.to(SIM)
        want = [obj.x.cpu(), *(v.cpu() for v in obj.parts.values())]
        to = {"meta": META, "sim": SIM, "back": CPU}[target]
        assert same(way_move(way, obj, to), obj, to), (way, target)
        assert all(torch.equal(t.cpu(), w) for t, w in zip([obj.x, *obj.parts.values()], want))
        count["right"] += 1


wrong_target()
right_any_target()
print(json.dumps(count))
"""


@pytest.mark.needs_simulator
def test_a_to_bad_on_another_target_is_refused_and_a_right_one_keeps_values() -> None:
    count = run_isolated(_CHILD, timeout=600)
    assert count["refused"] == 12 and count["right"] >= 12 * 20


class TurnsBlocking(ByBlocking):
    """Right on every call until its ``bad_from``-th; from then on a call with
    ``non_blocking=True`` clones its tensors on the host (the other kind stays right)."""

    calls = 0
    bad_from = 10**9

    def to(self, device: Any, non_blocking: Any = False) -> Any:
        cls = type(self)
        cls.calls += 1
        bad = cls.calls >= cls.bad_from and non_blocking is True
        out = object.__new__(cls)
        out.x = self.x.clone() if bad else self.x.to(device)
        out.parts = {k: v.clone() if bad else v.to(device) for k, v in self.parts.items()}
        return out


@settings(max_examples=10, deadline=None)
@given(
    way=st.sampled_from(_WAYS),
    blocking_first=st.booleans(),
    later=st.integers(2 * _trust.FIRST, 2 * _trust.FIRST + 140),
)
def test_calls_of_two_kinds_in_turn_each_reach_their_sentinel(
    way: str, blocking_first: bool, later: int
) -> None:
    # Calls alternate non_blocking False/True (as to_device's default and a loader's, or
    # two targets, may); the .to turns bad for good on its True calls only. The bound
    # stated (place/_trust.py): refused at the latest on the EVERY-th bad call, whichever
    # kind comes first (a33: one count for both put every sentinel on the same kind).
    name = f"TurnsBlocking{len(vars(_Made))}"
    cls = type(name, (TurnsBlocking,), {"__module__": __name__, "__qualname__": f"_Made.{name}"})
    setattr(_Made, name, cls)
    kinds = [False, True] if blocking_first else [True, False]
    for i in range(later):
        assert _on_meta(_move(way, cls(2), kinds[i % 2]))
    cls.bad_from = cls.calls + 1
    bad = 0
    for i in range(later, later + 4 * _trust.EVERY):
        try:
            out = _move(way, cls(2), kinds[i % 2])
        except tp.UnsupportedBatchError:
            assert kinds[i % 2] is True  # (only the bad kind is refused)
            return
        if kinds[i % 2] is True:
            assert not _on_meta(out)  # (the oracle: its True calls are bad now)
            bad += 1
            assert bad <= _trust.EVERY, "the bad kind's calls never reached a full check"
    raise AssertionError("not refused")


class BigBad:
    """Right until its ``bad_from``-th call; from then on, for an object holding more
    than 3 values, clones its tensor on the host (a ``.to`` bad for some values only)."""

    calls = 0
    bad_from = 10**9

    def __init__(self, size: int) -> None:
        self.x = torch.arange(float(size))

    def to(self, device: Any, non_blocking: Any = False) -> Any:
        cls = type(self)
        cls.calls += 1
        out = object.__new__(cls)
        bad = cls.calls >= cls.bad_from and self.x.numel() > 3
        out.x = self.x.clone() if bad else self.x.to(device)
        return out


@settings(max_examples=10, deadline=None)
@given(
    count=st.integers(2, 5),
    big=st.data(),
    later=st.integers(_trust.FIRST, _trust.FIRST + 140),
)
def test_each_of_several_objects_of_one_layout_in_a_batch_meets_a_sentinel(
    count: int, big: st.DataObject, later: int
) -> None:
    # A batch holds `count` objects of one layout, moved in turn; one of them (at a drawn
    # place) is bad for good from a call on. The bound stated (place/_trust.py): refused
    # at the latest on its EVERY-th bad call (a33's EVERY = 64: with 2 objects the second
    # one's calls never fell on a sentinel, 381 of 400 bad batches passed).
    at = big.draw(st.integers(0, count - 1))
    name = f"BigBad{len(vars(_Made))}"
    cls = type(name, (BigBad,), {"__module__": __name__, "__qualname__": f"_Made.{name}"})
    setattr(_Made, name, cls)

    def batch() -> dict[str, Any]:
        return {f"o{i}": cls(5 if i == at else 2) for i in range(count)} | {"n": 1}

    for _ in range(later):
        out = tp.to_device(batch(), META)
        assert all(out[f"o{i}"].x.is_meta for i in range(count))
    cls.bad_from = cls.calls + 1
    for _ in range(_trust.EVERY):
        try:
            out = tp.to_device(batch(), META)
        except tp.UnsupportedBatchError:
            return
        assert not out[f"o{at}"].x.is_meta  # (the oracle: that object's calls are bad now)
    raise AssertionError(f"object {at} of {count}: not refused by its {_trust.EVERY}th bad call")
