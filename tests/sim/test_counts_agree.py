"""The audit's hand counts, counted again by the simulated device that makes the crossings.

``tests/diagnose/test_scripts.py`` checks ``tp.audit()``'s prediction (a CPU run
telling what an accelerator run would copy and wait for) against counts derived by
hand. Here the same three scripts run on ``sim:0``, where every copy and host wait
really happens, and the simulator's own count (published to ``torchport._crossings``)
must equal the same hand counts: two independent counts of one run agree, so
neither the prediction nor the simulator can drift alone. Host work in data
loading (reads of host tensors) must cross nothing.

The scripts that name ``torch.device("cpu")`` get ``"sim"`` in its place, the one
edit a user makes to run them on an accelerator.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

SCRIPTS = Path(__file__).parents[1] / "diagnose" / "scripts"

_COUNT = """
import re, runpy, sys
from collections import Counter
from torchport._crossings import listening
simulate_accelerator()
path = {path!r}
source = open(path).read().replace('torch.device("cpu")', 'torch.device("sim")')
marks = {{n: m.group(1) for n, line in enumerate(source.splitlines(), 1)
         if (m := re.search(r"# audit: (\\w+)$", line))}}
seen = []
sys.argv = [path]
code = compile(source, path, "exec")
with listening(seen.append):
    exec(code, {{"__name__": "__main__", "__file__": path}})
counted = Counter()
for c in seen:
    here = c.filename == path
    where = marks.get(c.lineno, f"{{c.filename}}:{{c.lineno}}") if here else c.filename
    counted[f"{{where}} {{'sync' if c.kind.value == 'sync' else 'transfer'}}"] += 1
print(json.dumps(dict(counted)))
"""


def _simulated_counts(script: str) -> dict[str, int]:
    counted: dict[str, int] = run_isolated(
        _COUNT.format(path=str(SCRIPTS / script)), env={"TORCHPORT_DEVICE": "sim"}
    )
    return counted


@pytest.mark.slow  # the hand-counted scripts, whole, under run --device sim
@pytest.mark.parametrize(
    ("script", "hand_count"),
    [
        pytest.param(
            "mnist_style.py",
            # the derivations are beside the same numbers in tests/diagnose/test_scripts.py
            {
                "model_to transfer": 8,
                "train_to transfer": 16,
                "log_loss sync": 4,
                "test_to transfer": 8,
                "test_loss sync": 4,
                "correct sync": 4,
            },
            id="mnist_style",
        ),
        pytest.param(
            "stream_style.py",
            {
                "model_to transfer": 4,
                "train_feed transfer": 24,
                "predict_feed transfer": 12,
                "loss_item sync": 12,
                "to_numpy transfer": 6,
            },
            id="stream_style",
        ),
        pytest.param(
            "hf_style.py",
            {
                "model_to transfer": 5,
                "batch_to transfer": 30,
                "log sync": 2,
                "masked sync": 4,
                "perplexity sync": 2,
                "correct sync": 2,
            },
            id="hf_style",
        ),
    ],
)
def test_the_simulated_run_counts_what_the_audit_was_hand_counted_to_predict(
    script: str, hand_count: dict[str, int]
) -> None:
    assert _simulated_counts(script) == hand_count
