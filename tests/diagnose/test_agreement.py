"""The CPU prediction against the simulated device's own count, on generated programs.

Oracle: the simulated accelerator (``sim:0``) runs each program with real device rules and
publishes every copy and host wait it makes (``torchport._crossings``); ``tp.audit()`` on
the CPU predicts the same run from the CPU run. The two are written apart (the simulator
asks ``diagnose._on_device`` with the real devices of real arguments; the prediction
follows :mod:`torchport.diagnose._host_held` and the op table from a run where every
tensor is on the CPU), and per source line they must count the same copies and the same
waits.

The programs index and assign: masks, index tensors, lists, ints and slices, on a tensor
of the device and on tensors the program made on the host (``torch.zeros(n)``,
``torch.tensor(0.5)``, what is computed from them alone), with Python numbers, host
one-element tensors and device values, and they read values back. Copies to the host and
their later reads are generated in test_agreement_host_copies.py.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sim.isolated import audit_counts
from torchport import hardware

pytestmark = pytest.mark.needs_simulator

SETUP = [
    "x = torch.randn(16, device=dev)",
    "hv = torch.zeros(16)",
    "mask = x > 0",
    "hmask = hv >= 0",
    "idx = torch.tensor([1, 2], device=dev)",
    "h = torch.tensor(0.5)",
    "d0 = x.sum()",
]

_HOST_VALUES = ["0.5", "torch.tensor(0.5)", "h", "h * 2", "torch.full((), 2.0)"]
_DEVICE_VALUES = ["torch.tensor(0.5, device=dev)", "d0", "x.mean()"]


@st.composite
def statements(draw: st.DrawFn) -> str:
    target = draw(st.sampled_from(["x", "hv"]))
    on_device = target == "x"
    values = _HOST_VALUES + (_DEVICE_VALUES if on_device else [])
    index = draw(
        st.sampled_from(
            ["mask" if on_device else "hmask", "[1, 2]", "0", "slice(0, 2)"]
            + (["idx"] if on_device else ["torch.tensor([1, 2])"])
        )
    )
    form = draw(st.sampled_from(["assign", "read_index", "read_value"]))
    if form == "assign":
        return f"{target}[{index}] = {draw(st.sampled_from(values))}"
    if form == "read_index":
        return f"_ = {target}[{index}]"
    read = draw(st.sampled_from(["float({t}.sum())", "{t}.max().item()", "{t}.tolist()"]))
    return "_ = " + read.format(t=target)


programs = st.lists(statements(), min_size=1, max_size=6)


def _program(body: list[str]) -> str:
    lines = ["import torch", "def prog(dev):"] + [f"    {line}" for line in SETUP + body]
    return "\n".join(lines) + "\n"


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(programs, min_size=8, max_size=8))
def test_the_prediction_counts_what_the_simulated_device_counts(
    batch: list[list[str]],
) -> None:
    sources = [_program(body) for body in batch]
    results = audit_counts(sources)
    for source, counted in zip(sources, results, strict=True):
        assert counted["predicted"] == counted["measured"], source


def test_a_mask_assignment_of_a_host_scalar_tensor_is_masked_fill_on_the_device() -> None:
    # The case of issue 32: `x[mask] = torch.tensor(0.5)` is index_put_ with a 0-dim host
    # value, which CUDA runs as masked_fill_ (no wait); a device value waits.
    body = [
        "x[mask] = torch.tensor(0.5)",
        "x[mask] = torch.tensor(0.5, device=dev)",
        "x[[1, 2]] = 1.0",
        "_ = float(hv.sum())",
    ]
    (counted,) = audit_counts([_program(body)])
    first = len(SETUP) + 3  # the body's first line: after the import, def and setup lines
    assert counted["measured"] == {
        "7 copy": 1,  # idx = torch.tensor([1, 2], device=dev)
        f"{first + 1} sync": 1,
        f"{first + 1} copy": 1,  # torch.tensor(0.5, device=dev)
        # the list index, and the number where torch wraps it for index_put_ (newer torch
        # runs a lone advanced index as index_fill_, the number a kernel argument)
        f"{first + 2} copy": 1 if hardware.setitem_number_fills_by_index() else 2,
    }
    assert counted["predicted"] == counted["measured"]
