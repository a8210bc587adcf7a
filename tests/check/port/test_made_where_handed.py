"""TP504's noise classes of t34an's judged sample (issue 31 item 5, w31an).

Invariants: a creator whose result is made where a tensor it is handed is (``out=``,
``torch.normal`` with no size, ``torch.bernoulli``) makes nothing on the CPU when that
tensor is a device value: TP504 does not report it, as it does not report ``x * 2``. A
tensor operand made on the CPU is reported where it is made, so a removed report never
turns into a silent leftover. Modules of a plain list the class registers by another
means (``nn.ModuleList(self.layers)``, ``self.add_module`` in a loop over it) are children.

The oracle (:mod:`tests.check.port.no_cuda_sim`) runs the original on the CPU and the
port on the simulated accelerator with no CUDA redirect: each port leaves a finding, or
computes the original's values with every output on ``sim:0``.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import originals_on_cpu_ports_on_sim, placed_or_said
from torchport.check import check_source
from torchport.check.port import port_text

_HEAD = "import torch\nfrom torch import nn\n\n"
_INIT = (
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(4, 4)\n"
    "        self.register_buffer('buf', torch.zeros(4))\n"
    "        self.mu = torch.zeros(4)\n"
    "        self.tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.Tensor\n"
    "    def forward(self, x):\n"
    "        h = self.fc(x)\n"
)
_USE = "net = Net()\nOUT.append(net(torch.ones(2, 4)).detach())\n"

# made where a device value it is handed is: TP504 says nothing (draws zeroed: values)
FOLLOWS = (
    "torch.normal(h, 1.0) * 0",
    "torch.normal(mean=h, std=h.new_full(h.shape, 0.1)) * 0",
    "torch.normal(h, torch.ones_like(h)) * 0",
    "torch.bernoulli(torch.sigmoid(h)) * 0",
    "torch.bernoulli(h.sigmoid(), 0.5) * 0",
    "torch.arange(0, 4, out=h.new_empty(0))",
    "torch.ones(4, out=self.buf.new_empty(4))",
    "torch.arange(0, 4, out=torch.empty_like(h[0]))",
)
# a CPU operand or `out=`, or a draw with a size: said or placed, never silent
CPU_MADE = (
    "torch.normal(torch.zeros(4), 1.0) * 0",
    "torch.normal(self.mu, 1.0) * 0",
    "torch.normal(0.0, 1.0, size=(4,)) * 0",
    "torch.bernoulli(torch.full((4,), 0.5)) * 0",
    "torch.arange(0, 4, out=torch.empty(0))",
    "torch.arange(0, 4, out=torch.LongTensor(4))",
    "torch.arange(0, 4, out=self.tensor())",
)


def _program(terms: list[str]) -> str:
    body = "".join(f"        t{i} = {t}\n" for i, t in enumerate(terms))
    total = " + ".join(["h", *(f"t{i}" for i in range(len(terms)))])
    return _HEAD + _INIT + body + f"        return {total}\n" + _USE


def _lines(source: str, terms: list[str]) -> set[int]:
    lines = source.splitlines()
    return {lines.index(f"        t{i} = {t}") + 1 for i, t in enumerate(terms)}


def test_followers_are_not_reported() -> None:
    source = _program(list(FOLLOWS))
    found = check_source(source, "net.py", select=["TP504"])
    assert not [f for f in found if f.line in _lines(source, list(FOLLOWS))], found


def test_cpu_operands_are_still_reported() -> None:
    source = _program(list(CPU_MADE))
    said = {f.line for f in check_source(source, "net.py", select=["TP504"])}
    lines = source.splitlines()
    for i, term in enumerate(CPU_MADE):  # the CPU tensor's own creation, or the call
        assert lines.index(f"        t{i} = {term}") + 1 in said or "self.mu" in term, term
    assert lines.index("        self.mu = torch.zeros(4)") + 1 in said  # kept apart


@settings(max_examples=4, deadline=None)
@given(
    st.lists(st.sampled_from(FOLLOWS), min_size=1, max_size=3, unique=True),
    st.lists(st.sampled_from(CPU_MADE), max_size=2, unique=True),
)
def test_ports_place_or_say(follows: list[str], cpu: list[str]) -> None:
    """Followers beside CPU operands: the port places each or says so (one child)."""
    placed_or_said([_program(follows + cpu)])


_LIST = (
    "        self.layers = [nn.Linear(4, 4) for _ in range(2)]\n",
    "        self.layers = []\n        for _ in range(2):\n"
    "            self.layers.append(nn.Linear(4, 4))\n",
)
_REGISTERS = (
    "        self.children_ = nn.ModuleList(self.layers)\n",
    "        self.seq = nn.Sequential(*self.layers)\n",
    "        for i, layer in enumerate(self.layers):\n"
    "            self.add_module(f'layer{i}', layer)\n",
)


def test_module_lists_registered_otherwise_are_children() -> None:
    """Each plain list with each other registration: no report, and the port's run on
    ``sim`` computes the original's values (the oracle sees the modules moved)."""
    pairs = []
    for made in _LIST:
        for registers in _REGISTERS:
            init = _INIT.replace("    def forward", made + registers + "    def forward")
            forward = "        for layer in self.layers:\n            h = layer(h)\n"
            source = _HEAD + init + forward + "        return h\n" + _USE
            outcome = port_text(source)
            assert not [f for f in outcome.remaining if "plain" in f.message], outcome.remaining
            pairs.append((source, outcome.source))
    for got, pair in zip(originals_on_cpu_ports_on_sim(pairs), pairs, strict=True):
        assert got["same"] and got["devices"] == ["sim:0"], (got, pair[1])
