"""TP203 reports a blocking move of the loader's batch, and only of the batch as the loop bound it.

Each program is a loop over a loader whose body rebinds the batch name ``x`` by
a few generated statements (a move, a host transform, a rebinding on one branch
only, a statement that leaves ``x`` alone), then moves ``x`` without
``non_blocking``. The oracle is written here, apart from the rule: it follows
the statements in order and keeps whether ``x`` surely still is the batch the
loop bound ("batch"), surely is not ("other"), or may be either ("maybe"); the
move is reported unless ``x`` is surely another value.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (statement lines in the loop body, what it does to `x`: "rebind", "maybe" or "keep")
STEPS = {
    "move": (["x = x.to(device, non_blocking=True)"], "rebind"),
    "host transform": (["x = augment(x)"], "rebind"),
    "cast": (["x = x.float()"], "rebind"),
    "one branch": (["if aug:", "    x = augment(x)"], "maybe"),
    "both branches": (["if aug:", "    x = augment(x)", "else:", "    x = x * 2"], "rebind"),
    "other name": (["y = y.float()"], "keep"),
    "log": (["print(x.shape)"], "keep"),
}


def oracle(steps: list[str]) -> bool:
    """Whether the final ``x.to(device)`` moves what may still be the loader's batch."""
    state = "batch"
    for step in steps:
        effect = STEPS[step][1]
        if effect == "rebind":
            state = "other"
        elif effect == "maybe" and state == "batch":
            state = "maybe"  # rebinding again on one branch leaves "other" other
    return state != "other"


@settings(deadline=None)
@given(
    steps=st.lists(st.sampled_from(sorted(STEPS)), max_size=4),
    in_function=st.booleans(),
    wrapped=st.sampled_from(["{}", "enumerate({})", "tqdm({})"]),
)
def test_only_the_batch_as_bound_is_reported(
    steps: list[str], in_function: bool, wrapped: str
) -> None:
    header = "for i, (x, y) in " if "enumerate" in wrapped else "for x, y in "
    body = [line for step in steps for line in STEPS[step][0]]
    body.append("out = model(x.to(device))")
    lines = [header + wrapped.format("train_loader") + ":", *("    " + b for b in body)]
    if in_function:
        lines = ["def train(model, train_loader, device):", *("    " + line for line in lines)]
    source = "import torch\n\n" + "\n".join(lines) + "\n"
    found = [f for f in check_source(source, select=["TP203"]) if f.line == len(lines) + 2]
    assert bool(found) is oracle(steps), source
