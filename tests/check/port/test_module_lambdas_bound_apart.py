"""A lambda a module's methods reach through a name or ``setattr``: its CPU tensor said or placed.

p31m placed (or reported) a lambda ``__init__`` keeps as ``self.f = lambda ...``; the port
still said "0 left" of the same lambda reached another way, and the program stopped at the
lambda on any accelerator (issue 31): bound to a module-level name a method calls (``act =
lambda t: torch.cat([t, torch.zeros(2, 1)], 1)``, or an item of a module-level dict), that
name kept by ``__init__`` (``self.act = act``), a local name ``__init__`` binds and keeps
(``f = lambda ...; self.f = f``, ``self.fs = [f]``), or ``setattr(self, "f", lambda ...)``.
The invariant: a tensor such a lambda makes on the CPU each time it runs is placed on the module's
parameters' device where that is sure to be there (as p31m's), else reported at its line
(TP504); never "0 left" with the program stopping there.

Programs are generated: the lambda's body (what it makes beside its parameter: six
factories, a drawn one and an in-place draw among them), how the module reaches it (seven
ways), and whether ``__init__`` also runs it. Oracles apart from the port: the original
on the CPU and the port on the simulated accelerator (``no_cuda_sim``): with no finding
left, the original's values on ``sim:0``; with one, a finding on the lambda's line. The
port is idempotent, and its CPU output is the original's, byte for byte.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said, same_on_the_cpu
from torchport.check.port import port_text

pytest.importorskip("torch")

BODIES = {  # what the lambda makes beside its parameter `t` (2 x 3)
    "ones": "t + torch.ones(3)",
    "full": "t * torch.full((3,), 2.0)",
    "cat": "torch.cat([t, torch.zeros(2, 1)], 1)",
    "a method": "t.add(torch.arange(3.0))",
    "drawn": "t - torch.randn(3)",
    "drawn in place": "t + torch.empty(3).uniform_()",
}
REACHED = (
    "a module-level name",
    "a module-level dict",
    "a module-level name kept",
    "a local name kept",
    "setattr",
    "setattr of a local name",
    "a local name kept in a list",
)


def _program(body: str, reached: str, run_in_init: bool) -> str:
    lam = f"lambda t: {BODIES[body]}"
    top: list[str] = []
    init: list[str] = []
    if reached == "a module-level name":
        top, callee = [f"act = {lam}"], "act"
    elif reached == "a module-level dict":
        top, callee = [f'ACTS = {{"a": {lam}}}'], 'ACTS["a"]'
    elif reached == "a module-level name kept":
        top, init, callee = [f"act = {lam}"], ["self.act = act"], "self.act"
    elif reached == "a local name kept":
        init, callee = [f"f = {lam}", "self.f = f"], "self.f"
    elif reached == "setattr":
        init, callee = [f'setattr(self, "f", {lam})'], "self.f"
    elif reached == "setattr of a local name":
        init, callee = [f"f = {lam}", 'setattr(self, "f", f)'], "self.f"
    else:
        assert reached == "a local name kept in a list"
        init, callee = [f"f = {lam}", "self.fs = [f]"], "self.fs[0]"
    if run_in_init:  # run while the module is built, too
        init.append(f"self.probe = {callee}(torch.zeros(2, 3))")
    lines = [
        "import torch",
        "from torch import nn",
        *top,
        "",
        "class Net(nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.fc = nn.Linear(4, 3)",
        *("        " + line for line in init),
        "",
        "    def forward(self, x):",
        f"        return {callee}(self.fc(x))",
        "",
        "torch.manual_seed(0)",
        "model = Net()",
        "x = torch.ones(2, 4)",
        "OUT.append(model(x).detach())",
    ]
    return "\n".join(lines) + "\n"


def _lambda_line(source: str) -> int:
    return next(i + 1 for i, line in enumerate(source.splitlines()) if "lambda t:" in line)


_CASE = st.tuples(st.sampled_from(sorted(BODIES)), st.sampled_from(REACHED), st.booleans())


# (each example is one simulated-accelerator child: a few, in the default run's budget)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_CASE, min_size=6, max_size=6))
@example(cases=[("cat", r, False) for r in REACHED])  # each way once (silent on the base)
@example(cases=[("drawn in place", r, True) for r in REACHED])
def test_a_lambda_a_module_reaches_apart_is_placed_or_said(
    cases: list[tuple[str, str, bool]],
) -> None:
    sources = [_program(*case) for case in cases]
    placed_or_said(sources)
    for source in sources:
        port = port_text(source, "p.py")
        if port.remaining:  # said: at the lambda, where the port stops
            where = _lambda_line(port.source)
            assert any(f.line == where and f.code == "TP504" for f in port.remaining), (
                source,
                port.remaining,
            )
    same_on_the_cpu(["OUT = []\n" + s for s in sources])  # (its own list here)


def test_a_module_level_lambda_only_the_builder_runs_is_left_alone() -> None:
    """Near form: run only while ``__init__`` builds the module, its tensor is made before
    ``model.to(device)`` and kept in a parameter, which the move takes along."""
    source = (
        "import torch\nfrom torch import nn\n\ninit = lambda n: torch.ones(n, 4) / 4\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(init(3))\n\n    def forward(self, x):\n"
        "        return x @ self.w.T\n\nmodel = Net()\n"
        "OUT.append(model(torch.ones(2, 4)).detach())\n"
    )
    port = port_text(source, "p.py")
    assert not [f for f in port.remaining if f.code == "TP504"], port.remaining
    placed_or_said([source])
