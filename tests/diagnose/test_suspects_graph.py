"""The autograd.Function a wrong-device gradient came from, found through the failing
line's graph however many C++ nodes lie between the loss and it
(:func:`torchport.diagnose._suspects.autograd_function`).

Oracle: the class the test built the graph with. Two classes share the name, so the
fallback on class names cannot decide: only the graph can.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from torchport.diagnose._suspects import autograd_function  # noqa: E402


def _first() -> type[torch.autograd.Function]:
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
            return grad * 2

    return Scale


def _second() -> type[torch.autograd.Function]:
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            return x * 3

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
            return grad * 3

    return Scale


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(0, 12), which=st.sampled_from([_first, _second]))
def test_the_function_is_found_behind_any_chain_of_ops(depth: int, which: Any) -> None:
    # On torch 2.11 each read of a C++ node makes a new Python object, freed after: the
    # walk held ids alone and took a node two ops on, given a freed node's id, for seen.
    chosen = which()
    other = (_second if which is _first else _first)()  # same name: the graph must decide
    x = torch.randn(4, requires_grad=True)
    y = chosen.apply(x)
    for _ in range(depth):
        y = y * 1.5
    loss = y.sum()
    said = "Function ScaleBackward returned an invalid gradient at index 0 - expected device "
    suspect = autograd_function(said + "meta but got cpu", [loss])
    assert suspect is not None and suspect.found, (suspect, other)
    assert f"autograd.Function {chosen.__qualname__} " in suspect.sentence
