"""A tensor a lambda makes and combines with what it is given (``lambda t: t * torch.ones(3)``).

``_captures`` moved the tensors a lambda *captures* where it is handed the model's output;
one it *makes* in its body was left on the CPU, and the port said "0 left" of a program
that stopped at the lambda on any accelerator (8e497a0b). Now: where every call hands the
lambda device values, the tensor is made on the device (TP503); where one call hands it a
host copy too (`.cpu()`), the port moves nothing there and reports it (a device tensor
would meet the host copy). A ``def`` of the same shape (already handled) is drawn beside.

The oracle: each original on the CPU, then its port on the simulated accelerator (no CUDA
redirect) in one child; a port with nothing left must run to its end with the original's
values, every output on the accelerator; one with a finding left must stop, as it says.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import ports_on_sim_or_stops
from torchport.check.port import port_text

pytest.importorskip("torch")

MADE = {  # the tensor the body makes, combined with the lambda's parameter
    "ones": "t * torch.ones(2)",
    "full": "t + torch.full((2,), 0.5)",
    "arange, right": "torch.arange(2.0) - t",
    "compared": "(t > torch.zeros(2)).float()",
}
CALLED = {  # how the program calls it: (the calls, whether one hands it a host copy)
    "the model's output": (("f(model(x))",), False),
    "twice on the device": (("f(model(x))", "f(model(x) * 2)"), False),
    "and a host copy": (("f(model(x))", "f(model(x).detach().cpu())"), True),
}


def _program(made: str, called: str, as_def: bool, in_main: bool) -> str:
    define = f"def f(t):\n    return {MADE[made]}\n" if as_def else f"f = lambda t: {MADE[made]}\n"
    body = ["x = torch.ones(3, 4)", *(f"OUT.append({c}.detach())" for c in CALLED[called][0])]
    head = "import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2)\n" + define
    if in_main:
        return head + "def main():\n" + "".join(f"    {b}\n" for b in body) + "main()\n"
    return head + "".join(f"{b}\n" for b in body)


# (no shrinking: each example is a child's run; a failure prints its whole table)
@settings(max_examples=2, deadline=None, phases=(Phase.explicit, Phase.generate))
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(MADE)),
            st.sampled_from(sorted(CALLED)),
            st.booleans(),
            st.booleans(),
        ),
        min_size=4,
        max_size=8,
    )
)
def test_a_tensor_a_lambda_makes_meets_what_it_is_given(
    cases: list[tuple[str, str, bool, bool]],
) -> None:
    sources = [_program(*case) for case in cases]
    ports = [port_text(source) for source in sources]
    runs = ports_on_sim_or_stops([(s, p.source) for s, p in zip(sources, ports, strict=True)])
    for case, ported, run in zip(cases, ports, runs, strict=True):
        _, called, as_def, _ = case
        assert port_text(ported.source).source == ported.source, case  # idempotent
        left = [(f.code, f.line) for f in ported.remaining]
        if CALLED[called][1] and not as_def:  # a lambda handed a host copy too: reported
            assert [code for code, _ in left] == ["TP503"], (case, ported.remaining)
            assert "error" in run, (case, run, ported.source)  # the leftover is real
            continue
        # moved (a lambda handed device values only), or moved where it meets (a def)
        assert left == [], (case, ported.remaining, ported.source)
        on = ["cpu" if ".cpu()" in c else "sim:0" for c in CALLED[called][0]]  # (a host copy's)
        assert run.get("same") and run["devices"] == on, (case, run, ported.source)
