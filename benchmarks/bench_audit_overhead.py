"""What does ``torchport.audit()`` cost a training step, whole and sampled?

Strategies compared, in one run on CPU (one intra-op thread): a training step
(forward, MSE loss, backward, SGD update) run bare (the default: audit is
opt-in), inside ``torchport.audit()`` (every op watched), and inside
``torchport.audit(every=N)`` with each step marked by ``report.step()`` (one
step in N recorded, N = steps per sample), and, as the floor under audit(),
inside an empty ``TorchDispatchMode`` (PyTorch's own price for any Python
dispatch mode). Two steps: a tiny MLP and an MLP calibrated to about 5 ms per
step. Target: audit ≤ 1.15x on the 5 ms step.

Then single events, bare / empty dispatch mode / audit(): ``.item()``,
``.tolist()``, boolean-mask indexing, a CPU ``x.to(device)`` (listed as a copy an
accelerator would make) and ``y + 1`` (not recorded). Target: each recorded event
costs under 20 µs over bare.

The measurement code is ``torchport.bench.diagnose_overhead`` (also run by
``torchport bench overhead``) and ``torchport.bench._diagnose.event_costs``; this
script only prints them.

Run: ``.venv/bin/python benchmarks/bench_audit_overhead.py [--quick] [--json]``
"""

from __future__ import annotations

from torchport.bench import diagnose_overhead, script_main
from torchport.bench._diagnose import event_costs

if __name__ == "__main__":
    raise SystemExit(
        script_main(
            __doc__ or "",
            lambda quick: [
                diagnose_overhead(
                    quick=quick, variants=("audit()", "audit(every=N)", "empty dispatch mode")
                ),
                event_costs(quick=quick),
            ],
        )
    )
