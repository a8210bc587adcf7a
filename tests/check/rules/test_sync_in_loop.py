"""TP202 leaves a read taken only on chosen steps: the loop's counter tested for membership.

Generated loops bind one or more names (``for i in ...``, ``for i, x in ...``,
``for step, (x, y) in ...``), run a model each iteration and read a loss under
``if <name> in <steps>:`` (alone or within an ``and``). The oracle is what was
generated: a name the loop binds picks some iterations (``np.linspace(0, n, 10)``:
ten reads, the advice already followed), so nothing is reported; any other name
(a label, a token) says nothing about how often the read runs, so it is.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

HEADERS = {
    "for i in range(n):": ("i",),
    "for i, x in enumerate(xs):": ("i", "x"),
    "for step, (x, y) in enumerate(loader):": ("step", "x", "y"),
    "async for it in stream:": ("it",),
}
STEPS = ("np.linspace(0, n, 10, dtype=int)", "checkpoints", "{0, n - 1}", "range(0, n, 50)")
READS = ("print(loss.item())", "log.append(loss.cpu().numpy())", "vals.append(loss.tolist())")


@given(
    header=st.sampled_from(sorted(HEADERS)),
    tested=st.sampled_from(["i", "x", "step", "y", "it", "label", "token"]),
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
