"""Storages and random generators in a batch: refused naming their path, never kept on the host.

A storage holds its bytes outside any tensor (its own ``.to`` makes a storage no tensor
of the batch views) and a generator's state belongs to its device, so neither can be
moved as a tensor is; kept as it was, either would come back on the host with no word.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport as tp

LEAVES: dict[str, tuple[Callable[[], Any], str]] = {
    "untyped storage": (lambda: torch.arange(4.0).untyped_storage(), "is a storage"),
    "typed storage": (lambda: torch.arange(4.0)._typed_storage(), "is a storage"),
    "generator": (lambda: torch.Generator().manual_seed(3), "is a random generator"),
}


class Held(NamedTuple):
    first: Any
    second: Any


@dataclasses.dataclass
class Box:
    item: Any


# One step of a path: how a value is wrapped, and the path text it adds (the oracle's own).
WRAPS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "dict": (lambda v: {"x": torch.ones(1), "k": v}, "['k']"),
    "list": (lambda v: [torch.ones(1), v], "[1]"),
    "tuple": (lambda v: (v,), "[0]"),
    "namedtuple": (lambda v: Held(torch.ones(1), v), ".second"),
    "dataclass": (lambda v: Box(v), ".item"),
}


@settings(max_examples=60, deadline=None)
@given(
    leaf=st.sampled_from(sorted(LEAVES)),
    wraps=st.lists(st.sampled_from(sorted(WRAPS)), min_size=1, max_size=4),
    way=st.sampled_from(["to_device", "pack", "loader"]),
    target=st.sampled_from(["meta", "cpu"]),
)
def test_a_storage_or_generator_anywhere_is_refused_naming_its_path(
    leaf: str, wraps: list[str], way: str, target: str
) -> None:
    make, says = LEAVES[leaf]
    batch: Any = make()
    path = ""
    for wrap in wraps:  # innermost first: each wrap's text goes in front
        wrapper, step = WRAPS[wrap]
        batch, path = wrapper(batch), step + path
    with pytest.raises(tp.UnsupportedBatchError) as refused:
        if way == "loader":
            list(tp.DeviceLoader([batch], target))
        else:
            tp.to_device(batch, target, pack=True if way == "pack" else None)
    assert f"batch{path} {says}" in str(refused.value)


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_alone_or_under_a_skipped_key(leaf: str) -> None:
    make, says = LEAVES[leaf]
    value = make()
    with pytest.raises(tp.UnsupportedBatchError, match=f"the object {says}"):
        tp.to_device(value, "meta")
    out = tp.to_device({"keep": value, "x": torch.ones(2)}, "meta", skip_keys="keep")
    assert out["keep"] is value and out["x"].is_meta
