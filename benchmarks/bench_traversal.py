"""What does walking a batch cost, per leaf and per small batch?

Strategies compared, in one run on CPU, on a 1000-leaf nested batch (dicts,
lists, tuples of 16-byte tensors) and on the small batches most loops move (a
tensor, an ``(x, y, mask)`` tuple, a dict of 10 tensors), each applying the
same per-leaf op:

* ``torchport.to_device(batch, device)``: the default way to move a batch;
* accelerate ``send_to_device``;
* lightning-utilities ``apply_to_collection(batch, Tensor, op)``;
* ``torch.utils._pytree.tree_map``;
* a bare ``optree.tree_map(op, batch)``: the floor for an optree-based walker.

Two per-leaf ops, reported separately: a no-op move (``t.to('cpu')`` returns
``t``; the walk is everything) and one that does work (``t.to('meta')``).
Targets: 1000 leaves, to_device ≤ 0.5x accelerate (no-op) and ≤ 0.8x (meta),
≤ 1.2x bare optree; small batches, to_device ≤ 1.0x accelerate for both ops.

In the same run (``torchport.bench._suite_overhead_own_to``): to_device against the bare ``.to``
loop, accelerate ``send_to_device`` and Lightning's ``move_data_to_device`` on a
3-tuple, a dict of 10, 1000 leaves and a ``BatchEncoding`` (target ≤ 1.05x the bare
loop), and on PyG ``Batch`` and ``TensorDict`` against the object's own ``.to`` on a
shallow copy (target ≤ 1.5x), each to ``meta`` and as a no-op to ``cpu``.

The measurement code is ``torchport.bench.traversal_overhead`` (its 1000-leaf
half is also run by ``torchport bench overhead``) and
``torchport.bench._suite_overhead_own_to.own_to_overhead``; this script only prints them.

Run: ``.venv/bin/python benchmarks/bench_traversal.py [--quick] [--json]``
"""

from __future__ import annotations

from torchport.bench import script_main, traversal_overhead
from torchport.bench._suite_overhead_own_to import own_to_overhead

if __name__ == "__main__":
    raise SystemExit(
        script_main(
            __doc__ or "",
            lambda quick: [traversal_overhead(quick=quick), own_to_overhead(quick=quick)],
        )
    )
