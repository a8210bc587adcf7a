"""TP402 cuda-manual-seed: ``torch.cuda.manual_seed(_all)``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._test_code import cuda_is_the_subject

_SEEDS = ("torch.cuda.manual_seed", "torch.cuda.manual_seed_all")
_TAILS = frozenset(s.rsplit(".", 1)[1] for s in _SEEDS)


class CudaManualSeed(Rule):
    """## What it does
    Finds `torch.cuda.manual_seed(...)` and `torch.cuda.manual_seed_all(...)`.

    ## Why is this bad?
    They seed only CUDA generators, so a run on MPS, XPU or the CPU is not
    reproducible. `torch.manual_seed(seed)` seeds the CPU and every
    accelerator's generator.

    Not reported after `torch.manual_seed(...)` ran, in the same function (or at the
    top level), earlier in the same block or before a statement that holds the call
    (such as `if torch.cuda.is_available():`), however far above: every device is
    seeded already, the CUDA call is a leftover that does no harm.

    ## Fix safety
    `torch.manual_seed` also reseeds the CPU generator at that point; if CPU
    random numbers were drawn since the last CPU seeding, the ones drawn after
    this line change.
    """

    code = "TP402"
    name = "cuda-manual-seed"
    intent = Intent.DEVICE
    message = "call `torch.manual_seed(seed)`, which seeds every device, not the CUDA-only seed"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = _TAILS
    valid = (
        "import torch\n\ntorch.manual_seed(0)\n",
        "import torch\n\ndef seed(s):\n    torch.manual_seed(s)\n"
        "    torch.cuda.manual_seed_all(s)\n",
        "import torch\n\ndef seed(s):\n    torch.manual_seed(s)\n    random.seed(s)\n"
        "    if torch.cuda.is_available():\n        torch.cuda.manual_seed_all(s)\n",
        "import torch\n\ntorch.manual_seed(1)\n" + "x = 1\n" * 6 + "if ngpu:\n"
        "    net.cuda()\n    torch.cuda.manual_seed(1)\n",
    )
    invalid = (
        Example(
            "import random\nimport torch\n\nrandom.seed(0)\ntorch.cuda.manual_seed_all(0)\n",
            fixed="import random\nimport torch\n\nrandom.seed(0)\ntorch.manual_seed(0)\n",
        ),
        Example(
            "from torch.cuda import manual_seed\n\nmanual_seed(seed)\n",
            fixed="import torch\nfrom torch.cuda import manual_seed\n\ntorch.manual_seed(seed)\n",
        ),
        Example(  # seeded in another function: not before this call on every path
            "import torch\n\ndef cpu(s):\n    torch.manual_seed(s)\n    def gpu(s):\n"
            "        torch.cuda.manual_seed(s)\n",
            fixed="import torch\n\ndef cpu(s):\n    torch.manual_seed(s)\n    def gpu(s):\n"
            "        torch.manual_seed(s)\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _TAILS) not in _SEEDS or _seeded_before(ctx):
            return  # `torch.manual_seed(s)` before already seeds every device
        if cuda_is_the_subject(node, ctx):
            return  # a test of the CUDA generator, or gated on CUDA (`_test_code`)
        torch = ctx.torch_at(node)
        if torch is None:
            yield ctx.finding(self, node)  # torch is optional here: no `import torch` to add
            return
        edit = ctx.replace(node.func, f"{torch[0]}.manual_seed")
        yield ctx.finding(self, node, fix=Fix((edit, *torch[1]), FixSafety.UNSAFE, _RESEEDS))


_RESEEDS = (
    "also reseeds the CPU generator: CPU random numbers drawn after this line "
    "(initial weights, shuffling, dropout on the CPU) change"
)


def _seeded_before(ctx: Context) -> bool:
    """Whether a statement before this one, or before a statement that holds it in the same
    function (``if torch.cuda.is_available():`` after the seeding), seeds every device: that
    seeding runs first on every path to this call. Any distance above: outlier-exposure's
    ``oe_scratch.py`` seeds at line 47 and adds ``torch.cuda.manual_seed(1)`` under ``if
    args.ngpu > 0:`` at line 103 (sample U, judged noise); a seeding inside a branch or loop
    before it (not on every path) does not count.
    """
    for stmt in reversed(ctx.ancestors):
        if isinstance(stmt, _SCOPES):
            return False  # what comes before a definition runs in another scope, at another time
        if not isinstance(stmt, ast.stmt):
            continue
        where = ctx.scopes.statement_position(stmt)
        if where is None:
            continue
        block, index = where
        for before in block[:index]:
            value = before.value if isinstance(before, ast.Expr) else None
            if isinstance(value, ast.Call) and ctx.qualname(value.func) == "torch.manual_seed":
                return True
    return False


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
