"""TP106 create-then-move: ``torch.zeros(...).to(device)`` instead of creating on the device."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._factory_moves import created_then_moved
from torchport.check.rules._once import runs_once


class CreateThenMove(Rule):
    """## What it does
    Finds tensors created on the CPU and moved right away:
    `torch.zeros(n).to(device)`, `torch.randn(n).cuda()`.

    ## Why is this bad?
    The tensor is filled on the CPU, then copied to the device: one allocation,
    one fill and one host-to-device copy too many, and a synchronization on
    some backends. Pass `device=` to the factory and the tensor is made where
    it is used. Random tensors drawn with a `generator=` are left alone: a CPU
    generator (same numbers on every device) needs a CPU tensor. Data
    factories (`torch.tensor(values).to(device)`, `torch.as_tensor(array)`)
    are left alone too: their values are on the host, so they cross to the
    device either way, and passing `device=` saves no copy; so are tensors
    with a literal 0 among their sizes (`torch.empty((n, 0))`: nothing to copy).

    Only copies that repeat are reported: in a loop or a comprehension, or in a
    function (a `forward`, a `training_step`, a `collate_fn`, one called per
    batch, or any whose callers the file does not show). A tensor made once is
    TP905's (selected by hand): a module's own statements outside loops, a
    function a script calls only from its top level (`if __name__ ==
    "__main__": check()`), a value kept on the object that makes it (`if not
    hasattr(self, "queue"): self.queue = ...`), what builds an `nn.Module`
    (its `__init__`) or a class that owns a model (an agent or a trainer whose
    `__init__` builds an optimizer or loads weights, not made in a loop), a
    fallback under `if torch.isnan(k).any():`, a gradient check (a function
    calling `gradcheck`) outside its loops, test code outside its loops (any
    function in a `tests` folder, a `test*` one in a pytest file: inputs made
    once per test run): a one-off copy saves nothing that matters.

    ## Fix safety
    Safe for deterministic factories (`zeros`, `ones`, `full`, `arange`,
    `eye`...). Unsafe for random ones (`randn`, `rand`, `randint`...): the
    device's generator draws different numbers from the CPU's, so seeded
    results change. `.cuda()` becomes `device="cuda"`: the fix keeps the
    device the code chose (replacing CUDA is TP101's job, and a
    `# noqa: TP101` keeps it).
    """

    code = "TP106"
    name = "create-then-move"
    intent = Intent.SPEED
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    message = "pass `device=` to the factory to create the tensor where it is used, not move it"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = frozenset({"to", "cuda"})
    valid = (
        "x = torch.zeros(3, device=device)\n",
        "x = torch.zeros(3).to(torch.float16)\n",
        "import torch\n\nz = torch.randn(4, generator=torch.Generator().manual_seed(0)).to(dev)\n",
        'x = torch.zeros(3).to("cpu")\n',
        "import torch\n\nx = torch.tensor(values, dtype=torch.long).to(device)\n",
        "import torch\n\nx = torch.as_tensor(array).cuda()\n",
        "import torch\n\nctx = torch.empty((n, 0)).to(z.device)\n",
        "import torch\n\n\ndef check():\n    w = torch.randn(3, 3).cuda()\n\n\n"
        'if __name__ == "__main__":\n    check()\n',
        "import torch\n\n\nclass Pool:\n    def add(self, x):\n        if self.buf is None:\n"
        "            self.buf = torch.zeros(64, 3).cuda()\n",
        "import torch\n\nmask = torch.ones(4, 4).to(device)\n",  # made once: TP905's
        "import torch\n\n\nclass Agent:\n    def __init__(self, net):\n"
        "        self.support = torch.linspace(0, 1, 51).to(device)\n"
        "        self.opt = torch.optim.Adam(net.parameters())\n",
    )
    invalid = (
        Example(
            "import torch\n\n\ndef mask(device):\n    return torch.ones(4, 4).to(device)\n",
            fixed="import torch\n\n\ndef mask(device):\n"
            "    return torch.ones(4, 4, device=device)\n",
        ),
        Example(
            "import torch\n\nfor batch in loader:\n"
            "    noise = torch.randn(8).cuda()\n    idx = torch.arange(8,).to(dev)\n",
            fixed="import torch\n\nfor batch in loader:\n"
            '    noise = torch.randn(8, device="cuda")\n'
            "    idx = torch.arange(8, device=dev,)\n",
            count=2,
        ),
        Example(  # the script calls it in a loop: a copy per iteration
            "import torch\n\n\ndef step():\n    return torch.zeros(3).to(device)\n\n\n"
            'if __name__ == "__main__":\n    for _ in range(9):\n        step()\n',
            fixed="import torch\n\n\ndef step():\n    return torch.zeros(3, device=device)\n\n\n"
            'if __name__ == "__main__":\n    for _ in range(9):\n        step()\n',
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        fix = created_then_moved(node, ctx)
        if fix is not None and not runs_once(node, ctx):  # once: TP905's (selected by hand)
            yield ctx.finding(self, node, fix=fix)
