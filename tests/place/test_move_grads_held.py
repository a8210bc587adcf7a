"""Parameters whose ``.grad`` is held elsewhere: moved whole, or refused with nothing moved.

torch swaps a ``.grad`` after it swapped its parameter and let go of the ``.grad``; a
view of that ``.grad`` (another parameter's ``.grad`` set to a slice of it, a slice the
caller keeps) makes that swap fail half-way, and the ``.grad`` was lost with no word
(and, to ``meta``, a later parameter replaced). The oracle below reads only the module.

Installing the simulated accelerator changes a process for good (torch then reports an
accelerator), so the suite's process runs these on ``meta`` and one test runs this file
again in a child, on ``sim`` (:data:`_ON_SIM`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import torchport as tp

_ON_SIM = "TORCHPORT_TEST_SIM_PROCESS"  # set in a child meant to hold the simulator (conftest)
_TARGETS = ["sim"] if os.environ.get(_ON_SIM) else ["meta"]


def _state(model: nn.Module) -> list[tuple[int, str, torch.Tensor | None, int | None]]:
    """(id, device, values on the host or None on meta, grad id) per parameter."""

    def host(t: torch.Tensor) -> torch.Tensor | None:
        return None if t.is_meta else t.detach().to("cpu")

    return [
        (
            id(p),
            p.device.type,
            None if p.grad is None else host(p.grad),
            None if p.grad is None else id(p.grad),
        )
        for p in model.parameters()
    ]


@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(1, 3),
    holder=st.sampled_from(["another grad", "a kept slice", "nothing", "a flat buffer"]),
    which=st.integers(0, 5),
    target=st.sampled_from(_TARGETS),
)
def test_a_held_grad_is_never_lost(layers: int, holder: str, which: int, target: str) -> None:
    from torchport.testing import simulate_accelerator

    device = simulate_accelerator() if target == "sim" else torch.device("meta")
    model = nn.Sequential(*[nn.Linear(3, 3) for _ in range(layers)])
    model(torch.ones(2, 3)).sum().backward()
    params = list(model.parameters())
    kept: Any = None
    if holder == "another grad":  # a bias's .grad set to a row of a weight's .grad
        weight = params[2 * (which % layers)]
        bias = params[2 * ((which + 1) % layers) + 1]
        bias.grad = weight.grad[which % 3]
    elif holder == "a kept slice":
        kept = params[which % len(params)].grad[1:]
    elif holder == "a flat buffer":  # grads as views of one buffer (DDP's bucket views)
        flat = torch.arange(float(sum(p.numel() for p in params)))
        start = 0
        for p in params:
            p.grad = flat[start : start + p.numel()].view_as(p)
            start += p.numel()
    before = _state(model)
    try:
        tp.to_device(model, device)
    except tp.UnsupportedBatchError as refused:
        assert holder in ("another grad", "a kept slice")
        assert ".grad" in str(refused) and "Nothing was moved" in str(refused)
        for now, then in zip(_state(model), before, strict=True):  # nothing moved
            assert now[0] == then[0] and now[1] == then[1] == "cpu" and now[3] == then[3]
            assert now[2] is not None and then[2] is not None and torch.equal(now[2], then[2])
        return
    assert [p is q for p, q in zip(model.parameters(), params, strict=True)] == [True] * len(params)
    for p, (_, _, grad, _) in zip(model.parameters(), before, strict=True):
        assert p.device.type == device.type
        assert p.grad is not None and p.grad.device.type == device.type
        if target == "sim":
            assert grad is not None and torch.equal(p.grad.to("cpu"), grad)
    del kept


@pytest.mark.parametrize("target", _TARGETS)
def test_the_refusal_names_the_parameter_whose_grad_is_viewed(target: str) -> None:
    from torchport.testing import simulate_accelerator

    device = simulate_accelerator() if target == "sim" else torch.device("meta")
    model = nn.Linear(2, 2)
    model(torch.ones(1, 2)).sum().backward()
    assert model.weight.grad is not None
    model.bias.grad = model.weight.grad[0]
    with pytest.raises(tp.UnsupportedBatchError, match=r"parameter 'weight'.*\.grad.*zero_grad"):
        tp.to_device(model, device)
    model.bias.grad = None  # what the advice says: let go of the view
    tp.to_device(model, device)
    assert model.weight.grad is not None and model.weight.grad.device.type == device.type


@pytest.mark.parametrize("target", _TARGETS)
def test_a_grad_that_requires_grad_and_is_not_viewed_still_moves(target: str) -> None:
    from torchport.testing import simulate_accelerator

    device = simulate_accelerator() if target == "sim" else torch.device("meta")
    model = nn.Linear(2, 2)
    params = list(model.parameters())
    model.weight.grad = torch.ones(2, 2, requires_grad=True)  # as meta-learning code sets one
    tp.to_device(model, device)
    assert all(p is q for p, q in zip(model.parameters(), params, strict=True))
    assert model.weight.grad is not None and model.weight.grad.device.type == device.type


@pytest.mark.needs_simulator
@pytest.mark.skipif(bool(os.environ.get(_ON_SIM)), reason="this is the child")
def test_every_case_holds_on_the_simulated_accelerator_in_a_child(
    child_pytest_env: dict[str, str],
) -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(__file__))],
        cwd=root,
        env={**child_pytest_env, _ON_SIM: "1"},
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "3 passed, 1 skipped" in done.stdout  # each case ran, on sim (this one skipped)
