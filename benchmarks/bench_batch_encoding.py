"""What does moving a HuggingFace ``BatchEncoding`` cost, against accelerate and lightning?

Strategies compared, in one run on CPU, on a ``BatchEncoding`` of ``input_ids``,
``attention_mask`` and ``token_type_ids`` (8 x 128 int64 each; transformers' own
class when installed, else a stand-in, as the label says):

* ``torchport.to_device(batch, device)``: a ``UserDict`` whose ``data`` is a dict
  of plain tensors is moved directly into a new object; the input is left as it
  was (the default);
* accelerate ``send_to_device``, which calls ``BatchEncoding.to``: that moves the
  batch in place, so the strategy puts the input's ``data`` back after each call;
* lightning-utilities ``apply_to_collection(batch, Tensor, t.to(device))``.

Two per-leaf ops: a no-op move (``t.to('cpu')``) and ``t.to('meta')``. Target:
to_device ≤ 1.0x accelerate for both, with the input unmodified.

The measurement code is ``torchport.bench._suite_overhead_traversal.batch_encoding_rows`` (also
part of ``benchmarks/bench_traversal.py``); this script runs that part alone.

Run: ``.venv/bin/python benchmarks/bench_batch_encoding.py [--quick] [--json]``
"""

from __future__ import annotations

from torchport.bench import script_main
from torchport.bench._suite_overhead_traversal import batch_encoding_overhead

if __name__ == "__main__":
    raise SystemExit(
        script_main(__doc__ or "", lambda quick: [batch_encoding_overhead(quick=quick)])
    )
