"""What does the feed pillar cost on the CPU, where nothing crosses a link?

Strategies compared, in one run on CPU:

* ``DeviceLoader(loader, "cpu")`` vs the bare loader, per batch, over ready
  ``(x, y)`` batches, over ready dict batches holding non-tensor leaves (an index,
  a path, a list of tags) and over a small-batch ``DataLoader``. Target: ≤ 5 µs
  per batch more (≤ 2 µs for the dict batches).
* ``to_device(batch, "meta", pack=True)`` vs ``pack=False`` vs the default
  ``pack=None``, per tensor. The default packs only for CUDA targets
  (``torchport.hardware.should_pack``: at least 4 host tensors, mean ≤ 256 KiB,
  total ≤ 64 MiB), so here it must cost what ``pack=False`` costs.

The measurement code is ``torchport.bench._suite_feed_cpu``; this script only prints it.

Run: ``.venv/bin/python benchmarks/bench_feed_cpu.py [--quick] [--json]``
"""

from __future__ import annotations

from torchport.bench import script_main
from torchport.bench._suite_feed_cpu import feed_cpu

if __name__ == "__main__":
    raise SystemExit(script_main(__doc__ or "", lambda quick: [feed_cpu(quick=quick)]))
