"""TP905 create-then-move-once: TP106's pattern where it runs once a run (off by default)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._factory_moves import created_then_moved
from torchport.check.rules._once import runs_once


class CreateThenMoveOnce(Rule):
    """## What it does
    Finds what TP106 (create-then-move) finds, `torch.zeros(n).to(device)`,
    where it runs once a run: a module's own statements outside loops, a
    function a script calls only from its top level (`if __name__ ==
    "__main__": check()`), a value an object makes on first use and keeps
    (`if not hasattr(self, "queue"): self.queue = ...`), an `nn.Module`'s
    `__init__` or that of a class owning a model (an agent whose `__init__`
    builds an optimizer), a fallback under `if torch.isnan(k).any():`, a
    gradient check (`gradcheck(...)`) outside its loops. TP106 reports the
    same pattern where the copy repeats (in a loop, in a function).

    ## Why is this bad?
    The tensor is filled on the CPU and copied to the device, where `device=`
    would make it there. Once a run this costs one small copy and changes
    nothing that matters, which is why this rule is off by default; turn it on
    (`extend-select = ["TP905"]`) to write every such tensor the same way.

    ## Fix safety
    As TP106's: safe for deterministic factories (`zeros`, `ones`, `full`,
    `arange`...), unsafe for random ones (`randn`, `rand`...), whose numbers
    the device's generator draws differently from the CPU's.
    """

    code = "TP905"
    name = "create-then-move-once"
    intent = Intent.SPEED
    message = (
        "pass `device=` to the factory to create the tensor where it is used "
        "(made once: a one-off copy)"
    )
    fix_safety = FixSafety.UNSAFE
    default = False
    node_types = (ast.Call,)
    call_attrs = frozenset({"to", "cuda"})
    valid = (
        "import torch\n\nmask = torch.ones(4, 4, device=device)\n",
        "import torch\n\nfor batch in loader:\n    noise = torch.randn(8).cuda()\n",  # TP106's
        "import torch\n\n\ndef mask(device):\n    return torch.ones(4, 4).to(device)\n",  # TP106's
        "import torch\n\nx = torch.tensor(values).to(device)\n",  # host data: no copy saved
    )
    invalid = (
        Example(
            "import torch\n\nmask = torch.ones(4, 4).to(device)\n",
            fixed="import torch\n\nmask = torch.ones(4, 4, device=device)\n",
        ),
        Example(
            "import torch\n\n\ndef check():\n    w = torch.randn(3, 3).cuda()\n\n\n"
            'if __name__ == "__main__":\n    check()\n',
            fixed="import torch\n\n\ndef check():\n"
            '    w = torch.randn(3, 3, device="cuda")\n\n\n'
            'if __name__ == "__main__":\n    check()\n',
        ),
        Example(
            "import torch\n\n\nclass Pool:\n    def add(self, x):\n        if self.buf is None:\n"
            "            self.buf = torch.zeros(64, 3).cuda()\n",
            fixed="import torch\n\n\nclass Pool:\n    def add(self, x):\n"
            "        if self.buf is None:\n"
            '            self.buf = torch.zeros(64, 3, device="cuda")\n',
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        fix = created_then_moved(node, ctx)
        if fix is not None and runs_once(node, ctx):  # repeated: TP106's, on by default
            yield ctx.finding(self, node, fix=fix)
