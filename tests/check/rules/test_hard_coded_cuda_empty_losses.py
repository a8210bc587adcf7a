"""TP101 leaves ``.cuda()`` / ``.to("cuda")`` of a torch loss that holds no tensor.

``criterion = nn.CrossEntropyLoss().cuda(gpu)`` (vicreg, TSM, UniMatch, flash-fft-conv:
samples A-T, judged low (f)) moves nothing: ``Module.cuda`` moves parameters and buffers,
and the loss has none, so the line runs on every machine, with or without CUDA. Programs
are drawn: a module class (torch's losses, with and without a weight buffer, layers with
parameters, a project's own loss), the arguments it is built with (none, numbers, a weight
by keyword or by position, ``weight=None``, ``**kwargs``), how torch's name is spelled, and
the move (``.cuda()``, ``.cuda(rank)``, ``.to("cuda")``). The oracle is torch itself: the
module is built with every value the unknown names (``w``, ``kwargs``) might hold (a tensor
or None; no keywords or a weight) and the line is left alone exactly when no build that
torch accepts holds a parameter or a buffer. A project's class is never known to be empty.
"""

from __future__ import annotations

import ast
import itertools
import warnings

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

torch = pytest.importorskip("torch")

CLASSES = (
    *("CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MultiMarginLoss"),
    *("MultiLabelSoftMarginLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "KLDivLoss"),
    *("CTCLoss", "TripletMarginLoss", "MarginRankingLoss", "HuberLoss"),
    *("Linear", "BatchNorm1d", "PReLU", "CharbonnierLoss"),  # parameters, buffers, the project's
)
ARGUMENTS = (
    "",
    "reduction='sum'",
    "reduction='none'",
    "ignore_index=255",
    "weight=w",
    "w",
    "weight=None",
    "pos_weight=w",
    "**kwargs",
    "3, 3",
    "0.5",
)
SPELLINGS = {  # the import line, and how the class is then named
    "import torch.nn as nn": "nn.{}",
    "import torch": "torch.nn.{}",
    "from torch import nn": "nn.{}",
    "from torch.nn import {}": "{}",
}
MOVES = (".cuda()", ".cuda(rank)", '.to("cuda")', ".cuda(non_blocking=True)")
BINDINGS = [  # what the program's unknown names may hold
    {"w": w, "kwargs": kwargs}
    for w, kwargs in itertools.product((torch.ones(3), None), ("none", "weight"))
]


class CharbonnierLoss(torch.nn.Module):  # a project's loss: stands for any class of its own
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__()
        self.eps = torch.ones(1)  # a plain tensor attribute: the project may hold anything


def _holds_tensors(name: str, arguments: str) -> bool | None:
    """Whether some build torch accepts holds a tensor (None: no build is accepted)."""
    accepted = False
    for binding in BINDINGS:
        scope = {"w": binding["w"], "CharbonnierLoss": CharbonnierLoss}
        scope["kwargs"] = {"weight": binding["w"]} if binding["kwargs"] == "weight" else {}
        cls = scope["CharbonnierLoss"] if name == "CharbonnierLoss" else getattr(torch.nn, name)
        scope["cls"] = cls
        try:
            with warnings.catch_warnings():  # size_average/reduce given: deprecated, still built
                warnings.simplefilter("ignore")
                module = eval(f"cls({arguments})", scope)
        except (TypeError, ValueError, RuntimeError):
            continue
        accepted = True
        if name == "CharbonnierLoss" or any(True for _ in module.parameters()):
            return True
        if any(True for _ in module.buffers()):
            return True
    return False if accepted else None


@given(
    name=st.sampled_from(CLASSES),
    arguments=st.sampled_from(ARGUMENTS),
    spelling=st.sampled_from(sorted(SPELLINGS)),
    move=st.sampled_from(MOVES),
)
@example(name="CrossEntropyLoss", arguments="", spelling="import torch.nn as nn", move=".cuda()")
@example(
    name="CrossEntropyLoss", arguments="weight=w", spelling="from torch import nn", move=".cuda()"
)
@example(name="CrossEntropyLoss", arguments="**kwargs", spelling="import torch", move=".cuda(rank)")
@example(name="MSELoss", arguments="", spelling="from torch.nn import {}", move='.to("cuda")')
@example(name="CharbonnierLoss", arguments="", spelling="import torch", move=".cuda()")
def test_a_move_of_a_loss_holding_no_tensor_is_left_alone(
    name: str, arguments: str, spelling: str, move: str
) -> None:
    holds = _holds_tensors(name, arguments)
    assume(holds is not None)  # torch refuses the build: no program to judge
    imports = spelling.format(name)
    named = SPELLINGS[spelling].format(name)
    if name == "CharbonnierLoss":
        imports, named = "import torch\nfrom losses import CharbonnierLoss", name
    source = f"{imports}\n\ncriterion = {named}({arguments}){move}\n"
    ast.parse(source)
    found = check_text(source, "train.py", ruleset_for(["TP101"], None)).findings
    assert bool(found) == holds, (source, holds, found)


def test_a_loss_moved_by_name_or_elsewhere_stays_reported() -> None:
    """Only a loss built in the moved expression is known: one moved by name is followed by
    no one (it may have been given a weight far away), and a tensor's move is a move."""
    for source in (
        "import torch.nn as nn\n\ncriterion = nn.CrossEntropyLoss()\ncriterion.cuda()\n",
        "import torch\n\nx = torch.nn.functional.mse_loss(a, b).cuda()\n",
        "import torch.nn as nn\n\nm = nn.Sequential(nn.MSELoss()).cuda()\n",
        "import mylib.nn as nn\n\ncriterion = nn.MSELoss().cuda()\n",
    ):
        found = check_text(source, "train.py", ruleset_for(["TP101"], None)).findings
        assert found, source
