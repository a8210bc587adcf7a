"""TP106 and TP905 leave alone only moves that save no copy, checked against what torch makes.

The oracle is torch: each drawn factory call is made on the CPU, and a call the
rule skips as "nothing to copy" must make a tensor with no elements; a data
factory (``torch.tensor``, ``torch.as_tensor``) is never reported, any other
non-empty one always is.
"""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for
from torchport.check._fix import fix_source

MOVES = (".to(device)", ".cuda()")

FACTORIES = ("zeros", "ones", "empty", "rand", "randn", "eye", "full", "arange", "linspace")
SIZES = ("0", "3", "(2, 0)", "(0, 4)", "(2, 3)", "2, 0", "0, 5", "1, 2")
DATA = ("torch.tensor([1.0, 2.0])", "torch.as_tensor([0, 1])", "torch.tensor([])")


def call_for(factory: str, sizes: str, fill: str) -> str:
    if factory == "full":
        return (
            f"torch.full(({sizes},), {fill})"
            if "," not in sizes
            else f"torch.full({sizes}, {fill})"
        )
    if factory == "linspace":
        return f"torch.linspace({fill}, 1, {sizes.split(',')[0].strip('( ')})"
    if factory == "arange":
        return f"torch.arange({fill}, {sizes.split(',')[0].strip('( ')} + 1)"
    return f"torch.{factory}({sizes})"


@settings(max_examples=80, deadline=None)
@given(
    factory=st.sampled_from(FACTORIES),
    sizes=st.sampled_from(SIZES),
    fill=st.sampled_from(["0", "1"]),
)
def test_skipped_only_when_torch_makes_nothing(factory: str, sizes: str, fill: str) -> None:
    text = call_for(factory, sizes, fill)
    try:
        made = eval(text, {"torch": torch})
    except (TypeError, RuntimeError):
        return  # not a call torch takes
    # Skipped only when nothing is copied; every non-empty one is reported: by TP106
    # where the copy repeats (a loop), by TP905 where it runs once (a module's own line).
    for code, source in (
        ("TP106", f"import torch\n\nfor _ in steps:\n    x = {text}.to(device)\n"),
        ("TP905", f"import torch\n\nx = {text}.to(device)\n"),
    ):
        found = check_text(source, "m.py", ruleset_for(["TP106", "TP905"], None)).findings
        # (an empty one the rule cannot see as empty, `arange(1, 1)`, may be reported)
        assert [f.code for f in found] in ([[code]] if made.numel() else [[], [code]]), text


@settings(max_examples=20, deadline=None)
@given(data=st.sampled_from(DATA), move=st.sampled_from([".to(device)", ".cuda()"]))
def test_data_factories_are_never_reported(data: str, move: str) -> None:
    for body in (f"x = {data}{move}", f"for _ in s:\n    x = {data}{move}"):
        source = f"import torch\n\n{body}\n"
        found = check_text(source, "m.py", ruleset_for(["TP106", "TP905"], None)).findings
        assert not found, source


DRAWN = (  # random factories, with tensor or number arguments
    "torch.normal(mean, std)",
    "torch.normal(mean=mean, std=std)",
    "torch.normal(0.0, 1.0, (2, 3))",
    "torch.normal(0.0, 1.0, size=(2,))",
    "torch.normal(mean, 1.0)",
    "torch.bernoulli(p)",
    "torch.randn(2, 3)",
    "torch.randint(0, 5, (4,))",
)


@settings(max_examples=30, deadline=None)
@given(call=st.sampled_from(DRAWN), looped=st.booleans(), move=st.sampled_from(MOVES))
def test_a_fix_offered_runs(call: str, looped: bool, move: str) -> None:
    # The oracle is torch: whatever TP106 or TP905 rewrites must still be a call torch
    # takes (`torch.normal(mean, std)` has no `device=`: it draws where its tensors are).
    made = f"x = {call}{move}"
    body = f"for _ in range(1):\n    {made}" if looped else made
    source = f"import torch\n\n{body}\n"
    fixed = fix_source(source, select=["TP106", "TP905"], unsafe=True)
    names = {"mean": torch.zeros(3), "std": torch.ones(3), "p": torch.full((3,), 0.5)}
    runnable = fixed.replace('"cuda"', '"cpu"').replace(".cuda()", ".to(device)")  # no GPU here
    exec(runnable, {"device": "cpu", **names})
