"""What does ``torchport.strict()`` cost a training step?

Strategies compared, in one run on CPU (one intra-op thread): a training step
(forward, MSE loss, backward, SGD update) run bare (the default: strict is
opt-in) and inside ``torchport.strict()``, each sample being N steps inside one
context as a training loop would use it. Two steps: a tiny MLP (16 wide,
batch 8), where per-op interception weighs most, and an MLP calibrated to about
5 ms per step. Target: strict ≤ 1.05x on the tiny step.

The measurement code is ``torchport.bench.diagnose_overhead`` (also run by
``torchport bench overhead``); this script only prints it.

Run: ``.venv/bin/python benchmarks/bench_strict_overhead.py [--quick] [--json]``
"""

from __future__ import annotations

from torchport.bench import diagnose_overhead, script_main

if __name__ == "__main__":
    raise SystemExit(
        script_main(
            __doc__ or "",
            lambda quick: [diagnose_overhead(quick=quick, variants=("strict()",))],
        )
    )
