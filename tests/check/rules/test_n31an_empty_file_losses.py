"""A move of a loss class of the file that holds no tensor: no TP101 (issue 31 item 5, n31an).

Sample AJ row 21: ``cross_entropy_loss_with_soft_target().cuda(args.gpu)``, a class of the
file deriving torch's ``_Loss`` with a ``forward`` only: ``Module.cuda`` moves parameters and
buffers, it has none, so the move moves nothing and runs on any machine; TP101 said "use one
`device` chosen from `torch.accelerator`" (``moves_nothing`` knew torch's own losses only).
Now a class of the file whose every base is ``_Loss`` or a torch loss that holds nothing, and
whose body stores only constants on ``self`` and registers nothing, holds nothing too
(``rules/_empty_losses``).

The oracle is apart from the rule: the class is built on the CPU and asked for its
parameters, buffers and submodules. Where the rule leaves the move alone, the built loss holds
nothing (never a move that moves something left unsaid); the forms empty by construction are
left alone; the near misses (a tensor, a parameter, a buffer, a submodule, an argument stored,
a weighted base) keep TP101.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from torchport.check import check_source  # noqa: E402

_HEAD = """import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.loss import _Loss, _WeightedLoss

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args([])


"""
BASES = {  # (the base, holds nothing by itself)
    "_Loss": ("_Loss", True),
    "nn.MSELoss": ("nn.MSELoss", True),
    "torch.nn.modules.loss._Loss": ("torch.nn.modules.loss._Loss", True),
    "_WeightedLoss": ("_WeightedLoss", False),  # a `weight` buffer, None or not
}
INITS = {  # (an __init__, or none; holds nothing by construction)
    "none": ("", True),
    "constants": (
        "    def __init__(self):\n        super().__init__(reduction='mean')\n"
        "        self.eps = 1e-6\n        self.name = 'soft'\n",
        True,
    ),
    "a tensor": (
        "    def __init__(self):\n        super().__init__()\n        self.w = torch.ones(3)\n",
        False,
    ),
    "a parameter": (
        "    def __init__(self):\n        super().__init__()\n"
        "        self.t = nn.Parameter(torch.ones(1))\n",
        False,
    ),
    "a buffer": (
        "    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('w', torch.ones(3))\n",
        False,
    ),
    "a submodule": (
        "    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(3, 3)\n",
        False,
    ),
    "an argument": (
        "    def __init__(self, weight=None):\n        super().__init__()\n"
        "        self.weight = weight\n",
        True,  # None here: the rule cannot tell (a caller may give a tensor), so it reports
    ),
}
_FORWARD = (
    "    def forward(self, output, target):\n        target = F.softmax(target, dim=1)\n"
    "        return torch.mean(torch.sum(-target * F.log_softmax(output, dim=1), 1))\n"
)
MOVES = {"cuda(args.gpu)": ".cuda(args.gpu)", "cuda()": ".cuda()", "to('cuda')": ".to('cuda')"}


def _program(base: str, init: str, move: str) -> str:
    body = INITS[init][0] + ("\n" if INITS[init][0] else "") + _FORWARD
    return (
        _HEAD
        + f"class soft_target_loss({BASES[base][0]}):\n{body}\n\n"
        + f"criterion = soft_target_loss(){MOVES[move]}\n"
    )


def _holds_nothing(program: str) -> bool:
    """The oracle: build the loss on the CPU (the move left out) and ask it."""
    built = program.rpartition("criterion = ")[0] + "criterion = soft_target_loss()\n"
    scope: dict[str, object] = {"__name__": "prog"}
    exec(compile(built, "<prog>", "exec"), scope)
    loss = scope["criterion"]
    assert isinstance(loss, torch.nn.Module)
    return not (list(loss.parameters()) or list(loss.buffers()) or list(loss.children()))


@settings(max_examples=30, deadline=None)
@example(base="_Loss", init="none", move="cuda(args.gpu)")  # sample AJ row 21's form
@example(base="_Loss", init="a buffer", move="to('cuda')")
@given(
    base=st.sampled_from(sorted(BASES)),
    init=st.sampled_from(sorted(INITS)),
    move=st.sampled_from(sorted(MOVES)),
)
def test_a_move_of_a_file_loss_that_holds_nothing_is_left_alone(
    base: str, init: str, move: str
) -> None:
    program = _program(base, init, move)
    line = program.count("\n")
    said = [f for f in check_source(program, select=["TP101"]) if f.line == line]
    empty = BASES[base][1] and INITS[init][1] and init != "an argument"
    if not said:  # never a move that moves something left unsaid
        assert _holds_nothing(program), program
    assert bool(said) != empty, (program, said)


def test_every_form_once() -> None:
    """Each base and __init__ once (the draws above are few)."""
    for base in BASES:
        for init in INITS:
            program = _program(base, init, "cuda(args.gpu)")
            said = bool(check_source(program, select=["TP101"]))
            empty = BASES[base][1] and INITS[init][1] and init != "an argument"
            assert said != empty, (program, said)
            assert said or _holds_nothing(program), program
