"""What a module's methods use that ``model.to(device)`` does not move (issue 31, x31b's set).

Three classes the held-out set found silent: a function of the file that makes a CPU
tensor a ``forward`` uses (External-Attention's CrissCrossAttention ``INF``), modules
kept in a plain list or dict attribute (mlp_mixer's ``self.mlp_blocks = []`` then
``.append(MixerBlock(...))``), and a module's own CUDA-or-CPU ``self.device`` (issue 31's
item 2: on MPS or XPU it is the CPU while the port puts the model on the accelerator).
The oracle runs the original on the CPU and the port on the simulated accelerator with no
CUDA redirect (as MPS and XPU are) in a child: a port that says nothing must run there to
the same values; one that cannot place everything must say so, naming the thing left.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import in_a_child, original_on_cpu_port_on_sim
from torchport.check.port import port_text

_HEAD = "import torch\nfrom torch import nn\n\n"
_NET = (
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "{init}"
    "    def forward(self, x):\n"
    "{forward}"
)
_USE = "torch.manual_seed(0)\nnet = Net()\nOUT.append(net(torch.ones(2, 4)).detach())\n"

# helper functions of the file whose tensors forward uses: (helper, its use in forward)
HELPERS = {
    "diag": (
        'def INF(n):\n    return -torch.diag(torch.tensor(float("inf")).repeat(n), 0)\n',
        "        return self.fc(x) + INF(4)[0].clamp(min=-1.0)\n",
    ),
    "through-a-name": (
        "def mask(n):\n    m = torch.ones(n, n)\n    return m.tril()\n",
        "        m = mask(4)\n        return self.fc(x) @ m\n",
    ),
    "every-return-a-tensor": (
        "def offset(n):\n    return torch.arange(n).float()\n",
        "        return self.fc(x) + offset(4)\n",
    ),
}
# modules in a container the module does not register: (init, forward)
HELD = {
    "list-comprehension": (
        "        self.layers = [nn.Linear(4, 4) for _ in range(2)]\n",
        "        for layer in self.layers:\n            x = layer(x)\n        return x\n",
    ),
    "append": (
        "        self.blocks = []\n        for _ in range(2):\n"
        "            self.blocks.append(nn.Linear(4, 4))\n",
        "        for block in self.blocks:\n            x = block(x)\n        return x\n",
    ),
    "dict": (
        "        self.heads = {'a': nn.Linear(4, 4)}\n",
        "        return self.heads['a'](x)\n",
    ),
}
# a module's own CUDA-or-CPU device: (its choice, its use in forward)
CHOICES = {
    "device": 'torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    "device-index": 'torch.device("cuda:0" if torch.cuda.is_available() else "cpu")',
    "string": '"cuda" if torch.cuda.is_available() else "cpu"',
}
OWN_USES = {
    "made-there": "        return self.fc(x) + torch.zeros(4, device=self.{attr})\n",
    "input-moved": "        return self.fc(x.to(self.{attr}))\n",
}


def _program(init: str, forward: str, before: str = "") -> str:
    return _HEAD + before + _NET.format(init=init, forward=forward) + _USE


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@settings(max_examples=len(HELPERS), deadline=None)
@given(st.sampled_from(sorted(HELPERS)))
def test_a_helper_s_cpu_tensor_in_forward_is_moved_or_said(form: str) -> None:
    helper, use = HELPERS[form]
    source = _program("        self.fc = nn.Linear(4, 4)\n", use, helper)
    outcome = port_text(source)
    said = [f for f in outcome.remaining if f.code == "TP504"]
    if said:  # the helper is named at its call in forward
        assert any("function of this file" in f.message for f in said), said
        assert not _runs_on_sim(source, outcome.source), outcome.source
    else:
        got = original_on_cpu_port_on_sim(source, outcome.source)
        assert got["same"] and got["devices"] == ["sim:0"], (got, outcome.source)
    if form == "every-return-a-tensor":  # moved where forward calls it
        assert "offset(4).to(x.device)" in outcome.source, outcome.source


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@settings(max_examples=len(HELD), deadline=None)
@given(st.sampled_from(sorted(HELD)))
def test_modules_in_a_plain_container_are_said(form: str) -> None:
    init, forward = HELD[form]
    source = _program(init, forward)
    outcome = port_text(source)
    said = [f for f in outcome.remaining if f.code == "TP504" and "plain" in f.message]
    assert said, outcome.remaining
    assert not _runs_on_sim(source, outcome.source)  # the oracle sees the leftover
    assert port_text(outcome.source).source == outcome.source  # idempotent


def test_registered_containers_are_not_said() -> None:
    """``nn.ModuleList``, ``nn.Sequential(*layers)`` of a local list: children, moved."""
    init = (
        "        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])\n"
        "        parts = []\n        parts.append(nn.Linear(4, 4))\n"
        "        self.tail = nn.Sequential(*parts)\n"
    )
    forward = (
        "        for layer in self.layers:\n            x = layer(x)\n        return self.tail(x)\n"
    )
    source = _program(init, forward)
    outcome = port_text(source)
    assert not outcome.remaining, outcome.remaining
    got = original_on_cpu_port_on_sim(source, outcome.source)
    assert got["same"] and got["devices"] == ["sim:0"], got


def test_a_module_s_own_cuda_or_cpu_device_is_said() -> None:
    """Every choice, use and name (few: enumerated; one child runs them all)."""
    ported = []
    for choice, use, attr in itertools.product(sorted(CHOICES), sorted(OWN_USES), _ATTRS):
        init = f"        self.{attr} = {CHOICES[choice]}\n        self.fc = nn.Linear(4, 4)\n"
        source = _program(init, OWN_USES[use].format(attr=attr))
        outcome = port_text(source)
        said = [f for f in outcome.remaining if f"`self.{attr}` is the CPU" in f.message]
        assert said, (outcome.remaining, outcome.source)
        assert port_text(outcome.source).source == outcome.source
        ported.append(outcome.source)
    assert not any(_run_on_sim(ported))  # the oracle sees each leftover


_ATTRS = ("device", "_device")


def test_a_module_s_own_device_never_read_is_not_said() -> None:
    init = (
        '        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "        self.fc = nn.Linear(4, 4)\n"
    )
    outcome = port_text(_program(init, "        return self.fc(x)\n"))
    # no leftover said of it; the CUDA-or-CPU choice itself is the port's kept choice (TP109,
    # as `check` reports it), though nothing reads it (left: benchmarks/RESULTS.md, n31w)
    assert [f.code for f in outcome.remaining] == ["TP109"], outcome.remaining


_CHILD = """
import json, sys
from torchport.testing import simulate_accelerator
programs = json.loads(open(sys.argv[1]).read())
simulate_accelerator()
ran = []
for ported in programs:
    try:
        exec(compile(ported, "<program>", "exec"), {"OUT": [], "__name__": "__main__"})
    except Exception:
        ran.append(False)
    else:
        ran.append(True)
print(json.dumps(ran))
"""


def _runs_on_sim(original: str, ported: str) -> bool:
    """Whether the port runs to its end on the simulated accelerator (no CUDA redirect)."""
    return _run_on_sim([ported])[0]


def _run_on_sim(programs: list[str]) -> list[bool]:
    """Whether each ported program runs to its end on ``sim``, all in one child."""
    ran: list[bool] = in_a_child(_CHILD, programs)
    return ran
