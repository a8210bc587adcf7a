"""A copy onto the simulated device has the strides CUDA's copy has.

The oracle is torch's own ``_to_copy`` to another device: ``x.to("meta")`` takes the path
a copy to CUDA takes (TensorConversions.cpp: a non-overlapping and dense tensor keeps its
strides, any other gets dense strides in the same order), so its strides are CUDA's.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sim.isolated import run_isolated
from tests.sim.strided import views

pytestmark = pytest.mark.needs_simulator


@settings(max_examples=2, deadline=None)
@given(st.lists(views(), min_size=20, max_size=20))
def test_a_copy_to_the_device_has_cudas_strides(cases: list[dict[str, Any]]) -> None:
    got = run_isolated(
        """
        from tests.sim.strided import build
        device = simulate_accelerator()
        out = []
        for case in CASES:
            x = build(**case)
            moved = [x.to(device), x.to(device, copy=True)]
            out.append([[list(y.stride()), y.cpu().tolist() == x.tolist()] for y in moved]
                       + [list(x.to("meta").stride())])
        print(json.dumps(out))
        """.replace("CASES", repr(cases))
    )
    for case, (first, second, cuda) in zip(cases, got, strict=True):
        assert first == [cuda, True], case
        assert second == [cuda, True], case
