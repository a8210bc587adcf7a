"""TP903 legacy-cpu-tensor-constructor: ``torch.FloatTensor(...)`` (off by default)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._legacy_constructors import DTYPES, legacy_constructor, replacement


class LegacyCpuTensorConstructor(Rule):
    """## What it does
    Finds the CPU legacy typed constructors: `torch.FloatTensor(...)`,
    `torch.LongTensor(...)` and the rest of the family (the CUDA ones,
    `torch.cuda.FloatTensor(...)`, are TP104's, on by default).

    ## Why is this bad?
    They are deprecated and take sizes or data depending on their arguments
    (`torch.FloatTensor(3)` is three uninitialized numbers, `torch.FloatTensor([3])`
    the number 3). `torch.tensor(data, dtype=...)` and `torch.empty(*sizes,
    dtype=...)` say what they do. The tensor they make is on the CPU, which is
    right on every machine, and `torch.FloatTensor(x).to(device)` moves it as
    `torch.tensor(x, dtype=..., device=device)` would: a style change, which is
    why this rule is off by default. A CPU tensor that meets device data is the
    port rules' business (TP503, TP504).

    The fix is offered when the arguments are plain sizes or one list/tuple of
    data; otherwise the call is only reported.
    """

    code = "TP903"
    name = "legacy-cpu-tensor-constructor"
    intent = Intent.DEVICE
    message = (
        "use `torch.tensor(data, dtype=...)` or `torch.empty(*sizes, dtype=...)` instead of "
        "the legacy typed constructor"
    )
    fix_safety = FixSafety.SAFE
    default = False
    node_types = (ast.Call,)
    call_attrs = frozenset(DTYPES)
    valid = (
        "import torch\n\nx = torch.tensor([1.0, 2.0], dtype=torch.float32)\n",
        "import torch\n\nok = isinstance(x, torch.FloatTensor)\n",
        "import torch\n\nbuf = torch.cuda.LongTensor(4, 2)\n",  # TP104's
    )
    invalid = (
        Example(
            "import torch\n\nx = torch.FloatTensor([1, 2])\n",
            fixed="import torch\n\nx = torch.tensor([1, 2], dtype=torch.float32)\n",
        ),
        Example(
            "import torch\n\nbuf = torch.LongTensor(4, 2)\n",
            fixed="import torch\n\nbuf = torch.empty(4, 2, dtype=torch.int64)\n",
        ),
        Example("import torch\n\nx = torch.FloatTensor(obs).to(device)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if legacy_constructor(node, ctx) != "torch":
            return
        yield ctx.finding(self, node, fix=replacement(node, ctx))
