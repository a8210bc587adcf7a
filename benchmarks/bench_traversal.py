"""What does walking a nested batch cost per leaf? (issue 2)

Strategies compared, in one run on CPU, on a 1000-leaf nested batch (dicts,
lists, tuples of 16-byte tensors), each applying the same per-leaf op:

* ``torchport.to_device(batch, device)``: the default way to move a batch;
* accelerate ``send_to_device``;
* lightning-utilities ``apply_to_collection(batch, Tensor, op)``;
* ``torch.utils._pytree.tree_map``;
* a bare ``optree.tree_map(op, batch)``: the floor for an optree-based walker.

Two per-leaf ops, reported separately: a no-op move (``t.to('cpu')`` returns
``t``; the walk is everything) and one that does work (``t.to('meta')``).
Targets: to_device ≤ 0.8x accelerate and ≤ 1.2x bare optree.

The measurement code is ``torchport.bench.traversal_overhead`` (also run by
``torchport bench overhead``); this script only prints it.

Run: ``.venv/bin/python benchmarks/bench_traversal.py [--quick] [--json]``
"""

from __future__ import annotations

from torchport.bench import script_main, traversal_overhead

if __name__ == "__main__":
    raise SystemExit(
        script_main(
            __doc__ or "",
            lambda quick: [traversal_overhead(quick=quick)],
        )
    )
