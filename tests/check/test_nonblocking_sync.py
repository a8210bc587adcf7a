"""TP204 on generated statement orders: reported unless a wait comes before the first read."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# Each statement, and what it does to the non-blocking copy `host` (oracle written by hand).
STATEMENTS = {
    "print(host)": "read",
    "total = host.sum()": "read",
    "other = [host]": "read",
    "torch.cuda.synchronize()": "wait",
    "torch.accelerator.synchronize()": "wait",
    "torch.cuda.current_stream().synchronize()": "wait",
    "event.synchronize()": "wait",
    "n = y.item()": "wait",
    'z = y.to("cpu")': "wait",
    "w = y.cpu()": "wait",
    'v = y.to("cpu", non_blocking=True)': "neither",
    "out = model(batch)": "neither",
    "step += 1": "neither",
    "print(host, y.cpu())": "read",  # both in one statement: counted as a read
    "assert host.shape == (2,)": "neither",  # metadata: known without the data
    "n = host.size(0) + host.numel()": "neither",
    "m = host.sum() + host.dim()": "read",
}


def expected(order: list[str]) -> bool:
    """Reported when a read comes before any wait, or nothing decides (a later block may read)."""
    for stmt in order:
        effect = STATEMENTS[stmt]
        if effect == "read":
            return True
        if effect == "wait":
            return False
    return True


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(sorted(STATEMENTS)), max_size=5), st.booleans())
def test_reported_unless_synchronized_before_the_first_read(
    order: list[str], in_function: bool
) -> None:
    body = ['host = out.to("cpu", non_blocking=True)', *order]
    if in_function:
        source = "import torch\n\ndef f(out, y, event, model, batch, step):\n" + "".join(
            f"    {line}\n" for line in body
        )
    else:
        source = "import torch\n" + "".join(f"{line}\n" for line in body)
    lines = {f.line for f in check_source(source, select=["TP204"])}
    first = 4 if in_function else 2
    assert (first in lines) == expected(order), source


def test_a_copy_passed_on_at_once_is_read_before_any_wait() -> None:
    source = (
        'import torch\nn = torch.sum(x.to("cpu", non_blocking=True))\ntorch.cuda.synchronize()\n'
    )
    assert [f.code for f in check_source(source, select=["TP204"])] == ["TP204"]


def test_an_attribute_target_is_read_where_this_block_cannot_see() -> None:
    source = 'self.h = x.to("cpu", non_blocking=True)\ntorch.cuda.synchronize()\n'
    assert [f.code for f in check_source(source, select=["TP204"])] == ["TP204"]
