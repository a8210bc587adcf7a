"""An own ``.to`` that moved none of the input's tensors is refused (``place/_moved_none.py``).

The case here: a ``.to`` that ignores its device for what the object holds but makes a
new tensor on it (a mask, a cache), so the result "holds a tensor it made" while every
tensor of the input comes back on the host. The oracle is the test's own: the input's
tensors (``reachability.py``'s walk) that are still reachable from what ``to_device``
returned, with none of them on the target, is a silent wrong result; a right ``.to``
making the same extra tensor, or keeping some bookkeeping tensors where they are (as
PyG's ``_slice_dict``), must still move.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load

_reach = load("reachability")
_graphs = load("graphs")

META = torch.device("meta")


class Masked:
    """Its ``.to`` adds a mask made on the device; ``moves`` says whether it moves the rest.

    ``kept`` names the attributes a right ``.to`` leaves where they are (bookkeeping).
    """

    def __init__(self, moves: bool, kept: tuple[str, ...], **state: Any) -> None:
        self.moves = moves
        self.kept = kept
        self.__dict__.update(state)

    def to(self, device: Any) -> Masked:
        new = copy.copy(self)
        if self.moves:
            for name, value in list(self.__dict__.items()):
                if name not in self.kept:
                    new.__dict__[name] = _graphs.moved_by_hand(value, device)
        new.mask = torch.ones(1, device=device)
        return new


_VALUES = st.one_of(
    st.integers(1, 3).map(torch.zeros),
    st.dictionaries(st.sampled_from("abc"), st.integers(1, 3).map(torch.zeros), max_size=2),
    st.lists(st.integers(1, 3).map(torch.zeros), max_size=2),
    st.sampled_from([None, 1, "s"]),
)

_PATHS: dict[str, Callable[[Any], Any]] = {
    "alone": lambda x: tp.to_device(x, META),
    "in a list": lambda x: tp.to_device([x], META)[0],
    "in a dict": lambda x: tp.to_device({"b": x, "n": 1}, META)["b"],
    "through the loader": lambda x: next(iter(tp.DeviceLoader([x], META))),
}


@settings(max_examples=60, deadline=None)
@given(
    state=st.dictionaries(st.sampled_from(["x", "y", "store", "books"]), _VALUES, min_size=1),
    moves=st.booleans(),
    keep_books=st.booleans(),
    path=st.sampled_from(sorted(_PATHS)),
)
def test_a_to_that_only_adds_a_tensor_on_the_device_is_refused(
    state: dict[str, Any], moves: bool, keep_books: bool, path: str
) -> None:
    kept = ("books",) if keep_books else ()
    tp.to_device(Masked(True, (), w=torch.ones(1)), META)  # registers the class first
    obj = Masked(moves, kept, **state)
    held = [t for _, t in _reach.tensors(obj)]
    taken = _reach.snapshot(obj)
    # The oracle: the input tensors a right reading of this .to replaces by moved copies.
    replaced = [
        t for name in state if moves and name not in kept for _, t in _reach.tensors(state[name])
    ]
    if held and not replaced:
        # It returns every input tensor where it was (none on meta): refused.
        with pytest.raises(tp.UnsupportedBatchError, match="moved none"):
            _PATHS[path](obj)
        assert _reach.snapshot(obj) == taken, "a refused move changed its input"
        return
    result = _PATHS[path](obj)
    assert _reach.snapshot(obj) == taken, "to_device changed its input"
    reachable = {id(t) for _, t in _reach.tensors(result)}
    assert not any(id(t) in reachable for t in replaced), "an input tensor came back unmoved"
    assert all(
        t.is_meta
        for name, value in result.__dict__.items()
        if name not in kept
        for _, t in _reach.tensors(value)
    )


@pytest.mark.parametrize("path", sorted(_PATHS))
def test_an_unmoving_to_with_a_new_device_tensor_is_refused_on_every_path(path: str) -> None:
    obj = Masked(False, (), x=torch.zeros(2), store={"a": torch.zeros(1)})
    taken = _reach.snapshot(obj)
    for _ in range(3):  # the later moves go by the class's plans
        with pytest.raises(tp.UnsupportedBatchError, match="returned every one of the input's"):
            _PATHS[path](obj)
        assert _reach.snapshot(obj) == taken


@pytest.mark.parametrize("path", sorted(_PATHS))
def test_an_unmoving_to_whose_tensors_all_sit_in_a_shared_dict_is_refused(path: str) -> None:
    # Every input tensor sits in a dict the shallow copy shares (as PyG's _slice_dict),
    # and the one tensor found outside it is on the target: the shared dict holds exactly
    # as many tensors as the input, so counting them must not answer "not all held".
    obj = Masked(False, (), store={"a": torch.zeros(1), "b": torch.zeros(2)})
    taken = _reach.snapshot(obj)
    for _ in range(3):  # the later moves go by the class's plans
        with pytest.raises(tp.UnsupportedBatchError, match="returned every one of the input's"):
            _PATHS[path](obj)
        assert _reach.snapshot(obj) == taken
