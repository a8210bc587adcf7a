"""A numpy array meeting a device tensor in an operator: reported (TP522), never left silent.

``scale(np.ones(4))`` where ``scale`` does ``return model.weight[0] * x``: on the CPU torch
reads the array into a tensor and the program runs; once the model is on the device, the
operator stops ("can't convert sim:0 device type tensor to numpy"). The port left it with
"0 left" (a parameter given numpy values only is left alone, nothing to move). A numpy
scalar (``np.sqrt(2.0)``, ``a.sum()``, ``np.float32(0.5)``) meets a device tensor fine, and
must not be reported.

Programs are generated: a model, a value from a menu (arrays, numpy scalars, a number, a
tensor) reaching an operator with a device tensor (the model's weight or output) through a
parameter (one or several call sites), a module-level name, an attribute its class stores,
a function of the file that returns it, or written in place. The oracle is the ported
program run on the simulated accelerator in a child: it stops at the operator exactly when
the port leaves a finding there (for a parameter: in its function, where TP520 may name the
parameter instead).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import stops_exactly_where_reported

pytest.importorskip("torch")

_VALUES = (
    "np.ones(4)",  # arrays
    "np.random.rand(4)",
    "np.arange(4.0) * 2",
    "np.zeros((2, 4))[:, 1:].T.reshape(-1)[:4]",
    "torch.ones(4).numpy()",
    "np.sqrt(2.0)",  # numpy scalars: fine on the device
    "np.float32(0.5)",
    "np.ones(4).sum()",
    "2.0",  # a number
    "torch.ones(4)",  # a tensor: the port moves it
)
_WAYS = ("parameter", "name", "attribute", "returned", "in place")
_OPS = ("*", "+", "-", "/")


def _program(way: str, values: list[str], op: str, side: str) -> str:
    device = "model.weight[0]" if side == "weight" else "model(torch.ones(2, 4))[0]"
    lines = [
        "import numpy as np",
        "import torch",
        "import torch.nn as nn",
        "",
        "model = nn.Linear(4, 4)",
        "",
        "",
        "class Holder:",
        "    def __init__(self):",
        f"        self.v = {values[0]}",
        "",
        "",
        f"V = {values[0]}",
        "h = Holder()",
        "",
        "",
        "def make():",
        f"    return {values[0]}",
        "",
        "",
        "def scale(x):",
        f"    return {device} {op} x",
        "",
        "",
    ]
    if way == "parameter":
        lines += [f"print(scale({v}).sum().item())" for v in values]
    else:
        operand = {"name": "V", "attribute": "h.v", "returned": "make()"}.get(way, values[0])
        lines.append(f"print(({device} {op} {operand}).sum().item())")
    return "\n".join(lines) + "\n"


def _region(source: str, way: str) -> set[int]:
    """The lines of the ported ``source`` a finding may name for the operator: ``def scale``
    and its body for a parameter, else the ``print((...))`` line."""
    found, inside = set(), False
    for number, line in enumerate(source.splitlines(), 1):
        if way == "parameter":
            inside = line.startswith("def scale") or (inside and line.startswith(" "))
            if inside:
                found.add(number)
        elif line.startswith("print(("):
            found.add(number)
    return found


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@example(
    cases=[("parameter", ["np.ones(4)"], "*", "weight"), ("name", ["np.sqrt(2.0)"], "+", "output")]
)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(
        st.tuples(
            st.sampled_from(_WAYS),
            st.lists(st.sampled_from(_VALUES), min_size=1, max_size=3),
            st.sampled_from(_OPS),
            st.sampled_from(("weight", "output")),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_a_numpy_array_meeting_a_device_tensor_is_reported(
    cases: list[tuple[str, list[str], str, str]],
) -> None:
    stops_exactly_where_reported(
        cases,
        [_program(way, values, op, side) for way, values, op, side in cases],
        lambda source, case: _region(source, case[0]),
    )
