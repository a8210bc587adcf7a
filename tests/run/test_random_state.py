"""torch.cuda's random state under the redirect replays as CUDA's does.

On CUDA, restoring a saved ``torch.cuda`` RNG state makes the next draws repeat
(dropout replayed for a recomputed activation, an RNG tracker's fork and restore).
Where the target draws from the CPU's one generator (the CPU, the simulated
accelerator), a restore that did nothing would give other numbers silently.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp
from tests.sim.isolated import run_isolated


@given(
    seed=st.integers(0, 2**31),
    before=st.integers(0, 3),
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
)
def test_a_restored_cuda_state_repeats_the_draws_on_the_cpu(
    seed: int, before: int, shape: list[int]
) -> None:
    torch.manual_seed(seed)
    with tp.redirect("cpu"):
        for _ in range(before):
            torch.rand(2, device="cuda")
        saved = torch.cuda.get_rng_state()
        first = (
            torch.randn(shape, device="cuda"),
            torch.nn.functional.dropout(torch.ones(shape, device="cuda"), 0.5),
        )
        torch.cuda.set_rng_state(saved)
        again = (
            torch.randn(shape, device="cuda"),
            torch.nn.functional.dropout(torch.ones(shape, device="cuda"), 0.5),
        )
        torch.cuda.set_rng_state_all([saved])
        third = torch.randn(shape, device="cuda")
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert torch.equal(third, first[0])


@pytest.mark.needs_simulator
def test_a_restored_cuda_state_repeats_the_draws_on_the_simulator() -> None:
    out = run_isolated(
        """
        import torchport as tp
        sim = simulate_accelerator()
        torch.manual_seed(5)
        with tp.redirect(sim):
            saved = torch.cuda.get_rng_state()
            first = torch.randn(6, device="cuda").tolist()
            torch.cuda.set_rng_state(saved)
            again = torch.randn(6, device="cuda").tolist()
            # what Lightning's and transformers' checkpoints save and restore
            states = torch.cuda.get_rng_state_all()
            third = torch.randn(6, device="cuda").tolist()
            torch.cuda.set_rng_state_all(states)
            fourth = torch.randn(6, device="cuda").tolist()
        print(json.dumps({"first": first, "again": again, "states": len(states),
                          "third": third, "fourth": fourth}))
        """
    )
    assert out["first"] == out["again"] and out["states"] == 1
    assert out["third"] == out["fourth"]
