"""A tensor made from a device tensor's sizes for another device lands on that device.

``torch.zeros_like(x, device="cpu")`` and ``x.new_zeros(n, device="cpu")`` of a device
tensor ``x`` read only its sizes and dtype: CUDA makes the result on the device named.
The simulator ran them on the values inside and wrapped the result, so it came back on
``sim`` (a later host op then raised a mixed-device error CUDA does not raise). The
oracle: the named device, and the same op on a CPU tensor for the sizes, dtype and values.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

FORMS = [
    "x.new_zeros(3, device=to)",
    "x.new_ones((2, 2), device=to)",
    "x.new_full((3,), 2.5, device=to)",
    "x.new_empty(4, device=to).fill_(1)",
    "x.new_tensor([1.0, 2.0], device=to)",
    "torch.zeros_like(x, device=to)",
    "torch.ones_like(x, device=to, dtype=torch.float64)",
    "torch.full_like(x, 3.0, device=to)",
    "torch.empty_like(x, device=to).zero_()",
    "torch.rand_like(x, device=to).mul(0)",
    "torch.randint_like(x, 1, device=to)",
]

_CHILD = """
sim = simulate_accelerator()
out = []
for form, target, inference in CASES:
    to = {"cpu": torch.device("cpu"), "sim": sim, "meta": torch.device("meta")}[target]
    got = []
    for held in (torch.device("cpu"), sim):
        with torch.inference_mode(inference):
            x = torch.arange(6, dtype=torch.float32).view(2, 3).to(held)
            r = eval(form, {"torch": torch, "x": x, "to": to})
        values = None if r.device.type == "meta" else r.cpu().tolist()
        got.append([str(r.device), type(r).__name__, str(r.dtype), list(r.shape), values])
    out.append(got)
print(json.dumps(out))
"""


@settings(max_examples=2, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(FORMS),
            st.sampled_from(["cpu", "sim", "meta"]),
            st.booleans(),
        ),
        min_size=30,
        max_size=30,
    )
)
def test_made_from_a_device_tensor_for_another_device(
    cases: list[tuple[str, str, bool]],
) -> None:
    got = run_isolated(_CHILD.replace("CASES", repr(cases)))
    for case, (from_cpu, from_sim) in zip(cases, got, strict=True):
        named = {"cpu": "cpu", "sim": "sim:0", "meta": "meta"}[case[1]]
        assert from_sim[0] == named, case  # the oracle: the device the call names
        assert from_sim[1] == ("SimTensor" if named == "sim:0" else "Tensor"), case
        assert from_sim[2:] == from_cpu[2:], case  # dtype, shape, values as from a CPU tensor
