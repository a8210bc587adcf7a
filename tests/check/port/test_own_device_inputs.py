"""A network of another module whose forward moves its own input (issue 31, item 5).

Gregory-Eales/ml-implementations (n31g's sample, its largest class left): the algorithm
module hands buffers and states to a network of ``q_network.py`` whose forward moves its
input itself, and the port reported each handed value (TP520/TP523). Here a network that
moves its input to its own parameters' device (``x.to(next(self.parameters()).device)``,
a ``device`` property returning that, the keyword form) takes what it is handed: nothing
to move at the call. A network that does not move its input, or moves it to a device it
chose apart from its weights (``self.device = torch.device("cuda" if ... else "cpu")``,
``.cuda()`` under ``torch.cuda.is_available()``), keeps the finding. The oracle is each
ported project run to its end on the simulated accelerator (no CUDA redirect, as on MPS
or XPU): the CPU's values where nothing is left, a failure where the finding stays.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check import port_paths

HERE = Path(__file__).parent
project_fuzz = load("project_fuzz_for_own_device", HERE / "test_project_fuzz.py")

# how the network's forward treats its input: moves it to its weights' device, or not
MOVES = {
    "parameters": "        x = x.to(next(self.parameters()).device)\n",
    "keyword": "        x = x.to(device=next(self.parameters()).device)\n",
    "property": "        x = x.to(self.device)\n",
    "buffers": "        x = x.to(next(self.buffers()).device)\n",
}
STAYS = {
    "none": "",
    "own_choice": "        x = x.to(self.device)\n",
    "cuda_flag": "        if torch.cuda.is_available():\n            x = x.cuda()\n",
}


def network(forward: str, tail: str) -> str:
    """``Net``: a linear layer; ``forward`` says how it treats its input."""
    head = (
        "import torch\n\n\nclass Net(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.l1 = torch.nn.Linear(4, 2)\n"
        "        self.register_buffer('scale', torch.ones(2))\n"
    )
    if forward == "own_choice":
        head += (
            "        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "        self.to(self.device)\n"
        )
    if forward == "property":
        head += (
            "\n    @property\n    def device(self):\n"
            "        return next(self.parameters()).device\n"
        )
    body = MOVES.get(forward) or STAYS[forward]
    return head + "\n    def forward(self, x):\n" + body + f"        return {tail}\n"


def project(
    forward: str, tail: str, call: str, spelled: str, values: list[float]
) -> dict[str, str]:
    """``train.py`` hands numpy-made tensors to ``Agent.act`` of ``agent.py``, whose callers
    the port of ``agent.py`` cannot see: ``act`` hands them to the network of ``net.py``."""
    agent = (
        f"import torch\n{spelled}\n\n\nclass Agent:\n"
        "    def __init__(self):\n        self.net = Net()\n\n"
        f"    def act(self, s):\n        return {call}.detach()\n"
    )
    train = (
        "import numpy as np\nimport torch\n\nfrom pkg.agent import Agent\n\n"
        "torch.manual_seed(0)\nagent = Agent()\n"
        f"for v in {values!r}:\n"
        "    s = np.full((3, 4), v, dtype=np.float32)\n"
        "    OUT.append(agent.act(torch.from_numpy(s)).sum().item())\n"
    )
    return {
        "train.py": train,
        "pkg/__init__.py": "",
        "pkg/net.py": network(forward, tail),
        "pkg/agent.py": agent,
    }


cases = st.tuples(
    st.sampled_from([*MOVES, *STAYS]),
    st.sampled_from(["self.l1(x)", "torch.relu(self.l1(x)) * self.scale"]),
    st.sampled_from(["self.net(s)", "self.net.forward(s)"]),
    st.sampled_from(["from .net import Net", "from pkg.net import Net"]),
    st.lists(st.floats(-2, 2, allow_nan=False, width=32), min_size=1, max_size=3),
)


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(cases, min_size=2, max_size=5))
def test_what_a_network_of_another_module_moves_itself_is_no_value_to_move(
    drawn: list[tuple[str, str, str, str, list[float]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ported: dict[str, tuple[str, list[Any], list[str]]] = {}
        for i, (forward, tail, call, spelled, values) in enumerate(drawn):
            root = Path(tmp) / f"n{i}"
            project_fuzz._write(root, project(forward, tail, call, spelled, values))
            before, _ = project_fuzz._run(root, meta=False)
            assert not isinstance(before, BaseException), before
            result = port_paths([root], jobs=1)
            assert not result.errors, result.errors
            again = port_paths([root], jobs=1)
            assert not again.changed, "the port is not idempotent"
            after, _ = project_fuzz._run(root, meta=False)
            assert after == before, (forward, before, after)  # the CPU's values, ported
            left = [str(f) for f in result.remaining if "agent.py" in str(f.path)]
            ported[str(root)] = (forward, before, left)
        ran = project_fuzz._sim_runs(list(ported))
    for root, (forward, before, left) in ported.items():
        got = ran[root]
        if forward in MOVES:
            assert project_fuzz._same(got, before), (forward, got)
            assert left == [], (forward, left)
        else:  # the handed tensor stays on the CPU: the run stops there, and it is said
            assert "error" in got, (forward, got)
            assert any("`s`" in f for f in left), (forward, left)
