"""torch.cuda's allocator questions under the redirect answer from the target, never crash.

A CUDA-only script reads ``torch.cuda.memory_stats()["allocated_bytes.all.peak"]`` behind
``is_available()``; under ``run --device cpu`` or ``--device sim`` it must get CUDA's keys
with the counters the target keeps (the oracle: the same run's ``memory_allocated()``),
not a torch-internal assert or a KeyError.
"""

from __future__ import annotations

import pytest
import torch

import torchport as tp
from tests.sim.isolated import run_isolated

_KEYS = {
    "allocated_bytes.all.current": "memory_allocated",
    "allocated_bytes.all.peak": "max_memory_allocated",
    "reserved_bytes.all.current": "memory_reserved",
    "reserved_bytes.all.peak": "max_memory_reserved",
}


def test_memory_stats_on_the_cpu_has_cudas_keys_at_the_counters_values() -> None:
    with tp.redirect("cpu"):
        x = torch.zeros(256, device="cuda")
        stats = torch.cuda.memory_stats()
        for key, counter in _KEYS.items():
            assert stats[key] == getattr(torch.cuda, counter)() == 0
        assert x.device.type == "cpu"


@pytest.mark.slow  # a child process per size
@pytest.mark.needs_simulator
@pytest.mark.parametrize("elements", [1024, 300_000])
def test_memory_stats_on_the_simulator_agree_with_its_counters(elements: int) -> None:
    out = run_isolated(
        f"""
        import torchport as tp
        sim = simulate_accelerator()
        with tp.redirect(sim):
            x = torch.zeros({elements}, device="cuda")
            stats = torch.cuda.memory_stats()
            counters = {{k: getattr(torch.cuda, v)() for k, v in {_KEYS!r}.items()}}
            torch.cuda.reset_peak_memory_stats()
            torch.cuda.empty_cache()
        print(json.dumps({{"stats": {{k: stats[k] for k in counters}}, "counters": counters,
                          "x": x.numel() * x.element_size()}}))
        """
    )
    assert out["stats"] == out["counters"]
    assert out["stats"]["allocated_bytes.all.current"] >= out["x"]
