"""TP202 leaves a read taken only on chosen steps: the loop's step counter tested for membership.

Generated loops bind names (``for i in range(n)``, ``for i, x in enumerate(xs)``,
``for x in xs``, ``for name, p in model.named_parameters()``), run a model each
iteration and read a loss under ``if <name> in <steps>:`` (alone or within an
``and``). The oracle is what was generated: the step counter of a ``range`` or
``enumerate`` loop in a set of steps picks some iterations (``np.linspace(0, n, 10)``:
ten reads, the advice already followed), so nothing is reported; any other name (an
item of the loop, a label, a token) may hold on every iteration, so it is reported.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

HEADERS = {  # each loop, and the step counter it binds (not its items)
    "for i in range(n):": ("i",),
    "for i, x in enumerate(xs):": ("i",),
    "for step, (x, y) in enumerate(loader):": ("step",),
    "for x in xs:": (),
    "for name, p in model.named_parameters():": (),
    "async for it in stream:": (),
}
STEPS = ("np.linspace(0, n, 10, dtype=int)", "checkpoints", "{0, n - 1}", "range(0, n, 50)")
READS = ("print(loss.item())", "log.append(loss.cpu().numpy())", "vals.append(loss.tolist())")


@given(
    header=st.sampled_from(sorted(HEADERS)),
    tested=st.sampled_from(["i", "x", "step", "y", "it", "name", "label", "token"]),
    steps=st.sampled_from(STEPS),
    conjoined=st.booleans(),
    read=st.sampled_from(READS),
)
def test_membership_of_the_counter_is_now_and_then(
    header: str, tested: str, steps: str, conjoined: bool, read: str
) -> None:
    test = f"{tested} in {steps}" + (" and verbose" if conjoined else "")
    body = ["    loss = model(x).sum()", f"    if {test}:", f"        {read}"]
    loop = [header, *body]
    if header.startswith("async"):
        loop = ["async def run():", *("    " + line for line in loop)]
    source = "\n".join(["import numpy as np", "import torch", "", *loop]) + "\n"
    found = check_text(source, "m.py", ruleset_for(["TP202"], None)).findings
    assert bool(found) != (tested in HEADERS[header]), source
