"""``to_device`` and ``DeviceLoader`` on the simulated accelerator: the invariant, values compared.

``meta`` holds no values, so a move to it cannot show a wrong value or a wrong
cast. The simulated accelerator (``torchport.testing.simulate_accelerator``) holds
real values and enforces CUDA's device rules; installing it changes the process
for good, so these checks run in a child interpreter (``tests/sim/isolated.py``).
There the generated graphs of ``graphs.py`` are moved to ``sim:0`` and checked by
the reachability oracle (``reachability.py``: devices, input unchanged, sharing,
and each tensor's values against its input), and a ``DeviceLoader`` over such
batches hands over batches whose tensors hold the input's values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

HERE = str(Path(__file__).parent)

_CHILD = f"""
import sys
sys.path.insert(0, {HERE!r})
import graphs, reachability as reach
import torchport as tp
from hypothesis import HealthCheck, assume, given, settings, strategies as st

SIM = simulate_accelerator()
POOL = [
    torch.ones(2),
    torch.arange(6).reshape(2, 3).t(),
    torch.zeros(1, 2, 2, 2).contiguous(memory_format=torch.channels_last),
    torch.tensor(3),
    torch.linspace(0, 1, 5, dtype=torch.float64),
]
OPTIONS = st.sampled_from(
    [{{}}, {{"pack": True}}, {{"pack": False}}, {{"skip_keys": ("ids",)}},
     {{"dtype": torch.float64}}]
)
count = {{"moved": 0, "loaded": 0}}


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(graphs.graphs(POOL), OPTIONS)
def moves(graph, options):
    assume(not any(t.is_meta for _, t in reach.tensors(graph)))  # no values to move
    taken = reach.snapshot(graph)
    out = tp.to_device(graph, SIM, **options)
    dtype = options.get("dtype")

    def cast(t):
        return dtype if dtype is not None and t.is_floating_point() else t.dtype

    skip = frozenset(options.get("skip_keys", ()))
    reach.check_move(graph, taken, out, SIM, skip=skip, cast=cast)
    count["moved"] += 1


@settings(max_examples=15, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.lists(graphs.graphs(POOL, max_leaves=6), min_size=1, max_size=3))
def loads(batches):
    assume(not any(t.is_meta for batch in batches for _, t in reach.tensors(batch)))
    taken = [reach.snapshot(batch) for batch in batches]
    handed = list(tp.DeviceLoader(batches, device=SIM))
    assert len(handed) == len(batches)
    for batch, before, out in zip(batches, taken, handed, strict=True):
        reach.check_move(batch, before, out, SIM)
        count["loaded"] += 1


moves()
loads()
print(json.dumps(count))
"""


def test_moves_and_loads_to_the_simulated_accelerator_keep_values_and_the_invariant() -> None:
    count = run_isolated(_CHILD, timeout=600)
    assert count["moved"] >= 40 and count["loaded"] >= 15
