"""Side computations: a tensor made and computed with, meeting no model (h31af's fv-12).

The invariant (``torchport.check.port._side_computations``): in a program the port gives a
device, a tensor made by a torch factory (or a helper returning one) and computed with in torch
ops is placed on the device by the port, or named by a TP503 finding ("meets no model ...
possibly deliberate"), never neither; what must stay on the CPU stays there, unreported.

The generator draws the tensor's maker (a literal, ``torch.arange``, ``randn`` under the run's
seed, ``from_numpy``, a helper returning a tensor), the computation (a torch function, operators,
methods, a second tensor made beside it), named or inline, where its result goes (``print``:
placed; ``OUT.append``, a function of the program: reported), the model or loss beside it, and
the order. The oracle (``no_cuda_sim.placed_or_said``, ``printed``: a printed tensor is an output
too) runs the original on the CPU and the port on the simulated accelerator: every output on
``sim:0`` with the same values, or a finding left. Near forms (``.numpy()``, ``.tolist()``,
``.item()``, indexing a list, ``pack_padded_sequence``'s lengths, a dataset, ``.cpu()``, a
module's ``__init__``, a program with no model) keep the tensor where it is, unreported.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said
from torchport.check.port import port_text

_IMPORTS = "import numpy as np\nimport torch\nimport torch.nn as nn\n\n"
_BESIDE = {
    "a loss": "loss = nn.CrossEntropyLoss()\ntarget = torch.tensor([0])\n"
    "scores = torch.tensor([[2.0, 1.0, 0.1]])\nOUT.append(loss(scores, target))\n",
    "a model": "model = nn.Linear(3, 2)\nOUT.append(model(torch.ones(1, 3)))\n",
}
_MAKERS = {  # (definitions, the expression making the tensor: three floats)
    "a literal": ("", "torch.tensor([2.0, 1.0, 1.0])"),
    "arange": ("", "torch.arange(3).float()"),
    "randn": ("", "torch.randn(3)"),
    "from_numpy": ("", "torch.from_numpy(np.array([1.0, 2.0, 3.0]))"),
    "a helper": ("def make():\n    return torch.tensor([1.0, 2.0, 3.0])\n\n\n", "make()"),
}
_OPS = (
    "torch.softmax({x}, dim=0)",
    "{x} * 2 + 1",
    "{x}.exp().sum()",
    "torch.cumsum({x}, 0) - {x}.mean()",
    "{x} + torch.ones(3)",
)
_SINKS = {  # where the result goes, and whether the port places it (else: reports it)
    "print": ("print({y})\n", True),
    "OUT.append": ("OUT.append({y})\n", False),
    "a function": ("def show(t):\n    OUT.append(t)\n\n\nshow({y})\n", False),
}


def _program(beside: str, maker: str, op: str, named: bool, sink: str, first: bool) -> str:
    defs, made = _MAKERS[maker]
    if named:
        side = f"x = {made}\ny = {op.format(x='x')}\n{_SINKS[sink][0].format(y='y')}"
    else:
        side = _SINKS[sink][0].format(y=op.format(x=made))
    model = _BESIDE[beside]
    return _IMPORTS + defs + (side + model if first else model + side)


@pytest.mark.slow  # a simulated-accelerator child per example: the slow leg draws 20
@settings(max_examples=20, deadline=None)
@given(
    st.sampled_from(sorted(_BESIDE)),
    st.sampled_from(sorted(_MAKERS)),
    st.sampled_from(_OPS),
    st.booleans(),
    st.sampled_from(sorted(_SINKS)),
    st.booleans(),
)
def test_a_side_computation_is_placed_or_said(
    beside: str, maker: str, op: str, named: bool, sink: str, first: bool
) -> None:
    source = _program(beside, maker, op, named, sink, first)
    outcome = port_text(source, "side.py")
    said = [f for f in outcome.remaining if "meets no model" in f.message]
    if _SINKS[sink][1]:  # placed: nothing left, the maker written on the device
        assert not outcome.remaining, (source, outcome.remaining)
    else:
        assert said, (source, outcome.source)
    placed_or_said([source], printed=True)


@pytest.mark.slow  # 250 programs, ported twice each, in one child (about 45 s on 2 cores)
def test_every_side_computation_is_placed_or_said() -> None:
    """The whole table in one child (the test above draws from it)."""
    sources = [
        _program(beside, maker, op, named, sink, first)
        for beside in _BESIDE
        for maker in _MAKERS
        for op in _OPS
        for named in (False, True)
        for sink in _SINKS
        for first in (False, True)
        if (named or sink != "a function") and first == (maker != "randn")
    ]
    placed_or_said(sources, printed=True)


def test_each_maker_op_and_sink_is_placed_or_said() -> None:
    """The default run's slice of the table, in one child: each maker with each sink, each
    operation once, beside a loss and beside a model (the slow leg runs the whole table)."""
    sources = [
        _program(beside, maker, op, True, sink, False)
        for beside in _BESIDE
        for i, maker in enumerate(sorted(_MAKERS))
        for sink in _SINKS
        for op in (_OPS[i % len(_OPS)],)
    ]
    for source in sources:
        outcome = port_text(source, "side.py")
        placed = "print(y)" in source
        said = [f for f in outcome.remaining if "meets no model" in f.message]
        assert (not outcome.remaining) if placed else bool(said), (source, outcome.remaining)
    placed_or_said(sources, printed=True)


_NEAR = {  # the tensor (made at the line holding `MADE`) must stay on the CPU, unreported
    ".numpy()": "x = torch.tensor([2.0, 1.0])  # MADE\nprint(torch.softmax(x, 0).numpy())\n",
    ".tolist()": "x = torch.arange(3)  # MADE\nv = (x * 2).tolist()\nprint(v)\n",
    ".item()": "x = torch.randn(3)  # MADE\nprint((x * 2).sum().item())\n",
    "float()": "x = torch.tensor([2.0, 1.0])  # MADE\nprint(float(x.sum()))\n",
    "indexing a list": 'x = torch.arange(3)  # MADE\nnames = ["a", "b", "c"]\n'
    "print(names[(x * 2).argmax()])\n",
    "a Python if": "x = torch.tensor([2.0, 1.0])  # MADE\n"
    "if (x * 2).sum() > 0:\n    print('yes')\n",
    ".cpu()": "x = torch.tensor([2.0, 1.0])  # MADE\nprint(x.cpu() * 2)\n",
    "a dataset": "x = torch.arange(6).float()  # MADE\n"
    "ds = torch.utils.data.TensorDataset(x * 2)\nprint(len(ds))\n",
    "numpy": "x = torch.tensor([2.0, 1.0])  # MADE\nprint(np.asarray(x * 2).sum())\n",
    "pack_padded_sequence": "lengths = torch.tensor([2, 1])  # MADE\n"
    "packed = nn.utils.rnn.pack_padded_sequence(torch.ones(2, 2, 3), lengths * 1, "
    "batch_first=True)\nOUT.append(nn.RNN(3, 4, batch_first=True)(packed)[1])\n",
    "a module's __init__": "class Net(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n"
    '        self.register_buffer("w", torch.softmax(torch.ones(3), 0))  # MADE\n\n'
    "    def forward(self, v):\n        return v * self.w\n\n\n"
    "net = Net()\nOUT.append(net(torch.ones(3)))\n",
    "only printed": "x = torch.tensor([2.0, 1.0])  # MADE\nprint(x)\n",
}


def test_near_forms_stay_on_the_cpu_unreported() -> None:
    sources = []
    for name, side in _NEAR.items():
        for beside in _BESIDE.values():
            source = _IMPORTS + beside + side
            made = next(i for i, t in enumerate(source.splitlines(), 1) if "# MADE" in t)
            outcome = port_text(source, "near.py")
            assert source.splitlines()[made - 1] in outcome.source.splitlines(), (
                name,
                outcome.source,
            )
            assert not [f for f in outcome.remaining if "meets no model" in f.message], name
            sources.append(source)
    placed_or_said(sources)


def test_a_program_with_no_model_is_left_as_it_is() -> None:
    """No model, no loss: the port gives it no device (it says so as a whole), so a side
    computation there is neither placed nor reported on its own."""
    for _, made in _MAKERS.values():
        if "make" in made:
            continue
        source = _IMPORTS + f"x = {made}\nprint(torch.softmax(x, 0))\n"
        outcome = port_text(source, "alone.py")
        assert outcome.source == source
        assert not [f for f in outcome.remaining if f.code == "TP503"]
