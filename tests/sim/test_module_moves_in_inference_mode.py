"""A module moved onto the simulated device under ``torch.inference_mode()`` moves as on CUDA.

``model.to("cuda")`` inside ``torch.inference_mode()`` (a serving script's
``with torch.inference_mode(): model = load().to(device)``) assigns each parameter's
``.data`` an inference tensor: the Parameter objects stay, and they become inference
tensors that still require grad. On ``sim`` every such move raised "_apply(): Couldn't
swap Linear.weight": the swap's poisoning of the old tensor's gradient node asked for that
node through a view, which inference mode makes without one. The oracle is the CPU running
the same program with a move that changes the dtype (which assigns ``.data`` there too).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

LAYERS = {
    "linear": ("nn.Linear(4, 3)", "torch.randn(2, 4)"),
    "conv": ("nn.Sequential(nn.Conv1d(4, 3, 2), nn.BatchNorm1d(3))", "torch.randn(2, 4, 5)"),
    "lstm": ("nn.LSTM(4, 3)", "torch.randn(5, 2, 4)"),
    "embedding": ("nn.Embedding(6, 3)", "torch.tensor([[0, 5], [2, 2]])"),
    "attention": ("nn.MultiheadAttention(4, 2)", "torch.randn(3, 2, 4)"),
    "layernorm": ("nn.Sequential(nn.LayerNorm(4), nn.Linear(4, 2))", "torch.randn(2, 4)"),
}

_CHILD = """
from torch import nn
sim = simulate_accelerator()


def run(layer, data, made_inside, moved_inside, dev, dtype):
    torch.manual_seed(0)
    model = None if made_inside else eval(layer)
    with torch.inference_mode(moved_inside):
        model = model if model is not None else eval(layer)
        params = list(model.parameters())
        model.to(dev, dtype)
        kept = [a is b for a, b in zip(params, model.parameters())]
    x = eval(data).to(dev)
    x = x if x.dtype == torch.int64 else x.to(dtype)
    model.eval()
    with torch.inference_mode():
        y = model(x, x, x)[0] if isinstance(model, nn.MultiheadAttention) else model(x)
        y = y[0] if isinstance(y, tuple) else y
        # rounded: the CPU's LSTM takes its own kernel (is_cpu) and differs in the last bit
        values = y.round(decimals=9).cpu().tolist()
    p = next(model.parameters())
    state = [kept, str(p.device.type), p.is_inference(), p.requires_grad, y.is_inference()]
    model.train()
    try:
        out = model(x, x, x)[0] if isinstance(model, nn.MultiheadAttention) else model(x)
        (out[0] if isinstance(out, tuple) else out).sum().backward()
        grads = [q.grad for q in model.parameters()]
        after = [None if g is None else g.round(decimals=9).cpu().tolist() for g in grads]
    except RuntimeError as error:
        after = str(error).split(".")[0]
    return [state, values, after]


out = []
for layer, data, made_inside, moved_inside in CASES:
    # The CPU's oracle moves to float64 (an assignment of .data there); sim moves to itself
    # in float64 too, so the values compare exactly.
    got = []
    for dev in (torch.device("cpu"), sim):
        try:
            got.append(run(layer, data, made_inside, moved_inside, dev, torch.float64))
            got[-1][0][1] = "moved"  # the device type: the oracle stays on the CPU
        except RuntimeError as error:
            got.append([type(error).__name__, str(error)])
    out.append(got)
print(json.dumps(out))
"""


@settings(max_examples=2, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(LAYERS)), st.booleans(), st.booleans()),
        min_size=12,
        max_size=12,
    )
)
def test_a_module_moved_in_inference_mode_moves_as_on_the_cpu(cases: list[Any]) -> None:
    programs = [[*LAYERS[name], made, moved] for name, made, moved in cases]
    got = run_isolated(_CHILD.replace("CASES", repr(programs)))
    for program, (cpu, sim) in zip(programs, got, strict=True):
        assert sim == cpu, program
