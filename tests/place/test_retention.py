"""Moving a batch keeps nothing of it: classes made per batch and their objects die after it.

A collate function that builds ``namedtuple("batch", batch.keys())(**batch)`` makes a
class per batch; a cache keyed by class, an optree registration or a remembered
structure would keep every one of them alive. The oracle: weak references to the
classes (``fresh.py`` makes them) and to the input and result objects are dead after
the call returns and ``gc.collect()`` runs.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import gc
import itertools
import sys
import types
import weakref
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load
from torchport.place._tree import flatten_tensors

fresh = load("fresh")


def _moved_then_dropped(kinds: list[str], target: str, **options: Any) -> list[weakref.ref[Any]]:
    """Make fresh classes, move a batch of them, drop everything; weak references to it all."""
    classes = [fresh.make_class(kind) for kind in kinds]
    objects = [fresh.instance(cls, fresh.fresh_values(i)) for i, cls in enumerate(classes)]
    batch = {"objects": objects, "ids": objects[0]}
    out = tp.to_device(batch, target, **options)
    tensors, rebuild = flatten_tensors(out)
    rebuild(tensors)
    held = [*classes, *objects, *out["objects"], *tensors, *flatten_tensors(batch)[0]]
    return [_ref(obj) for obj in held if _ref(obj) is not None]


def _ref(obj: Any) -> weakref.ref[Any] | None:
    """A weak reference to ``obj``; None for objects that take none (tuples, lists)."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fresh.specs)
def test_classes_made_per_batch_and_their_objects_die_after_the_move(kinds: list[str]) -> None:
    refs = _moved_then_dropped(kinds, "meta")
    refs += _moved_then_dropped(kinds, "cpu")
    refs += _moved_then_dropped(kinds, "meta", skip_keys="ids")
    gc.collect()
    alive = [ref() for ref in refs if ref() is not None]
    assert not alive, f"kept alive after the call: {alive!r}"


def test_a_collate_functions_namedtuple_per_batch_is_not_kept() -> None:
    refs = []
    for step in range(50):
        batch = {"input_ids": torch.arange(4) + step, "label": torch.tensor(step)}
        made = collections.namedtuple("batch", batch.keys())(**batch)  # type: ignore[misc]
        out = tp.to_device(made, "meta")
        assert out.input_ids.is_meta and type(out) is type(made)
        refs.append(weakref.ref(type(made)))
        del made, out
    gc.collect()
    assert sum(ref() is not None for ref in refs) == 0


def _refused_class(how: str) -> type:
    """A class made per batch whose objects' ``.to`` the move refuses, ``how``."""

    def init(self: Any) -> None:
        self.t = torch.ones(2)
        self.table = {"w": torch.zeros(1)}
        if how == "uncopyable":
            self.q = torch.nested.nested_tensor([torch.ones(1), torch.ones(2)])

    def to(self: Any, device: Any) -> Any:
        if how == "raises":
            raise ValueError("refused")
        if how == "writes":
            self.table["w"] = self.table["w"].to(device)  # into the input's dict
        if how == "in_place":
            self.t.add_(1)
        out = type(self).__new__(type(self))
        out.__dict__.update({k: v.to(device) for k, v in vars(self).items() if k != "table"})
        out.table = {k: v.to(device) for k, v in self.table.items()}
        return out

    return type(f"Refused_{how}", (), {"__init__": init, "to": to})


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
def test_a_refused_move_keeps_nothing_once_its_error_is_dropped() -> None:
    # Every refusal x every way in (all 12 pairs, twice each), then one collection:
    # after the errors are dropped it frees every class, object and tensor. No cycle
    # of the move's keeps them (nor the batch's tensors) for a later one.
    refs: list[weakref.ref[Any]] = []
    for how in ("raises", "writes", "in_place", "uncopyable"):
        for where in ("batch", "inside", "loader"):
            for _ in range(2):
                cls = _refused_class(how)
                obj = cls()
                refs += [weakref.ref(cls), weakref.ref(obj), weakref.ref(obj.t)]
                batch = obj if where != "inside" else {"o": obj, "n": 1}
                with pytest.raises(tp.UnsupportedBatchError):
                    if where == "loader":
                        next(iter(tp.DeviceLoader([batch], device="meta")))
                    else:
                        tp.to_device(batch, "meta")
                del cls, obj, batch
    gc.collect()
    assert [r() for r in refs if r() is not None] == []


def _fresh_key(kind: str) -> tuple[Any, Any]:
    """A mapping key of ``kind`` made for one batch, and an object to watch die with it."""
    cls = fresh.make_class("plain")
    if kind == "tensor":
        key = torch.ones(1)
        return key, key
    if kind == "enum":
        members = enum.Enum(cls.__name__, ["x", "y"])  # type: ignore[misc]
        return members.x, members
    if kind == "instance":
        made = dataclasses.make_dataclass(cls.__name__, [("n", int)], frozen=True)
        return made(1), made
    if kind == "class":
        return cls, cls
    return ("k", cls), cls  # a tuple holding a class


_CALLS = (f"call {i}" for i in itertools.count())
_key_kinds = st.sampled_from(["tensor", "enum", "instance", "class", "tuple"])


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kinds=st.lists(_key_kinds, min_size=1, max_size=3),
    mapping=st.sampled_from(["dict", "OrderedDict", "defaultdict"]),
    way=st.sampled_from(["to_device", "loader", "skip_keys"]),
)
def test_a_batchs_mapping_keys_and_a_defaultdicts_factory_are_not_kept(
    kinds: list[str], mapping: str, way: str
) -> None:
    # A remembered structure holds its mapping keys: a tensor, an object or a class made
    # per batch used as a key (or a defaultdict's factory made per batch) must not
    # outlive the batch. The oracle: weak references to them die after one collection.
    refs: list[weakref.ref[Any]] = []
    for _ in range(2):  # the second batch of the same shape meets what the first left
        keys = [_fresh_key(kind) for kind in kinds]
        refs += [weakref.ref(watched) for _, watched in keys]
        # A key of its own per call: a structure never met before, so each call's is kept.
        items = [(key, torch.ones(2)) for key, _ in keys] + [(next(_CALLS), [torch.zeros(1)])]
        factory = fresh.make_class("plain")
        refs.append(weakref.ref(factory))
        inner: Any = (
            dict(items)
            if mapping == "dict"
            else collections.OrderedDict(items)
            if mapping == "OrderedDict"
            else collections.defaultdict(factory, items)
        )
        batch = {"m": inner, "l": [torch.ones(1)]}  # nested: the walker, not the flat path
        skip = [keys[0][0]] if way == "skip_keys" else []
        if way == "loader":
            out = next(iter(tp.DeviceLoader([batch], device="meta")))
        else:
            out = tp.to_device(batch, "meta", skip_keys=skip)
        assert out["l"][0].is_meta and all(t.is_meta for t in out["m"][items[-1][0]])
        del keys, items, factory, inner, batch, out, skip
    gc.collect()
    alive = [ref() for ref in refs if ref() is not None]
    assert not alive, f"kept alive after the move: {alive!r}"


class _OwnTo:
    """A batch class with its own ``.to`` (the whole-object path and its plans)."""

    def __init__(self, x: Any, y: Any, z: Any) -> None:
        self.x, self.y, self.z = x, y, z

    def to(self, device: Any, non_blocking: bool = False) -> Any:
        for name in ("x", "y"):
            setattr(self, name, getattr(self, name).to(device))
        return self


def _rebound_class(kind: str, module: str) -> type:
    """A new class of ``kind`` that ``module`` will hold under the name ``Batch``."""
    if kind == "own_to":
        made: type = type("Batch", (_OwnTo,), {})
    elif kind == "user_dict":
        made = type("Batch", (collections.UserDict,), {})
    else:
        made = fresh.make_class(kind)
    made.__module__, made.__qualname__, made.__name__ = module, "Batch", "Batch"
    return made


def _rebound_batch(cls: type, step: int) -> Any:
    x, y = torch.ones(2) + step, torch.zeros(1)
    if issubclass(cls, collections.UserDict):
        return cls(x=x, y=y)
    return fresh.instance(cls, (x, y, step))


# Each case ends in a full `gc.collect()` of the test process's heap (about a second of CPU
# late in the default run): the default run takes every kind one way and two kinds every
# way; the slow run (`-m slow`) the rest.
_REBOUND = [
    pytest.param(
        way,
        kind,
        marks=() if way == "to_device" or kind in ("namedtuple", "own_to") else pytest.mark.slow,
    )
    for way in ("to_device", "in_a_dict", "loader")
    for kind in (*fresh.KINDS, "own_to", "user_dict")
]


@pytest.mark.parametrize(("way", "kind"), _REBOUND)
def test_classes_a_module_global_held_only_for_one_batch_are_not_kept(way: str, kind: str) -> None:
    # A collate module that rebinds a global per batch (global Batch; Batch = namedtuple(...)):
    # the first class looked lasting while its module held it (place/_lasting.py).
    module = types.ModuleType("torchport_test_rebound_collate")
    sys.modules[module.__name__] = module
    try:
        refs = []
        for step in range(8):
            # The collate module's global names the newest class; the older ones are
            # held by nothing but the batches that were moved.
            made = _rebound_class(kind, module.__name__)
            module.Batch = made  # type: ignore[attr-defined]
            batch = _rebound_batch(made, step)
            refs.append(weakref.ref(made))
            if way == "loader":
                out = next(iter(tp.DeviceLoader([batch], device="meta")))
            else:
                out = tp.to_device(batch if way == "to_device" else {"b": batch}, "meta")
            del made, batch, out
        gc.collect()
        # Only the class the module still holds may be alive.
        alive = [i for i, ref in enumerate(refs) if ref() is not None]
        assert alive in ([], [len(refs) - 1]), f"classes of steps {alive} kept alive"
    finally:
        del sys.modules[module.__name__]
