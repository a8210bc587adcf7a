"""A broken own ``.to`` after the first calls of a layout: when the moves still refuse it.

``place/_trust.py`` runs a move's checks of an own-``.to`` call in full on the first
``FIRST`` calls of each layout (class and the types of all the read lays) and then on
every ``EVERY``-th; the calls between run only what a layout leaves open. The broken
``.to`` kinds the other tests of ``tests/place`` refuse, each here as one mode of
:class:`Turns` (a ``.to`` right on its first calls, then broken from a call on):

- ``writes``: writes into a dict the shallow copy shares with the input
  (``test_own_to._WritesThrough``, ``test_untouched.WritesThrough``/``SomeValues``/
  ``_WritesThroughKeyed``, ``test_whole_code.WritesBooks``, ``test_threads._WritesThrough``);
- ``writes_list``: into a shared list (``test_whole.SharedWriter``);
- ``in_place``: changes one of the input's tensors in place (``test_untouched.ChangesATensor``);
- ``host``: its result holds a tensor it made on the host (``test_whole.HostMaker``/
  ``LateHostMaker``, ``test_whole_code.HostBox``, ``test_own_to.MakesATensor``,
  ``test_own_to_moves.MakesElsewhere``);
- ``unmoved``: ignores the device, gives the input's tensors back (``test_own_to_moves.
  ReturnsSelf``/``UnmovedCopy``/``MovesSome``/``Ignores``, ``test_moved_none.Masked``);
- ``raises``: raises (``test_untouched.FailsOnce``);
- ``other``: returns another type, holding a host tensor it made (``test_whole.Converts``);
- ``batch``: changes the batch holding it (``test_whole_held_walker.ChangesTheBatch``).

The oracle is each mode's own spec: a bad call is one the class's call count says is
bad. The bounds stated: a ``.to`` bad on the first call of a layout is refused on that
call; one that turns bad for good on a later call of a layout already trusted is
refused at the latest on its ``EVERY``-th bad call (the next sentinel), and every call
after that refusal is checked in full (refused on each). ``raises``, ``other`` and
``batch`` are answered on the very call, trusted or not; with ``TORCHPORT_FULL_CHECKS``
on (``FULL_CHECKS``) every bad call is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load
from torchport.place import _trust

_graphs = load("graphs")

META = torch.device("meta")
_MODES = ("writes", "writes_list", "in_place", "host", "unmoved", "raises", "other", "batch")
# The bound stated (place/_trust.py's EVERY): a .to that turns bad for good is refused
# at the latest on its 61st bad call, the next sentinel's.
_SENTINEL = 61
# Modes whose bad call is answered on that call whatever the layout's trust.
_AT_ONCE = {"raises", "other", "batch"}


class Broken(Exception):
    """What a ``raises`` mode's ``.to`` raises."""


class Other:
    """The type an ``other`` mode's ``.to`` returns."""

    def __init__(self, made: torch.Tensor) -> None:
        self.made = made


class Turns:
    """An own ``.to`` that moves a new copy right until its ``bad_from``-th call, then ``mode``.

    ``layout``: ``(tensors in d, items in a list or None, a nested dict or not)``.
    """

    calls = 0
    bad_from = 10**9
    mode = "writes"
    batch: Any = None

    def __init__(self, layout: tuple[int, int | None, bool]) -> None:
        count, items, nested = layout
        self.d = {f"k{i}": torch.full((i + 1,), float(i)) for i in range(count)}
        if items is not None:
            self.items = [torch.ones(2) * i for i in range(items)]
        if nested:
            self.inner = {"z": {"w": torch.zeros(3)}}

    def to(self, device: Any) -> Any:
        cls = type(self)
        cls.calls += 1
        mode = cls.mode if cls.calls >= cls.bad_from else None
        if mode == "raises":
            raise Broken("bad call")
        if mode == "unmoved":
            return self
        if mode == "other":
            return Other(torch.zeros(1))
        if mode == "writes":
            key = next(iter(self.d))
            self.d[key] = self.d[key].to(device)  # into the input's dict
        elif mode == "writes_list" and "items" in vars(self):
            self.items[0] = torch.ones(1)  # into the input's list
        elif mode == "writes_list":
            self.d["k0"] = torch.ones(1)  # (no list in this layout: into its dict)
        elif mode == "in_place":
            next(iter(self.d.values())).add_(0)
        elif mode == "batch" and isinstance(cls.batch, dict):
            cls.batch["added"] = torch.ones(3)
        out = cls.__new__(cls)
        out.__dict__.update({k: _graphs.moved_by_hand(v, device) for k, v in vars(self).items()})
        if mode == "host":
            out.made = torch.zeros(1)  # a tensor it made, on the host
        return out


class _Made:
    """Holds the classes made per example, so that they last (``place/_lasting.py``)."""


def _lasting_turns(mode: str, bad_from: int) -> type[Turns]:
    """A new class that lasts (movers may keep its plan), its call count at zero."""
    name = f"Turns{len(vars(_Made))}"
    made = type(name, (Turns,), {"__module__": __name__, "__qualname__": f"_Made.{name}"})
    made.mode, made.bad_from = mode, bad_from
    setattr(_Made, name, made)
    return made


def _move(way: str, obj: Turns) -> Any:
    """Move ``obj`` one way; gives the moved object (the batch's checked here)."""
    if way == "whole":
        return tp.to_device(obj, META)
    if way == "loader":
        return next(iter(tp.DeviceLoader([obj], device=META)))
    batch: dict[str, Any] = {"obj": obj, "n": 1} if way == "in a dict" else {"obj": obj}
    if way == "pair":
        batch["y"] = torch.ones(2)
    type(obj).batch = batch
    out = tp.to_device(batch, META)
    assert list(out) == [k for k in batch if k != "added"]  # the batch as read
    assert "added" not in out
    return out["obj"]


def _right(out: Any) -> bool:
    """The spec of a right move: every tensor reachable from the result on the target."""

    def tensors(value: Any) -> Iterator[torch.Tensor]:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from tensors(item)
        elif isinstance(value, list):
            for item in value:
                yield from tensors(item)
        elif hasattr(value, "__dict__"):
            yield from tensors(vars(value))

    return all(t.is_meta for t in tensors(out))


def _bad_refused(way: str, cls: type[Turns], layout: Any) -> bool:
    """One bad call of ``cls``: whether the move refused it (a passed one must be this
    mode's silent miss, never a raise of another kind)."""
    try:
        out = _move(way, cls(layout))
    except tp.UnsupportedBatchError:
        return True
    if cls.mode == "batch":
        assert _right(out)
        return True  # (its answer: the batch as read, checked by _move)
    return False


_layouts = st.tuples(st.integers(1, 3), st.one_of(st.none(), st.integers(1, 2)), st.booleans())
_WAYS = ["whole", "in a dict", "pair", "loader"]


@settings(max_examples=12, deadline=None)
@given(
    mode=st.sampled_from(_MODES),
    way=st.sampled_from(_WAYS),
    trusted=_layouts,
    fresh=_layouts,
    good=st.integers(_trust.FIRST, _trust.FIRST + 70),
)
def test_a_to_bad_on_the_first_call_of_a_layout_is_refused_on_it(
    mode: str, way: str, trusted: Any, fresh: Any, good: int
) -> None:
    # Good calls of one layout (trusted by then), then the first call of another: bad.
    if fresh == trusted:
        fresh = (fresh[0] % 3 + 1, fresh[1], fresh[2])
    cls = _lasting_turns(mode, good + 1)
    for _ in range(good):
        assert _right(_move(way, cls(trusted)))
    assert _bad_refused(way, cls, fresh), f"{mode}: the first call of a new layout passed"


@pytest.mark.parametrize("way", _WAYS)
@pytest.mark.parametrize("mode", _MODES)
@settings(max_examples=4, deadline=None)
@given(layout=_layouts, later=st.integers(0, 2 * _trust.EVERY))
def test_a_to_that_turns_bad_after_trusted_calls_is_refused_by_the_next_full_check(
    mode: str, way: str, layout: Any, later: int
) -> None:
    cls = _lasting_turns(mode, _trust.FIRST + 2 + later)  # (+2: the walker's, the first read)
    for _ in range(_trust.FIRST + 1 + later):
        assert _right(_move(way, cls(layout)))
    bad = 1
    while not _bad_refused(way, cls, layout):
        assert mode not in _AT_ONCE, f"{mode}: answered on the call itself, trusted or not"
        bad += 1
        assert bad <= _SENTINEL, f"{mode}: not refused by the next full check"
    for _ in range(3):  # refused once: checked in full on every call from then on
        assert _bad_refused(way, cls, layout)


@pytest.mark.parametrize("way", _WAYS)
@pytest.mark.parametrize("mode", _MODES)
def test_with_full_checks_on_every_bad_call_is_refused(mode: str, way: str) -> None:
    _trust.FULL_CHECKS[0] = True  # (TORCHPORT_FULL_CHECKS=1 at import)
    try:
        cls = _lasting_turns(mode, _trust.FIRST + 12)
        for _ in range(_trust.FIRST + 11):
            assert _right(_move(way, cls((2, 1, True))))
        assert _bad_refused(way, cls, (2, 1, True)), f"{mode}: a bad call passed, full checks on"
    finally:
        _trust.FULL_CHECKS[0] = False


def test_a_class_that_turns_good_again_is_not_trusted_again() -> None:
    # A class refused once stays checked in full, even on a layout it never met before.
    cls = _lasting_turns("unmoved", _trust.FIRST + 2)
    for _ in range(_trust.FIRST + 1):
        tp.to_device(cls((1, None, False)), META)
    with pytest.raises(tp.UnsupportedBatchError, match="moved none"):
        tp.to_device(cls((1, None, False)), META)
    assert cls in _trust.FAILED
    for _ in range(_trust.FIRST + 3):
        with pytest.raises(tp.UnsupportedBatchError, match="moved none"):
            tp.to_device(cls((2, 1, False)), META)


def test_results_of_two_types_keep_the_layout_checked_in_full() -> None:
    # The result's type is what a trusted layout's quick calls compare; a .to that gave
    # results of two types while checked in full is never trusted: a bad call of it,
    # however late, is refused on that call.
    cls = _lasting_turns("host", _trust.FIRST + 8)
    sub = type("Sub", (cls,), {"__module__": __name__, "__qualname__": f"_Made.{cls.__name__}S"})
    setattr(_Made, f"{cls.__name__}S", sub)
    plain = cls.to

    def to(self: Turns, device: Any) -> Any:
        out = plain(self, device)
        if type(self).calls == 3:  # (the plan's first call: the walker's, the first read)
            made = object.__new__(sub)
            made.__dict__.update(vars(out))
            return made  # the same state, as an object of another class
        return out

    cls.to = to  # type: ignore[method-assign]
    for _ in range(_trust.FIRST + 7):
        assert _right(tp.to_device(cls((1, None, False)), META))
    with pytest.raises(tp.UnsupportedBatchError):
        tp.to_device(cls((1, None, False)), META)
