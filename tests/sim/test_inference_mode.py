"""Programs run under ``torch.inference_mode()`` or ``torch.no_grad()`` behave on the
simulated device as on the CPU: same values, same errors, and the same tensors are
inference tensors (a view of a normal tensor is a normal one; every other result made
in inference mode is an inference tensor, which autograd then refuses to save).

The oracle is the CPU running the same program: torch's own rules, not the simulator's.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

# Each op takes a tensor ``t`` of at least 2-by-2 floats and returns a tensor (views,
# fresh results, in-place writes and ops that may or may not alias).
OPS = [
    "t[:, 1:]",
    "t[0]",
    "t.t()",
    "t.view(-1)",
    "t.reshape(-1)",
    "t.view_as(t)",
    "t.detach()",
    "t.data",
    "t.unsqueeze(0)",
    "t[:, :1].expand(-1, 3)",
    "t.unbind(0)[0]",
    "t.split(1)[0]",
    "t.chunk(2, 1)[0]",
    "t.diagonal()",
    "t.flatten()",
    "t.as_strided((2, 2), (1, 1))",
    "t.t().contiguous()",
    "t.contiguous()",
    "t.to(torch.float32)",
    "t.to(torch.float64)",
    "t * 2",
    "t.masked_fill(t[:, :] > 0, float('-inf'))",
    "t.clone().add_(1)",
    "t.add_(1)",
    "t[t > 0]",
]


def _program(base_inside: bool, mode: str, ops: list[int]) -> str:
    chain = "\n".join(f"        t = {OPS[i]}" for i in ops)
    make = "torch.linspace(-1.0, 1.0, 12).view(3, 4).to(dev)"
    return f"""
def prog(dev):
    base = None if {base_inside} else {make}
    with {mode}:
        t = {make} if base is None else base
{chain}
        inside = t.is_inference()
    w = torch.ones((), device=dev, requires_grad=True)
    try:
        (t * w).sum().backward()  # refused for an inference tensor
        after = "ok"
    except RuntimeError as error:
        after = str(error).split(".")[0]
    return [t.cpu().tolist(), inside, t.is_inference(), after]
"""


_CHILD = """
device = simulate_accelerator()
out = []
for source in SOURCES:
    scope = {"torch": torch}
    exec(source, scope)
    got = []
    for dev in (torch.device("cpu"), device):
        try:
            got.append(scope["prog"](dev))
        except Exception as error:  # an op that does not fit the shape: the same error
            got.append([type(error).__name__, str(error)])
    out.append(got)
print(json.dumps(out))
"""


@settings(max_examples=2, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.sampled_from(["torch.inference_mode()", "torch.no_grad()"]),
            st.lists(st.integers(0, len(OPS) - 1), min_size=1, max_size=4),
        ),
        min_size=40,
        max_size=40,
    )
)
def test_inference_mode_and_no_grad_run_as_on_the_cpu(cases: list[Any]) -> None:
    sources = [_program(*case) for case in cases]
    got = run_isolated(_CHILD.replace("SOURCES", repr(sources)))
    for source, (cpu, sim) in zip(sources, got, strict=True):
        assert sim == cpu, source


def test_a_module_buffer_sliced_under_inference_mode_masks_as_on_the_cpu() -> None:
    # makemore's evaluate: a causal mask registered as a buffer, sliced inside
    # @torch.inference_mode() (it failed with "Cannot set version_counter for inference tensor").
    got = run_isolated(
        """
        class Attention(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("bias", torch.tril(torch.ones(5, 5)).view(1, 1, 5, 5))
            def forward(self, att):
                n = att.size(-1)
                return att.masked_fill(self.bias[:, :, :n, :n] == 0, float("-inf")).softmax(-1)
        out = []
        for dev in ("cpu", simulate_accelerator()):
            torch.manual_seed(0)
            model = Attention().to(dev)
            att = torch.randn(2, 1, 4, 4).to(dev)
            evaluate = torch.inference_mode()(lambda: model(att))
            out.append(evaluate().cpu().tolist())
        print(json.dumps(out))
        """
    )
    assert got[1] == got[0]


def test_a_value_read_waits_in_inference_mode_as_outside_it() -> None:
    # An inference tensor's .item() reached the simulator as aten.item, not
    # _local_scalar_dense, and its wait went uncounted. The oracle is the same read under
    # no_grad, where the tensor is a normal one.
    got = run_isolated(
        """
        from torchport import _crossings
        device = simulate_accelerator()
        x = torch.ones(3, device=device)
        reads = ["t.sum().item()", "float(t.sum())", "int(t[0])", "bool(t[0])", "t.tolist()",
                 "t[0] > 0 and 1", "f'{t.sum():.1f}'"]
        out = {}
        for mode in ("inference_mode", "no_grad"):
            for read in reads:
                got = []
                with _crossings.listening(got.append), getattr(torch, mode)():
                    t = x * 2
                    value = eval(read, {"t": t})
                out[f"{mode} {read}"] = [str(value), sum(c.kind.value == "sync" for c in got)]
        print(json.dumps([out, reads]))
        """
    )
    out, reads = got
    for read in reads:
        assert out[f"inference_mode {read}"] == out[f"no_grad {read}"], read
        assert out[f"no_grad {read}"][1] >= 1, read  # the oracle waited at all


# ``to`` in every form: an inference tensor's reached the simulator whole as aten.to.*
# (no autograd key decomposes it) and ran on the values inside, so ``x.cpu()`` came back
# as a device tensor that shared the device's memory.
MOVES = [
    "t.cpu()",
    "t.to('cpu')",
    "t.to(device='cpu', dtype=torch.float64)",
    "t.to(torch.ones(1, dtype=torch.float64))",
    "t.to(t)",
    "t.to(dev)",
    "t.to(dev, copy=True)",
    "t.to(torch.float64)",
    "t.to(torch.float32)",
    "t.double()",
    "t.to(memory_format=torch.contiguous_format)",
    "t.cpu().to(dev)",
    "t.to('cpu', non_blocking=True)",
]

_MOVES_CHILD = """
dev = simulate_accelerator()
out = []
for moves in CASES:
    got = []
    for mode in (torch.inference_mode, torch.no_grad):
        with mode():
            source = torch.linspace(-1.0, 1.0, 6).view(2, 3).to(dev)
            t = source
            for move in moves:
                t = eval(move, {"torch": torch, "dev": dev, "t": t})
            torch.accelerator.synchronize()  # a non_blocking copy's values land here
            values = t.tolist()
            same = t is source
            t.add_(1)  # a host copy never writes back into the device tensor
            got.append([str(t.device), type(t).__name__, str(t.dtype), values, same,
                        source.tolist()])
    out.append(got)
print(json.dumps(out))
"""


@settings(max_examples=2, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, len(MOVES) - 1), min_size=1, max_size=3),
        min_size=40,
        max_size=40,
    )
)
def test_an_inference_tensor_moves_as_a_normal_one(cases: list[list[int]]) -> None:
    # The oracle: the same moves of a normal tensor under no_grad, where torch's own
    # composite ``to`` decides (and copies through _to_copy, tested against the CPU).
    chains = [[MOVES[i] for i in case] for case in cases]
    got = run_isolated(_MOVES_CHILD.replace("CASES", repr(chains)))
    for chain, (inference, normal) in zip(chains, got, strict=True):
        assert inference == normal, chain
