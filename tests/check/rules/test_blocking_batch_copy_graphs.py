"""TP203 leaves the features of a batched graph (DGL's ``ndata``/``edata`` stores).

``for g, y in loader: x = g.ndata["feat"].to(device)``: a loader's ``pin_memory`` pins
the tensors of a batch, not those a ``DGLGraph`` holds, so ``non_blocking=True``
overlaps nothing. Generated loops move values read through different chains; the
oracle: left exactly when the chain passes a graph store (``ndata``, ``edata``,
``srcdata``, ``dstdata``), reported otherwise (the batch's own tensors).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

STORES = {"ndata": True, "edata": True, "srcdata": True, "dstdata": True, "data": False}
TAILS = ('["feat"]', "['pos_enc'][:, :8]", "[key]")


@given(
    store=st.sampled_from(sorted(STORES)),
    tail=st.sampled_from(TAILS),
    wrapper=st.sampled_from(("loader", "enumerate(loader)", "tqdm(train_loader)")),
)
def test_a_graph_s_features_are_left(store: str, tail: str, wrapper: str) -> None:
    target = "i, (g, y)" if wrapper.startswith("enumerate") else "g, y"
    source = (
        f"for {target} in {wrapper}:\n"
        f"    x = g.{store}{tail}.to(device)\n"
        "    y = y.to(device, non_blocking=True)\n"
        "    out = model(g, x)\n"
    )
    found = check_text(source, "m.py", ruleset_for(["TP203"], None)).findings
    assert bool(found) != STORES[store], source
