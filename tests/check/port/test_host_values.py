"""TP522 at a numpy call whose argument is host data by every binding reaching it.

Found on patrickloeber/pytorchTutorial's ``11_softmax_and_crossentropy.py``: ``Y_pred_good =
np.array(...)`` given to the file's numpy ``cross_entropy(actual, predicted)``, then ``Y_pred_good
= torch.tensor(...)`` given to the model. The flow-insensitive device flow made ``predicted`` a
device value, and the port advised ``.detach().cpu()`` on three numpy reads inside the numpy
function, where the ported program, run on the simulated accelerator, ran to its end.

Programs are generated: two names rebound in a random order to numpy arrays, to tensors a model
reads (the port moves those), to a model's output or to a copy of it back on the host, with a
numpy function of the file called at random points between. The oracle is the ported program
run on the simulated accelerator in a child: it stops with a device error in the numpy function
(or at its call) exactly when the port reports TP522 there; a report where every call ran on
host data is the false advice this test exists for, a stop without one a silent leftover.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import stops_on_sim
from torchport.check.port import port_text

pytest.importorskip("torch")

_BINDINGS = {
    "array": "np.array([0.2, 0.3, 0.5])",
    "array method": "np.array([0.2, 0.3, 0.5]).astype(np.float32)",  # sotte's mean shift
    "number": "0.5",
    "model input": "torch.rand(3)",  # read by the model below: the port moves it
    "output": "model(torch.rand(3)).detach()",
    "copied back": "model(torch.rand(3)).detach().cpu().numpy()",
}
_BODIES = {
    "nested": "    return float(np.sum(np.multiply(a, np.log(np.clip(b, 1e-6, 1.0)))))\n",
    "rebound": (
        "    b = np.clip(b, 1e-6, 1.0)\n    return float(np.sum(np.multiply(a, np.log(b))))\n"
    ),
    "product": "    return float(np.sum(np.asarray(a * np.log(b))))\n",
}

_step = st.one_of(
    st.tuples(st.sampled_from("AB"), st.sampled_from(sorted(_BINDINGS))),
    st.just(("call", "")),
)


def _program(body: str, steps: list[tuple[str, str]]) -> str:
    lines = [
        "import numpy as np",
        "import torch",
        "",
        "model = torch.nn.Linear(3, 3)",
        "",
        "",
        "def host_fn(a, b):",
        *body.rstrip("\n").split("\n"),
        "",
        "",
        f"A = {_BINDINGS['array']}",
        f"B = {_BINDINGS['array']}",
    ]
    for name, kind in steps:
        if name == "call":
            lines.append("print(host_fn(A, B))")
            continue
        lines.append(f"{name} = {_BINDINGS[kind]}")
        if kind == "model input":
            lines.append(f"print(model({name}).shape)")
    lines.append("print(host_fn(A, B))")
    return "\n".join(lines) + "\n"


def _numpy_lines(source: str) -> set[int]:
    """The lines of the numpy function's body and of its calls, in ``source``."""
    found, inside = set(), False
    for number, line in enumerate(source.splitlines(), 1):
        inside = line.startswith("def host_fn") or (inside and line.startswith(" "))
        if (inside and line.startswith(" ")) or line.startswith("print(host_fn("):
            found.add(number)
    return found


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(
        st.tuples(st.sampled_from(sorted(_BODIES)), st.lists(_step, max_size=6)),
        min_size=1,
        max_size=6,
    )
)
def test_numpy_function_reported_exactly_where_the_run_meets_a_device_value(
    cases: list[tuple[str, list[tuple[str, str]]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths, reported, watched = [], [], []
        for index, (body, steps) in enumerate(cases):
            path = Path(tmp) / f"p{index}.py"
            outcome = port_text(_program(_BODIES[body], steps), str(path))
            assert not outcome.failures, outcome.failures
            path.write_text(outcome.source)
            reported.append(any(f.code == "TP522" for f in outcome.remaining))
            watched.append(_numpy_lines(outcome.source))
            paths.append(str(path))
        stops = stops_on_sim(paths)
    for case, stop, found, lines in zip(cases, stops, reported, watched, strict=True):
        if stop is not None:  # only a device error stops a run, in the numpy function
            kind, message, line = stop
            assert "device" in message or "numpy" in message, (case, kind, message)
            assert line in lines, (case, stop, lines)
        assert found == (stop is not None), (case, stop, found)
