"""The other shapes of a class that keeps a model and moves its inputs to its own device.

``class Predictor: def __init__(self, model, device="cpu"): self.model = model;
self.device = device`` with ``def run(self, x): return self.model(x.to(self.device))``
was read (``test_project_placement_noise``); the same class written as a ``@dataclass``,
with the device stored by a base class (``super().__init__(device)``), or set by a method
(``def to(self, d): self.device = d``, ``set_device``) was not: TP501 moved the model,
said "0 left", and the program stopped on any accelerator (its inputs went to the CPU).

The invariant: where the class's inputs stay on the CPU (its device left to its default,
given the CPU, set to the CPU, or never set from the CPU of its ``__init__``) TP501 is
reported with no fix, and the port runs on the CPU as the original did; where the program
hands it its device (in the call, or by the setter before any use), the model is moved and
the port runs on the accelerator with the CPU's values. The oracle (``no_cuda_sim``) runs
each original on the CPU and each port on the simulated accelerator; the expectation is
computed from the case's parameters alone. The port is idempotent.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import ports_on_sim_or_stops
from torchport.check.port import port_text

pytest.importorskip("torch")

_HEAD = (
    "import torch\nimport torch.nn as nn\nfrom dataclasses import dataclass\n\n"
    "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
    'else torch.device("cpu")\n\n\n'
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.fc = nn.Linear(3, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n"
)
_RUNS = {  # how the class brings its input to `self.device`
    "moved": "return self.model(x.to(self.device))",
    "made there": "return self.model(torch.as_tensor(x.tolist(), device=self.device))",
}
# shape -> the class (`{run}`: the method's body); True: the device is handed in the call
_SHAPES = {
    "dataclass": (
        "@dataclass\nclass Clf:\n    model: nn.Module\n    tag: str\n    device: str = 'cpu'\n\n"
        "    def run(self, x):\n        {run}\n",
        True,
    ),
    "super": (
        "class Base:\n    def __init__(self, device='cpu'):\n        self.device = device\n\n\n"
        "class Clf(Base):\n    def __init__(self, model, tag, device='cpu'):\n"
        "        super().__init__(device)\n        self.model = model\n\n"
        "    def run(self, x):\n        {run}\n",
        True,
    ),
    "super keyword": (
        "class Base:\n    def __init__(self, device='cpu'):\n        self.device = device\n\n"
        "    def run(self, x):\n        {run}\n\n\n"
        "class Clf(Base):\n    def __init__(self, model, tag, device='cpu'):\n"
        "        self.model = model\n        super().__init__(device=device)\n",
        True,
    ),
    "base named": (
        "class Base:\n    def __init__(self, device='cpu'):\n        self.device = device\n\n\n"
        "class Clf(Base):\n    def __init__(self, model, tag, device='cpu'):\n"
        "        Base.__init__(self, device)\n        self.model = model\n\n"
        "    def run(self, x):\n        {run}\n",
        True,
    ),
    "to": (
        "class Clf:\n    def __init__(self, model, tag):\n        self.model = model\n"
        "        self.device = 'cpu'\n\n    def to(self, device):\n        self.device = device\n"
        "        return self\n\n    def run(self, x):\n        {run}\n",
        False,
    ),
    "set_device": (
        "class Clf:\n    def __init__(self, model, tag, device='cpu'):\n"
        "        self.model = model\n        self.device = device\n\n"
        "    def set_device(self, device):\n"
        "        self.device = device\n\n    def run(self, x):\n        {run}\n",
        True,
    ),
}
_HANDED = {  # how the call hands the device; True: the program's device
    "keyword": ("device=device", True),
    "position": ("device", True),
    "default": ("", False),
    "cpu": ('device="cpu"', False),
}
_SET = {  # a setter call after the object is made; None: none, True: the program's device
    "none": (None, None),
    "device": ("device", True),
    "cpu": ('"cpu"', False),
}


def _program(shape: str, handed: str, later: str, runs: str, named: bool) -> tuple[str, bool]:
    """A program (appending to ``OUT``) and whether the class's inputs go to the device."""
    cls, takes_device = _SHAPES[shape]
    given, on_device = _HANDED[handed] if takes_device else ("", False)
    setter = {"to": "to", "set_device": "set_device"}.get(shape)
    value, set_there = _SET[later] if setter else (None, None)
    extra = f", {given}" if given else ""
    made = "model" if named else "Net()"
    make = ("model = Net()\n" if named else "") + f"clf = Clf({made}, 'tag'{extra})\n"
    if value is not None:
        make += f"clf.{setter}({value})\n"
        on_device = bool(set_there)
    use = "OUT.append(clf.run(torch.ones(2, 3)))\n"
    return _HEAD + "\n\n" + cls.format(run=_RUNS[runs]) + "\n\n" + make + use, on_device


def _check(cases: list[tuple[str, str, str, str, bool]]) -> None:
    programs = [_program(*case) for case in cases]
    ports = [port_text(source) for source, _ in programs]
    for port in ports:
        assert port_text(port.source).source == port.source, f"not idempotent:\n{port.source}"
    runs = ports_on_sim_or_stops([(s, p.source) for (s, _), p in zip(programs, ports, strict=True)])
    for case, (_, on_device), port, run in zip(cases, programs, ports, runs, strict=True):
        left = [f for f in port.remaining if f.code == "TP501"]
        said: Any = [(f.code, f.message) for f in port.remaining]
        if on_device:  # the model moved by TP501's fix, the port on the accelerator
            assert not left, (case, said)
            assert "Net().to(device)" in port.source or "model = Net().to(device)" in port.source
            assert run.get("same") and set(run["devices"]) == {"sim:0"}, (case, run)
        else:  # reported, not moved: the port stays on the CPU, as the finding says
            assert left and all("inputs" in f.message for f in left), (case, said)
            assert ".to(device)" not in port.source.split("class Net")[0], case
            assert run.get("same") and set(run["devices"]) == {"cpu"}, (case, run)


# (each example is one simulated-accelerator child: a few, in the default run's budget)
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(_SHAPES)),
            st.sampled_from(sorted(_HANDED)),
            st.sampled_from(sorted(_SET)),
            st.sampled_from(sorted(_RUNS)),
            st.booleans(),
        ),
        min_size=6,
        max_size=6,
    )
)
@example([(shape, "default", "none", "moved", False) for shape in sorted(_SHAPES)])
@example([(shape, "keyword", "device", "moved", True) for shape in sorted(_SHAPES)])
def test_a_kept_model_of_each_shape_is_moved_or_said(
    cases: list[tuple[str, str, str, str, bool]],
) -> None:
    _check(cases)


def test_a_setter_called_after_a_use_or_in_a_branch_is_said() -> None:
    """Not followed: the device set after the object is used, or under an ``if``: reported."""
    cls = _SHAPES["to"][0].format(run=_RUNS["moved"])
    tails = (
        "clf = Clf(Net(), 'tag')\nOUT.append(clf.run(torch.ones(2, 3)))\nclf.to(device)\n",
        "clf = Clf(Net(), 'tag')\nif len(OUT) > 5:\n    clf.to(device)\n"
        "OUT.append(clf.run(torch.ones(2, 3)))\n",
    )
    for tail in tails:
        port = port_text(_HEAD + "\n\n" + cls + "\n\n" + tail)
        assert [f.code for f in port.remaining] == ["TP501"], port.remaining
