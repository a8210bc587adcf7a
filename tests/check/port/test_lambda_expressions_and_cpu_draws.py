"""A tensor a lambda makes beside an expression of its parameter; a CPU draw the port moves.

Two classes p31n left (issue 31):

* ``made_beside`` read a bare parameter only: ``lambda t: torch.cat([t.flatten(),
  torch.zeros(2)])`` (``t.view(-1)``, ``t[0]``, ``t.T``, a method's result) was "0 left"
  and stopped on any accelerator. The invariant (``_lambdas.tensor_root``): an operand that
  is the parameter's tensor through methods, attributes and subscripts that keep it on its
  device counts as the parameter (``t.shape[0]``, ``t.size(0)``, ``t.item()``, ``t.cpu()``
  do not): moved where every call is seen and hands device values, else reported.
* ``torch.empty(n).normal_()`` (``.uniform_()``, ``.bernoulli_()``, any in-place draw
  chained to a factory) became ``torch.empty(n, device=device).normal_()``: on a real
  accelerator its generator draws other numbers than the CPU's, a change the simulated
  accelerator (whose tensors are the CPU's) cannot show. The invariant: the port never
  moves a CPU draw to a device's generator; the drawn tensor is moved after the chain
  (``torch.empty(n).normal_().to(device)``), as a ``torch.randn`` is.

Oracles apart from the port: the original on the CPU and the port on the simulated
accelerator (``no_cuda_sim``: the same values on ``sim:0``, or a finding left); the CPU
output byte-identical in this process; and, for the draws, the port's own text read with
``ast``: no in-place draw on a tensor a factory made with a ``device=`` argument.
"""

from __future__ import annotations

import ast

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said, same_on_the_cpu
from torchport.check.port import port_text

pytest.importorskip("torch")

EXPRESSIONS = {  # the lambda's body: what it makes beside an expression of `t` (3 x 2)
    "flatten, cat": "torch.cat([t.flatten(), torch.zeros(2)])",
    "view, times": "t.view(-1) * torch.ones(6)",
    "a row": "t[0] + torch.ones(2)",
    "transposed, a method": "t.T.add(torch.ones(2, 1))",
    "a method's result": "t.sum(0).sub(torch.arange(2.0))",
    "an attribute": "t.mT @ torch.ones(3, 2)",
}
HELD = ("named", "called where written", "in a list", "handed to map")


def _lambda_program(expr: str, held: str, in_main: bool) -> str:
    lam = f"lambda t: {EXPRESSIONS[expr]}"
    if held == "named":
        use = [f"f = {lam}", "OUT.append(f(model(x)).detach())"]
    elif held == "called where written":
        use = [f"OUT.append(({lam})(model(x)).detach())"]
    elif held == "in a list":
        use = [f"fs = [{lam}]", "for g in fs:", "    OUT.append(g(model(x)).detach())"]
    else:
        use = [f"OUT.extend(o.detach() for o in map({lam}, [model(x)]))"]
    head = "import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2)\n"
    lines = ["x = torch.ones(3, 4)", *use]
    if in_main:
        return head + "def main():\n" + "".join(f"    {b}\n" for b in lines) + "main()\n"
    return head + "".join(f"{b}\n" for b in lines)


DRAWS = {  # a weight drawn in place on the CPU (2 values)
    "normal_": "torch.empty(2).normal_()",
    "uniform_": "torch.empty(2).uniform_(-1, 1)",
    "then scaled": "torch.zeros(2).normal_(0, 0.1).mul_(3)",
    "bernoulli_": "torch.empty(2).bernoulli_(0.5)",
    "a typed one": "torch.Tensor(2).uniform_()",
    "made a weight": "torch.empty(2).normal_().requires_grad_()",
}
PLACES = ("the script", "a function", "a module's forward", "a module's lambda")


def _draw_program(draw: str, place: str) -> str:
    made = DRAWS[draw]
    head = "import torch\nfrom torch import nn\n\ntorch.manual_seed(0)\n"
    if place == "the script":
        return head + (
            f"model = nn.Linear(4, 2)\nw = {made}\n"
            "OUT.append((model(torch.ones(3, 4)) * w).detach())\n"
        )
    if place == "a function":
        return head + (
            f"def noisy(y):\n    return y * {made}\n\nmodel = nn.Linear(4, 2)\n"
            "OUT.append(noisy(model(torch.ones(3, 4))).detach())\n"
        )
    kept = f"        self.f = lambda t: t * {made}\n" if place == "a module's lambda" else ""
    call = "self.f(y)" if kept else f"y * {made}"
    return head + (
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.fc = nn.Linear(4, 2)\n{kept}\n    def forward(self, x):\n"
        f"        y = self.fc(x)\n        return {call}\n\n"
        "model = Net()\nOUT.append(model(torch.ones(3, 4)).detach())\n"
    )


_DRAWN = frozenset(
    {"normal_", "uniform_", "bernoulli_", "random_", "exponential_", "geometric_", "cauchy_",
     "log_normal_"}
)  # fmt: skip


def _draws_on_a_device(source: str) -> list[str]:
    """The in-place draws of ``source`` on a tensor made with a ``device=`` argument or
    moved (``.to(...)``, ``.cuda()``) before it (read apart from the port: ``ast`` alone)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in _DRAWN:
            continue
        made = node.func.value
        while _method(made).endswith("_"):  # (through other in-place calls chained before it)
            made = made.func.value  # type: ignore[attr-defined]
        moved = _method(made) in ("to", "cuda")
        if moved or (isinstance(made, ast.Call) and any(k.arg == "device" for k in made.keywords)):
            found.append(ast.unparse(node))
    return found


def _method(expr: ast.expr) -> str:
    """``m`` of ``x.m(...)``; "" for anything else."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        return expr.func.attr
    return ""


_LAMBDA = st.tuples(st.sampled_from(sorted(EXPRESSIONS)), st.sampled_from(HELD), st.booleans())


# (each example is one simulated-accelerator child: a few, in the default run's budget)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_LAMBDA, min_size=6, max_size=6))
@example(cases=[(e, "named", False) for e in EXPRESSIONS])  # silent on the base
@example(cases=[(e, h, True) for e in ("flatten, cat", "a row") for h in HELD[1:]])
def test_a_tensor_made_beside_an_expression_of_the_parameter_is_placed_or_said(
    cases: list[tuple[str, str, bool]],
) -> None:
    sources = [_lambda_program(*case) for case in cases]
    placed_or_said(sources)
    same_on_the_cpu(["OUT = []\n" + s for s in sources])  # (its own list here)


_DRAW = st.tuples(st.sampled_from(sorted(DRAWS)), st.sampled_from(PLACES))


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_DRAW, min_size=6, max_size=6))
@example(cases=[(d, "the script") for d in DRAWS])
@example(cases=[(d, p) for d in ("normal_", "then scaled") for p in PLACES[1:]])
def test_a_cpu_draw_stays_the_cpus(cases: list[tuple[str, str]]) -> None:
    sources = [_draw_program(*case) for case in cases]
    for source in sources:
        port = port_text(source, "p.py")
        assert not _draws_on_a_device(port.source), (source, port.source)
    placed_or_said(sources)
    same_on_the_cpu(["OUT = []\n" + s for s in sources])
