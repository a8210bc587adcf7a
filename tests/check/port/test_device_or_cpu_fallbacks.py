"""A class's device that falls back to the CPU only where none is given: the given one is kept.

``self.device = device if device is not None else "cpu"`` (``"cpu" if device is None else
device``, ``device if device else "cpu"``, inside ``torch.device(...)``) keeps what the
caller hands, as ``device or "cpu"`` does; the port read it as the CPU set by the class
(p31m's ``may_be_cpu``: a value naming the CPU alone). Where the program handed its
accelerator that was still placed; where it handed nothing, a class keeping a model
(``self.model = model.to(self.device)``) put the model back on the CPU and the port said
"0 left" (issue 31). A config's ``getattr(cfg, "device", "cpu")`` whose config the program
gives its device is the same question.

The invariant (``_kept_models.parameter_or_cpu``): such a value is the parameter, so the
class keeps the device handed to it; where the program hands its accelerator, nothing is
reported and everything runs there; where it hands nothing, the port hands the device (an
``nn.Module``) or reports the call; where it hands the CPU, that choice is reported, never
rewritten. Oracle (``no_cuda_sim``): the original on the CPU, the port on the simulated
accelerator: the same values on ``sim:0``, or a finding left; idempotent.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said, ports_on_sim_or_stops
from torchport.check.port import port_text

pytest.importorskip("torch")

FALLBACKS = {
    "is not None": 'device if device is not None else "cpu"',
    "is None": '"cpu" if device is None else device',
    "truthy": 'device if device else "cpu"',
    "not": '"cpu" if not device else device',
    "or": 'device or "cpu"',
    "torch.device of it": 'torch.device(device if device is not None else "cpu")',
}
KINDS = ("a module", "a class keeping the model")
HANDED = ("nothing", "the accelerator by keyword", "the accelerator by position", "the CPU")
_DEVICE = (
    "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
    'else torch.device("cpu")'
)


def _program(fallback: str, kind: str, handed: str) -> str:
    value = FALLBACKS[fallback]
    arg = {
        "nothing": "",
        "the accelerator by keyword": "device=device",
        "the accelerator by position": "device",
        "the CPU": 'device="cpu"',
    }[handed]
    head = ["import torch", "from torch import nn", ""]
    program_device = [_DEVICE] if "accelerator" in handed else []
    if kind == "a module":
        cls = [
            "class Net(nn.Module):",
            "    def __init__(self, device=None):",
            "        super().__init__()",
            f"        self.device = {value}",
            "        self.fc = nn.Linear(4, 3)",
            "",
            "    def forward(self, x):",
            "        return self.fc(x.to(self.device)) + torch.ones(3, device=self.device)",
        ]
        moved = ".to(device)" if program_device else ""
        use = [f"model = Net({arg}){moved}", "OUT.append(model(torch.ones(2, 4)).detach())"]
    else:
        cls = [
            "class Trainer:",
            "    def __init__(self, model, device=None):",
            f"        self.device = {value}",
            "        self.model = model.to(self.device)",
            "",
            "    def step(self, x):",
            "        return self.model(x.to(self.device))",
        ]
        given = f", {arg}" if arg else ""
        use = [f"t = Trainer(nn.Linear(4, 3){given})"]
        use.append("OUT.append(t.step(torch.ones(2, 4)).detach())")
    lines = [*head, *cls, "", "torch.manual_seed(0)", *program_device, *use]
    return "\n".join(lines) + "\n"


_CASE = st.tuples(
    st.sampled_from(sorted(FALLBACKS)), st.sampled_from(KINDS), st.sampled_from(HANDED)
)


# (each example is one simulated-accelerator child: a few, in the default run's budget)
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_CASE, min_size=6, max_size=6))
@example(cases=[(f, k, "nothing") for f in ("is not None", "is None", "truthy") for k in KINDS])
@example(cases=[(f, k, "the CPU") for f in ("is not None", "torch.device of it") for k in KINDS])
def test_a_device_that_falls_back_to_the_cpu_keeps_what_it_is_given(
    cases: list[tuple[str, str, str]],
) -> None:
    sources = [_program(*case) for case in cases]
    placed_or_said(sources)
    for (_, _, handed), source in zip(cases, sources, strict=True):
        port = port_text(source, "p.py")
        if handed == "the CPU":  # the program's own choice: said, never rewritten
            assert 'device="cpu"' in port.source, port.source
            assert port.remaining, source


@pytest.mark.parametrize(
    "kind",
    # a child on `sim` each: the module in the default run, the class in the slow run
    [KINDS[0], *(pytest.param(k, marks=pytest.mark.slow) for k in KINDS[1:])],
)
@pytest.mark.parametrize("fallback", sorted(FALLBACKS))
def test_the_accelerator_handed_is_no_cpu_choice(fallback: str, kind: str) -> None:
    """Where the program hands its accelerator, the class's fallback is no deliberate CPU:
    nothing reported, nothing rewritten there, every output on the device."""
    sources = [_program(fallback, kind, handed) for handed in HANDED if "accelerator" in handed]
    for source in sources:
        port = port_text(source, "p.py")
        assert not port.remaining, port.remaining
        assert FALLBACKS[fallback] in port.source
    results = ports_on_sim_or_stops([(s, port_text(s, "p.py").source) for s in sources])
    assert all(r.get("same") and set(r["devices"]) == {"sim:0"} for r in results), results
