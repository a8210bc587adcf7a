"""TP303 leaves a loader whose batches go nowhere: a function's name that nothing reads.

Generated files move a model to a device and build ``loader = DataLoader(...)`` in a
function or at module level, then use ``loader`` in ways drawn at random: iterated
with its batches moved, returned, handed to another function, read in a nested
function, or not at all. The oracle is what was generated: a function's loader that
nothing reads feeds no device and is left; any read, or a module-level loader
(another module may import it), keeps the report.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

USES = {
    "iterated": "for x in loader:\n    x = x.to(device)",
    "returned": "return loader",
    "handed on": "train(model, loader)",
    "closure": "def batches():\n    return iter(loader)",
    "length": "steps = len(loader)",
}


@given(
    uses=st.lists(st.sampled_from(sorted(USES)), max_size=2),
    in_function=st.booleans(),
    name=st.sampled_from(["loader", "val_loader"]),
)
def test_a_loader_nothing_reads_is_left(uses: list[str], in_function: bool, name: str) -> None:
    body = ["loader = DataLoader(ds, batch_size=64, num_workers=2)", *(USES[u] for u in uses)]
    text = "\n".join(body).replace("loader", name)
    if in_function:
        text = "def main(ds):\n" + "\n".join("    " + ln for ln in text.splitlines())
    elif "returned" in uses:
        text = text.replace(f"return {name}", f"result = {name}")
    source = "import torch\nfrom torch.utils.data import DataLoader\n\nmodel.to(device)\n" + text
    found = check_text(source + "\n", "m.py", ruleset_for(["TP303"], None)).findings
    assert bool(found) == (bool(uses) or not in_function), source
