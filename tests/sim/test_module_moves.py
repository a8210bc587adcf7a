"""Module moves onto the simulated device keep values and Parameter objects, as on CUDA.

``model.cuda()`` assigns each parameter's ``.data``, so every module torch ships
moves, whatever holds its parameters (an optimizer, a tied layer, an autograd
graph built by ``weight_norm`` when it was applied), and the Parameter objects
stay the same. The oracle is the same stack trained on the CPU: the simulated
device runs the CPU's kernels, so losses and trained values must match, and the
parameters listed before the move must be the module's parameters after it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

_LAYERS = ["linear", "conv1d", "lstm", "gru", "batchnorm", "tied"]
_WRAPS = [
    "none",
    "weight_norm",
    "spectral_norm",
    "parametrize",
    "p_weight_norm",
    "p_orthogonal",
    "p_spectral_norm",
]

_CHILD = """
import warnings
warnings.simplefilter("ignore")
from torch import nn
from torch.nn.utils import parametrize, parametrizations, spectral_norm, weight_norm


class Mirrored(nn.Module):
    def forward(self, w):
        return w + w.flip(0)


def wrapped(layer, how):
    if how == "weight_norm":
        return weight_norm(layer)
    if how == "spectral_norm":
        return spectral_norm(layer)
    if how == "parametrize":
        parametrize.register_parametrization(layer, "weight", Mirrored())
        return layer
    if how == "p_weight_norm":
        return parametrizations.weight_norm(layer)
    if how == "p_orthogonal":
        return parametrizations.orthogonal(layer)
    if how == "p_spectral_norm":
        return parametrizations.spectral_norm(layer)
    return layer


class Stack(nn.Module):
    def __init__(self, spec, features):
        super().__init__()
        self.kinds = [kind for kind, _ in spec]
        layers, plain = [], []
        for kind, how in spec:
            if kind == "linear":
                layer = wrapped(nn.Linear(features, features), how)
                if how == "none":
                    plain.append(layer)
            elif kind == "conv1d":
                layer = wrapped(nn.Conv1d(features, features, 3, padding=1), how)
            elif kind == "lstm":
                layer = nn.LSTM(features, features)
            elif kind == "gru":
                layer = nn.GRU(features, features)
            elif kind == "batchnorm":
                layer = nn.BatchNorm1d(features)
            else:  # a layer sharing the weight of an earlier plain Linear (or its own)
                layer = nn.Linear(features, features)
                if plain:
                    layer.weight = plain[0].weight
            layers.append(layer)
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        for kind, layer in zip(self.kinds, self.layers):
            if kind == "conv1d":
                x = layer(x.unsqueeze(-1).expand(*x.shape, 4)).mean(-1)
            elif kind in ("lstm", "gru"):
                x = layer(x.unsqueeze(0))[0][0]
            else:
                x = layer(x)
            x = torch.tanh(x)
        return x


def train(spec, features, grads_before, device):
    torch.manual_seed(0)
    model = Stack(spec, features)
    before = [id(p) for p in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(5, features)
    if grads_before:  # gradients made on the host move with their parameters
        model(x).square().mean().backward()
    try:
        model.to(device)
    except Exception as error:
        return {"raised": f"{type(error).__name__}: {error}"}
    kept = before == [id(p) for p in model.parameters()]
    where = sorted({str(t.device) for t in [*model.parameters(), *model.buffers()]})
    grads = sorted({str(p.grad.device) for p in model.parameters() if p.grad is not None})
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = model(x.to(device)).square().mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    values = [p.detach().cpu().flatten().tolist() for p in model.parameters()]
    return {"kept": kept, "where": where, "grads": grads, "losses": losses, "values": values}
"""


@st.composite
def _stacks(draw: st.DrawFn) -> dict[str, Any]:
    spec = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(_LAYERS))
        how = draw(st.sampled_from(_WRAPS)) if kind in ("linear", "conv1d") else "none"
        spec.append((kind, how))
    return {
        "spec": spec,
        "features": draw(st.integers(2, 5)),
        "grads_before": draw(st.booleans()),
    }


def _close(a: list[float], b: list[float]) -> bool:
    # An LSTM runs the CPU's fused kernel on the host and torch's composite cell on the
    # simulated device: its outputs differ in the last float32 bit (6e-8 measured), and a few
    # training steps behind a spectral norm's power iteration grow that to ~1e-4 relative
    # (hypothesis found batchnorm-LSTM-spectral-norm-batchnorm at 1.6e-4 on a clean clone).
    if len(a) != len(b):
        return False
    return all(abs(x - y) <= 1e-4 * (1 + abs(x)) for x, y in zip(a, b, strict=True))


@settings(max_examples=2, deadline=None)
@given(st.lists(_stacks(), min_size=12, max_size=12))
def test_every_parametrized_stack_moves_trains_and_keeps_its_parameters(
    stacks: list[dict[str, Any]],
) -> None:
    got = run_isolated(
        _CHILD,
        f"""
        device = simulate_accelerator()
        stacks = {stacks!r}
        print(json.dumps([[train(**s, device=d) for d in ("cpu", device)] for s in stacks]))
        """,
    )
    for stack, (cpu, sim) in zip(stacks, got, strict=True):
        assert "raised" not in sim, (stack, sim)
        assert sim["kept"] and cpu["kept"], stack
        assert sim["where"] == ["sim:0"], stack
        assert sim["grads"] == (["sim:0"] if stack["grads_before"] else []), stack
        assert _close(cpu["losses"], sim["losses"]), (stack, cpu["losses"], sim["losses"])
        for host, device in zip(cpu["values"], sim["values"], strict=True):
            assert _close(host, device), stack


def test_a_graph_built_before_the_move_and_torchs_swap_flag_behave_as_on_cuda() -> None:
    got = run_isolated(
        """
        import warnings
        warnings.simplefilter("ignore")
        from torch import nn
        from torch.nn.utils import weight_norm
        device = simulate_accelerator()
        out = {}
        model = weight_norm(nn.Linear(3, 2))
        stale = model.weight  # computed on the host when weight_norm was applied
        model.to(device).half()  # a dtype change on the device keeps the objects too
        out["dtype"] = str(model.weight_g.dtype)
        try:
            stale.sum().backward()
            out["stale"] = "ran"
        except RuntimeError as error:
            out["stale"] = str(error)
        torch.__future__.set_swap_module_params_on_conversion(True)
        try:  # torch's own swap refuses the held weight_g, as on CUDA
            weight_norm(nn.Linear(3, 2)).to(device)
            out["swap"] = "moved"
        except RuntimeError as error:
            out["swap"] = str(error)
        print(json.dumps(out))
        """
    )
    assert got["dtype"] == "torch.float16"
    assert "graph built before its module moved" in got["stale"]
    assert got["swap"] == "_apply(): Couldn't swap Linear.weight_g"
