"""The simulator raises where CUDA raised, and runs what CUDA ran: held to a record made on a GPU.

``tests/sim/data/cuda_device_rules.json`` is what ``device_rule_cases.py`` recorded on a
real CUDA device (``benchmarks/gpu_proof.sh``'s ``device-rules`` part: torch, GPU and
date are in the file). Every CPU run replays each case on ``sim`` in a child process
and compares whether it raised, case by case: a rule the simulator is more lenient
about lets a program verified on ``sim`` fail on a GPU; a stricter one refuses a
working program. ``test_rules_against_cuda.py`` makes the same comparison live on a
lent GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.sim.device_rule_cases import CASES
from tests.sim.isolated import run_isolated

RECORD = Path(__file__).parent / "data" / "cuda_device_rules.json"


def _record() -> dict[str, str | None]:
    cases: dict[str, str | None] = json.loads(RECORD.read_text(encoding="utf-8"))["cases"]
    return cases


def test_every_case_has_cudas_answer_on_record() -> None:
    missing = sorted(set(CASES) - set(_record()))
    assert not missing, f"record these on a GPU (benchmarks/gpu_proof.sh): {missing}"


def test_the_simulator_raises_exactly_where_cuda_raised() -> None:
    on_sim = run_isolated(
        """
        from tests.sim.device_rule_cases import record
        print(json.dumps(record(simulate_accelerator())))
        """
    )
    differ = {
        name: f"cuda {cuda}, sim {on_sim[name]}"
        for name, cuda in _record().items()
        if name in CASES and (cuda is None) != (on_sim[name] is None)
    }
    assert not differ, differ
