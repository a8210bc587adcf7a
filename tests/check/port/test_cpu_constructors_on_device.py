"""TP522 where a legacy CPU constructor (``torch.FloatTensor(x)``) is given a device value.

Such a constructor builds a CPU tensor and raises on a device tensor ("expected
TensorOptions(... device=cpu ...)"), on CUDA as on the simulated accelerator: a port that
moved ``x`` must say so. Found on sh-am-si/PyTorchUltimateMaterial's
``MultilabelClassification_end.py``: ``torch.FloatTensor(X_test)`` of a ``train_test_split`` of
moved data (the port said nothing, the run stopped there).

Programs are generated: a constructor, and a value made in one of several ways (a model's
output, a slice or an item of a moved tensor, a value copied back with ``.cpu()``, a plain
list). The oracle is the ported program run on the simulated accelerator in a child: the
line it stops at with that ``TypeError`` given a tensor on the device, or none (a CPU
tensor of another dtype raises there too, on the CPU as well: no device stop). The port's
findings left must name exactly that line (and no other constructor line).
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

_CONSTRUCTORS = ("FloatTensor", "LongTensor", "DoubleTensor", "ByteTensor", "BoolTensor")
_VALUES = {
    "output": "model(x)",
    "argmax": "model(x).argmax(1)",
    "slice": "x[:2]",
    "item of a pair": "(x, x)[0]",
    "copied back": "model(x).detach().cpu()",
    "list": "[1.0, 2.0]",
}


def _program(made: str, constructor: str) -> str:
    return (
        "import torch\n\nmodel = torch.nn.Linear(2, 2)\nx = torch.ones(3, 2)\n"
        f"v = {made}\ny = torch.{constructor}(v)\nprint(y.shape)\n"
    )


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(
        st.tuples(st.sampled_from(sorted(_VALUES)), st.sampled_from(_CONSTRUCTORS)),
        min_size=1,
        max_size=6,
    )
)
def test_a_cpu_constructor_of_a_device_value_is_reported_where_the_run_stops(
    cases: list[tuple[str, str]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths, reported = [], []
        for index, (made, constructor) in enumerate(cases):
            path = Path(tmp) / f"p{index}.py"
            outcome = port_text(_program(_VALUES[made], constructor), str(path))
            assert not outcome.failures, outcome.failures
            path.write_text(outcome.source)
            lines = outcome.source.splitlines()
            reported.append(
                sorted(
                    f.line
                    for f in outcome.remaining
                    if f.code == "TP522" and f"torch.{constructor}(" in lines[f.line - 1]
                )
            )
            paths.append(str(path))
        stops = [_device_stop(stop) for stop in stops_on_sim(paths)]
    for case, stop, found in zip(cases, stops, reported, strict=True):
        assert found == ([] if stop is None else [stop]), (case, stop, found)


def _device_stop(stop: tuple[str, str, int | None] | None) -> int | None:
    """The line where the constructor refused a tensor on the device; None where the program
    ran to its end, or the constructor refused a CPU tensor of another dtype (it raises on the
    CPU as well). Anything else stopping the run fails the test."""
    if stop is None:
        return None
    kind, message, line = stop
    got = message.partition("(got ")[2]  # what the constructor was given
    assert kind == "TypeError" and "device=" in got, stop  # only the constructor's TypeError
    return None if "device=cpu" in got else line
