"""Nested tensors on the simulated device: jagged ones run as on the CPU, strided ones are
refused with a message that says what to do (a real accelerator holds both).

The oracle for jagged tensors is the CPU running the same program.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

# Each takes a jagged nested tensor ``nt`` of rows of width 3 and returns a list of tensors.
STEPS = [
    "[nt.sin()]",
    "[nt + nt]",
    "[nt * 2]",
    "list(nt.unbind())",
    "[lin(nt)]",
    "[nt.to(torch.float64)]",
    "[nt.cpu().to(dev)]",
    "[torch.nested.nested_tensor([p.cpu() for p in nt.unbind()], layout=torch.jagged, device=dev)]",
    "[nt.values()]",
    "[nt.offsets()]",
]

_CHILD = """
dev_sim = simulate_accelerator()
out = []
for lengths, step in CASES:
    got = []
    for dev in (torch.device("cpu"), dev_sim):
        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 2).to(dev)
        rows = [torch.arange(n * 3, dtype=torch.float32).view(n, 3) / 7 for n in lengths]
        nt = torch.nested.nested_tensor(rows, layout=torch.jagged).to(dev)
        results = eval(step, {"torch": torch, "nt": nt, "lin": lin, "dev": dev})
        host = [r.cpu() for r in results]
        values = [[p.tolist() for p in h.unbind()] if h.is_nested else h.tolist() for h in host]
        got.append([[r.device.type == dev.type, v] for r, v in zip(results, values)])
    out.append(got)
print(json.dumps(out))
"""


@settings(max_examples=2, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(1, 4), min_size=1, max_size=4),
        min_size=len(STEPS),
        max_size=len(STEPS),
    )
)
def test_a_jagged_nested_tensor_runs_as_on_the_cpu(row_lengths: list[list[int]]) -> None:
    # .cpu() of one failed ("values and offsets must be on the same device"): its offsets
    # were copied from inside the nested tensor's dispatch, as aten.to, and stayed on sim;
    # one made with device= failed on its shape-only metadata tensors.
    cases = list(zip(row_lengths, STEPS, strict=True))  # every step, rows drawn
    got = run_isolated(_CHILD.replace("CASES", repr(cases)))
    for case, (cpu, sim) in zip(cases, got, strict=True):
        assert sim == cpu, case


def test_a_strided_nested_tensor_is_refused_with_what_to_do() -> None:
    got = run_isolated(
        """
        import torchport as tp
        dev = simulate_accelerator()
        nt = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
        out = {}
        for name, move in [
            ("to", lambda: nt.to(dev)),
            # made there, it is refused by the first op that reads it
            ("made there", lambda: torch.nested.nested_tensor([torch.ones(2)], device=dev).sin()),
            ("to_device", lambda: tp.to_device({"x": [nt]}, dev)),
        ]:
            try:
                move()
                out[name] = "moved"
            except Exception as error:
                out[name] = [type(error).__name__, str(error)]
        print(json.dumps(out))
        """
    )
    for name in ("to", "made there"):
        kind, message = got[name]
        assert kind == "NotImplementedError", got[name]
        assert "layout=torch.jagged" in message, message
    kind, message = got["to_device"]
    assert kind == "UnsupportedBatchError", got["to_device"]
    assert "['x'][0]" in message and "layout=torch.jagged" in message, message
