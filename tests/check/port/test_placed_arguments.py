"""A function's parameter given tensors the port itself places (TP503's ``device=``), and numbers.

Found on patrickloeber/pytorchTutorial's ``05_2_gradientdescent_auto.py`` and
``06_1_loss_and_optimizer.py``: ``X = torch.tensor([1, 2, 3, 4], dtype=torch.float32)`` is
made on the device by TP503's fix, and ``forward(x)`` is called with ``5`` and with ``X``. The
value kinds read the original code, took ``X`` for a CPU tensor, and the port said it "cannot
tell" whether ``x`` is a tensor (TP520), where the ported program runs to its end; a
parameter given ``Y`` alone was moved again at the top of its function (a TP502 move of a
tensor already on the device).

Programs are generated in ``05_2``'s shape: module-level tensors made by creators (placed by
the port: they meet the raw weight ``w``), ``forward(x)`` and ``loss(y, y_pred)`` called with
a random mix of numbers, those tensors, and creators written in the call.
The oracle is the ported program run on the simulated accelerator in a child: it stops in
a function exactly when the port leaves a finding there; and where ``loss``'s ``y`` is given
``Y`` (made on the device by the port) and numbers only, the port does not move ``y`` (a
move at the top of ``loss`` is redundant). Left: ``X`` handed to ``forward`` is moved there
(TP502, in the port's first round), then made on the device too (TP503, in a later one).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import stops_on_sim
from torchport.check.port import port_text

pytest.importorskip("torch")

# What a call site passes; True: a number (beside `Y`, which the port makes on the device).
_GIVEN = {
    "number": ("5.0", True),
    "int": ("2", True),
    "placed": ("X", False),
    "placed cast": ("Z", False),
    "creator": ("torch.ones(4)", False),  # made in the call: moved in the function (TP502)
    # `forward`'s own output: on the device where `x` is given `X` and numbers (it was taken
    # for a CPU tensor where `x` is of no one kind, and `x` reported)
    "own output": ("forward(X).detach()", False),
}
# (a parameter given numpy arrays, `forward(np.ones(4))`: test_numpy_operands.py)
_FUNCTIONS = ("forward", "loss")


def _program(calls: list[tuple[str, str]]) -> str:
    lines = [
        "import numpy as np",
        "import torch",
        "",
        "X = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float32)",
        "Y = torch.tensor([2.0, 4.0, 6.0, 8.0], dtype=torch.float32)",
        "Z = torch.from_numpy(np.arange(4)).float()",
        "w = torch.tensor(0.5, dtype=torch.float32, requires_grad=True)",
        "",
        "",
        "def forward(x):",
        "    return w * x",
        "",
        "",
        "def loss(y, y_pred):",
        "    return ((y_pred - y) ** 2).mean()",
        "",
        "",
        "l = loss(Y, forward(X))",
        "l.backward()",
        "print(l.item(), forward(Z).sum().item())",
    ]
    for function, site in calls:
        value = _GIVEN[site][0]
        if function == "forward":
            lines.append(f"print(forward({value}).sum().item())")
        else:
            lines.append(f"print(loss({value}, forward(X)).item())")
    return "\n".join(lines) + "\n"


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@example(cases=[[("forward", "own output"), ("forward", "int")]])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(
        st.lists(
            st.tuples(st.sampled_from(_FUNCTIONS), st.sampled_from(sorted(_GIVEN))),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_parameter_given_placed_tensors_and_numbers(cases: list[list[tuple[str, str]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths, reported, bodies, moved = [], [], [], []
        for index, calls in enumerate(cases):
            path = Path(tmp) / f"p{index}.py"
            outcome = port_text(_program(calls), str(path))
            assert not outcome.failures, outcome.failures
            path.write_text(outcome.source)
            body = _function_lines(outcome.source)
            bodies.append(body)
            reported.append(any(f.line in body for f in outcome.remaining))
            moved.append({p for p in ("x", "y") if f"    {p} = {p}.to(device)" in outcome.source})
            paths.append(str(path))
        stops = stops_on_sim(paths)
    for calls, stop, found, body, moves in zip(cases, stops, reported, bodies, moved, strict=True):
        stopped_inside = stop is not None and stop[2] in body
        assert found == stopped_inside, (calls, stop, found)
        if all(_GIVEN[site][1] for f, site in calls if f == "loss"):
            # `y` is given `Y`, made on the device by the port, and numbers: nothing to move
            assert "y" not in moves, (calls, "a move of `y` in `loss`")


def _function_lines(source: str) -> set[int]:
    """The lines of ``def forward``, ``def loss`` and their bodies, in ``source``."""
    found, inside = set(), False
    for number, line in enumerate(source.splitlines(), 1):
        inside = line.startswith("def ") or (inside and line.startswith(" "))
        if inside:
            found.add(number)
    return found
