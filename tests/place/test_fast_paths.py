"""The quick paths against the general path, on generated batches.

Two shortcuts skip the walker: ``settled()`` (``DeviceLoader`` on the CPU yields a
batch as it is when it says nothing has to move) and ``to_device``'s direct paths
for small tuples, lists and dicts of plain tensors. Each must give exactly what
the general path gives: the walker, reached here by passing a ``skip_keys`` no
batch uses (which turns every direct path off and changes nothing else for these
batches). The oracle for ``settled()`` is a walk of builtin containers written
here (``_look``), apart from the code under test.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp
from tests.sim.isolated import run_isolated
from torchport.errors import UnsupportedBatchError
from torchport.place import settled

CPU = torch.device("cpu")
META = torch.device("meta")
NEVER = "__no batch has this key__"  # skip_keys that turns the direct paths off
PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)
VALUES = (int, float, bool, str, bytes, type(None))

Pair = collections.namedtuple("Pair", "a b")


class Sub(torch.Tensor):
    """A tensor subclass: never a plain tensor to the quick paths."""


class Holder:
    def __init__(self, t: Any) -> None:
        self.t = t


class Box(dict[str, Any]):
    pass


def _pool() -> list[Any]:
    cpu = torch.arange(6.0).reshape(2, 3)
    return [
        cpu,
        cpu,  # the same object twice: shared
        torch.ones(3, dtype=torch.int64),
        torch.zeros(2, 2).t(),  # not contiguous
        torch.randn(2, requires_grad=True),
        torch.nn.Parameter(torch.ones(2)),
        torch.ones(2, device="meta"),
        torch.nn.Parameter(torch.ones(1, device="meta")),
        torch.ones(2).as_subclass(Sub),
    ]


POOL = _pool()


def _object_array(t: torch.Tensor) -> Any:
    """A numpy array of Python objects holding ``t`` (not converted by numpy)."""
    held = np.empty(2, dtype=object)
    held[0], held[1] = t, 1
    return held


def leaves(tensors: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Leaves of every kind a batch holds, tensors drawn from ``tensors``."""
    return st.one_of(
        tensors,
        st.integers(-3, 3),
        st.floats(allow_nan=False, width=32),
        st.booleans(),
        st.text(max_size=3),
        st.just(b"x"),
        st.none(),
        st.just(np.arange(3)),  # numeric: a value once the walker has met one
        st.builds(_object_array, tensors),
        st.builds(Pair, tensors, st.integers()),
        st.builds(Holder, tensors),
        st.builds(lambda t: Box(x=t), tensors),
        st.just(list(range(300))),  # big: the quick look gives up
    )


def batches(tensors: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Nested builtin containers of :func:`leaves`."""
    return st.recursive(
        leaves(tensors),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.lists(inner, max_size=4).map(tuple),
            st.dictionaries(st.sampled_from("abcde"), inner, max_size=4),
        ),
        max_leaves=12,
    )


def small(tensors: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    """Up to four items, mostly tensors: the direct path's sizes and their neighbours."""
    return st.lists(st.one_of(tensors, tensors, st.integers()), max_size=4)


BATCHES = batches(st.sampled_from(POOL))
SMALL = small(st.sampled_from(POOL))


def _look(batch: Any, target: torch.device) -> tuple[int, bool, bool, int]:
    """The oracle: (tensors seen, one is off ``target``, something other than builtin
    containers, plain tensors and plain values is inside, items in builtin containers).

    A numpy array of numbers counts as "other" here too: ``settled()`` takes it as a
    value only once the walker has met one, so it may or may not give up on it.
    """
    count, off, other, items = 0, False, False, 0
    stack = [batch]
    while stack:
        x = stack.pop()
        kind = type(x)
        if kind in PLAIN_TENSORS:
            count += 1
            off = off or x.device != target
        elif kind in VALUES:
            continue
        elif kind is dict:
            items += len(x)
            stack.extend(x.values())
        elif kind is list or kind is tuple:
            items += len(x)
            stack.extend(x)
        else:
            other = True
            if kind is np.ndarray and not x.dtype.hasobject:
                continue  # holds no tensor
            off = off or any(t.device != target for t in _tensors(x))
    return count, off, other, items


def _tensors(root: Any) -> list[torch.Tensor]:
    """Every tensor in ``root``'s builtin containers, namedtuples, dict subclasses and
    objects' ``__dict__``, in order (numpy object arrays too)."""
    found: list[torch.Tensor] = []
    stack = [root]
    while stack:
        x = stack.pop()
        if isinstance(x, torch.Tensor):
            found.append(x)
        elif isinstance(x, dict):
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, list | tuple):
            stack.extend(reversed(x))
        elif isinstance(x, np.ndarray) and x.dtype.hasobject:
            stack.extend(reversed(list(x.ravel())))
        elif isinstance(x, Holder):
            stack.append(x.t)
    return found


def _values(root: Any) -> list[Any]:
    """Every leaf of ``root``'s builtin containers."""
    found: list[Any] = []
    stack = [root]
    while stack:
        x = stack.pop()
        if type(x) is dict:
            stack.extend(x.values())
        elif type(x) is list or type(x) is tuple:
            stack.extend(x)
        else:
            found.append(x)
    return found


def _general(batch: Any, target: torch.device) -> Any:
    return tp.to_device(batch, target, skip_keys=(NEVER,))


@given(BATCHES, st.sampled_from([CPU, META]))
def test_settled_says_what_the_general_path_finds(batch: Any, target: torch.device) -> None:
    found = settled(batch, target)
    count, off, other, items = _look(batch, target)
    if found >= 0:
        # Safe: nothing of the batch would move, so the batch as it is is the result.
        assert not off and found == count
        assert not other or any(type(x) is np.ndarray for x in _values(batch))
        moved = _general(batch, target)
        assert [id(t) for t in _tensors(moved)] == [id(t) for t in _tensors(batch)]
    elif not off and not other and items <= 256 and type(batch) not in VALUES:
        pytest.fail(f"settled() gave up on a batch of builtin containers already there: {batch!r}")


@given(BATCHES)
def test_cpu_loader_hands_over_what_the_general_path_gives(batch: Any) -> None:
    try:
        expected = _general(batch, CPU)
    except UnsupportedBatchError as exc:
        with pytest.raises(type(exc)):
            list(tp.DeviceLoader([batch], "cpu"))
        return
    (handed,) = list(tp.DeviceLoader([batch], "cpu"))
    got, want = _tensors(handed), _tensors(expected)
    assert [t.device for t in got] == [t.device for t in want] == [CPU] * len(got)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    # Already there: the very tensors, shared as in the input.
    source = _tensors(batch)
    same = [i for i, t in enumerate(source) if t.is_cpu]
    assert all(got[i] is source[i] and want[i] is source[i] for i in same)


def _check_same(batch: Any, fast: Any, slow: Any, target: torch.device) -> None:
    assert type(fast) is type(slow) is type(batch) and len(fast) == len(slow) == len(batch)
    if type(batch) is not tuple:
        assert fast is not batch  # the input is never handed back to be changed
    if type(batch) is dict:
        assert list(fast) == list(slow) == list(batch)  # the keys, in their order
        batch, fast, slow = list(batch.values()), list(fast.values()), list(slow.values())
    for i, (src, a, b) in enumerate(zip(batch, fast, slow, strict=True)):
        if not isinstance(src, torch.Tensor):
            assert a is src and b is src
            continue
        if src.device == target:
            assert a is src and b is src
            continue
        assert a is not src and b is not src
        assert (a.device, a.dtype, a.shape, a.stride()) == (b.device, b.dtype, b.shape, b.stride())
        assert a.device == target and a.requires_grad == b.requires_grad
        assert type(a) is type(b)
        if target.type != "meta":
            assert torch.equal(a.detach().cpu(), src.detach().cpu())
        for j in range(i):  # sharing: the same input tensor gives the same result
            assert (fast[j] is a) == (batch[j] is src) == (slow[j] is b)


def _compare(batch: Any, target: torch.device) -> None:
    try:
        slow = _general(batch, target)
    except UnsupportedBatchError as exc:
        with pytest.raises(type(exc)):
            tp.to_device(batch, target)
        return
    fast = tp.to_device(batch, target)
    _check_same(batch, fast, slow, target)


def _build(kind: type, items: list[Any]) -> Any:
    return dict(zip("abcd", items, strict=False)) if kind is dict else kind(items)


@given(SMALL, st.sampled_from([tuple, list, dict]), st.sampled_from([CPU, META]))
def test_small_batches_move_as_the_general_path_moves_them(
    items: list[Any], kind: type, target: torch.device
) -> None:
    _compare(_build(kind, items), target)


def test_direct_paths_on_chosen_batches() -> None:
    x, y, mask = torch.randn(4, 2), torch.arange(4), torch.ones(4, dtype=torch.bool)
    out = tp.to_device((x, y, mask), "meta")
    assert type(out) is tuple and all(t.is_meta for t in out)
    assert [t.shape for t in out] == [x.shape, y.shape, mask.shape]
    batch = (x, y, mask)
    assert tp.to_device(batch, "cpu") is batch  # nothing to move: the tuple as it is
    pair = [x, y]
    again = tp.to_device(pair, "cpu")
    assert again == pair and again is not pair and again[0] is x
    shared = tp.to_device([x, y, x], "meta")
    assert shared[0] is shared[2] and shared[0] is not shared[1]
    # One tensor (move_few moves it item by item): as the general path moves it.
    for batch in ((x,), [x], [torch.ones(2, device="meta")], (torch.ones(2, device="meta"),)):
        for target in (META, CPU):
            _compare(batch, target)
    # A tensor twice in the direct paths' sizes: copied once, as the general path does.
    for batch in ((x, x), [x, x], (x, y, x), [y, x, x], {"a": x, "b": x}, {"a": x, "b": y}):
        for target in (META, CPU):
            _compare(batch, target)


_CHILD = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parents[2])!r})
import tests.place.test_fast_paths as f
from hypothesis import given, settings, strategies as st

SIM = simulate_accelerator()
# A tensor subclass cannot be moved to the simulator (its tensors are SimTensor objects:
# both paths refuse it, tests/place/test_on_sim.py), so the pool leaves it out here.
HELD = [t for t in f.POOL if type(t) is not f.Sub]
TENSORS = st.sampled_from(HELD + [torch.ones(3, device=SIM), torch.arange(4, device=SIM)])
seen = {{"settled": 0, "moved": 0}}


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(f.batches(TENSORS), st.sampled_from([f.CPU, SIM]))
def looks(batch, target):
    found = settled(batch, target)
    count, off, other, items = f._look(batch, target)
    if found >= 0:
        assert not off and found == count, (batch, target)
        seen["settled"] += 1


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(f.small(TENSORS), st.sampled_from([tuple, list, dict]), st.sampled_from([f.CPU, SIM]))
def moves(items, kind, target):
    f._compare(f._build(kind, items), target)
    seen["moved"] += 1


from torchport.place import settled
looks()
moves()
print(json.dumps(seen))
"""


@pytest.mark.needs_simulator
def test_on_the_simulated_accelerator() -> None:
    seen = run_isolated(_CHILD)
    assert seen["settled"] > 0 and seen["moved"] > 0
