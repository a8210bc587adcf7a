"""What a checkpoint holds, as the audit's prediction of ``torch.save``'s copies counts it."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from hypothesis import given
from hypothesis import strategies as st

from torchport.diagnose._predicted_placement import tensors_in


@dataclasses.dataclass
class TrainState:
    weights: Any
    step: int = 0


class Holder:
    """A plain object holding its values as attributes (an EMA, a metric tracker)."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.name = "holder"


def _graph(draw: st.DrawFn, tensors: list[torch.Tensor], level: int = 0) -> Any:
    """A checkpoint-like object; every tensor put in it is appended to ``tensors``."""
    kind = draw(st.sampled_from(["tensor", "atom"] if level >= 3 else [
        "tensor", "atom", "dict", "list", "tuple", "dataclass", "object", "module", "view",
    ]))  # fmt: skip
    if kind == "tensor":
        tensors.append(torch.full((draw(st.integers(1, 3)),), float(len(tensors))))
        return tensors[-1]
    if kind == "view" and tensors:  # another view of a storage already held: saved once
        return tensors[draw(st.integers(0, len(tensors) - 1))][:1]
    if kind in ("atom", "view"):
        return draw(st.sampled_from([1, 2.5, "name", None, torch.float32]))
    if kind == "module":
        module = torch.nn.Linear(2, draw(st.integers(1, 3)))
        tensors.extend([module.weight, module.bias])
        return module
    children = [_graph(draw, tensors, level + 1) for _ in range(draw(st.integers(0, 3)))]
    if kind == "dict":
        return {f"k{i}": child for i, child in enumerate(children)}
    if kind == "list":
        return children
    if kind == "tuple":
        return tuple(children)
    if kind == "dataclass":
        return TrainState(children)
    return Holder(children)


@st.composite
def checkpoints(draw: st.DrawFn) -> tuple[Any, list[torch.Tensor]]:
    tensors: list[torch.Tensor] = []
    return _graph(draw, tensors), tensors


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


@given(checkpoints())
def test_every_storage_the_checkpoint_holds_is_found_once(
    case: tuple[Any, list[torch.Tensor]],
) -> None:
    checkpoint, put_in = case
    found = tensors_in(checkpoint)
    assert len({_storage(t) for t in found}) == len(found)  # each storage once
    assert {_storage(t) for t in found} == {_storage(t) for t in put_in}


def test_tensors_inside_a_dataclass_and_an_object_beside_a_module_are_found() -> None:
    ema = torch.ones(4)
    model = torch.nn.Linear(2, 2)
    checkpoint = {"state": TrainState(ema), "tracker": Holder([model, torch.zeros(1)])}
    assert len(tensors_in(checkpoint)) == 4  # ema, weight, bias, zeros
