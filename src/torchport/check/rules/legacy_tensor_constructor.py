"""TP104 legacy-tensor-constructor: ``torch.cuda.FloatTensor(...)`` and friends."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._legacy_constructors import DTYPES, legacy_constructor, replacement


class LegacyTensorConstructor(Rule):
    """## What it does
    Finds the CUDA legacy typed constructors: `torch.cuda.FloatTensor(...)`,
    `torch.cuda.LongTensor(...)` and the rest of the family. The CPU family
    (`torch.FloatTensor(...)`), deprecated but working on every device, is
    TP903's (selected by hand).

    ## Why is this bad?
    They exist only for CUDA: the program fails on a machine without an NVIDIA
    GPU and never uses another accelerator. They are deprecated too, and take
    sizes or data depending on their arguments. `torch.tensor(data, dtype=...,
    device=...)` and `torch.empty(*sizes, dtype=..., device=...)` say what they
    do and accept any device.

    The fix is offered when the arguments are plain sizes or one list/tuple of
    data; otherwise the call is only reported. It writes `device="cuda"`,
    keeping the device the code chose (TP101 replaces it).
    """

    code = "TP104"
    name = "legacy-tensor-constructor"
    intent = Intent.DEVICE
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    message = (
        "use `torch.tensor(data, dtype=..., device=...)` or `torch.empty(*sizes, dtype=..., "
        "device=...)` instead of the CUDA-only legacy typed constructor"
    )
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    call_attrs = frozenset(DTYPES)
    valid = (
        "import torch\n\nx = torch.tensor([1.0, 2.0], dtype=torch.float32)\n",
        "import torch\n\nok = isinstance(x, torch.cuda.FloatTensor)\n",
        "import torch\n\nx = torch.FloatTensor([1, 2])\n",  # TP903's
    )
    invalid = (
        Example(
            "import torch\n\nbuf = torch.cuda.LongTensor(4, 2)\n",
            fixed='import torch\n\nbuf = torch.empty(4, 2, dtype=torch.int64, device="cuda")\n',
        ),
        Example(
            "import torch\n\nx = torch.cuda.FloatTensor([1, 2])\n",
            fixed='import torch\n\nx = torch.tensor([1, 2], dtype=torch.float32, device="cuda")\n',
        ),
        Example("import torch\n\nx = torch.cuda.FloatTensor(storage)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if legacy_constructor(node, ctx) != "torch.cuda":
            return
        yield ctx.finding(self, node, fix=replacement(node, ctx))
