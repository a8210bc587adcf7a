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

    Not reported after `torch.manual_seed(...)` (or `torch.random.manual_seed(...)`, the
    same function) ran, in the same function (or at the top level), earlier in the same
    block or before a statement that holds the call (such as `if torch.cuda.is_available():`),
    however far above: every device is seeded already, the CUDA call is a leftover that does
    no harm. Nor where such a call follows it in the same function on every path that goes
    on from it (no `return`, `raise`, `break`, `continue` or `yield` between, no `while`
    around it): the seeding function ends with every device seeded.

    ## Fix safety
    `torch.manual_seed` also reseeds the CPU generator at that point; if CPU
    random numbers were drawn since the last CPU seeding, the ones drawn after
    this line change.
    """

    code = "TP402"
    name = "cuda-manual-seed"
    intent = Intent.DEVICE
    default_contexts = frozenset({"code", "bench"})  # judged: check/_default_scope.py
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
        # seeded after, on every path on (LightGCN's `utils.set_seed`, sample X)
        "import torch\n\ndef set_seed(s):\n    np.random.seed(s)\n"
        "    if torch.cuda.is_available():\n        torch.cuda.manual_seed(s)\n"
        "        torch.cuda.manual_seed_all(s)\n    torch.manual_seed(s)\n",
        "import torch\n\nfor s in seeds:\n    torch.cuda.manual_seed(s)\ntorch.manual_seed(0)\n",
        # `torch.random.manual_seed` is `torch.manual_seed` (sample AF's VAE-TEB, judged noise)
        "import torch\n\ntorch.random.manual_seed(42)\ntorch.cuda.manual_seed(42)\n",
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
        Example(  # seeded after, but not on the path that returns first
            "import torch\n\ndef seed(s):\n    if cuda:\n        torch.cuda.manual_seed(s)\n"
            "        return\n    torch.manual_seed(s)\n",
            fixed="import torch\n\ndef seed(s):\n    if cuda:\n        torch.manual_seed(s)\n"
            "        return\n    torch.manual_seed(s)\n",
        ),
        Example(  # a loop that may never end: what follows it may never run
            "import torch\n\nwhile True:\n    torch.cuda.manual_seed(0)\ntorch.manual_seed(0)\n",
            fixed="import torch\n\nwhile True:\n    torch.manual_seed(0)\ntorch.manual_seed(0)\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _TAILS) not in _SEEDS or _seeded_around(ctx):
            return  # `torch.manual_seed(s)` before or after seeds every device
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


def _seeded_around(ctx: Context) -> bool:
    """Whether every device is seeded before this call, or on every path on from it."""
    return _seeded_before(ctx) or _seeded_after(ctx)


def _seeds_every_device(stmt: ast.stmt, ctx: Context) -> bool:
    value = stmt.value if isinstance(stmt, ast.Expr) else None
    return isinstance(value, ast.Call) and ctx.qualname(value.func) in _EVERY_DEVICE


# torch.manual_seed is torch.random's: either name seeds the CPU and every accelerator
_EVERY_DEVICE = ("torch.manual_seed", "torch.random.manual_seed")


_LEAVES = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom)


def _seeded_after(ctx: Context) -> bool:
    """Whether a statement after this one, in its block or in a block around it in the same
    function, seeds every device, with nothing between that can leave the path (a
    ``return``, ``raise``, ``break``, ``continue`` or ``yield``, a ``while`` loop around the
    call). LightGCN's ``utils.set_seed`` seeds CUDA under ``if torch.cuda.is_available():``
    and then calls ``torch.manual_seed(seed)`` (sample X, judged noise)."""
    for stmt in reversed(ctx.ancestors):
        if isinstance(stmt, (*_SCOPES, ast.While)):
            return False  # another scope, or a loop that may never end
        if not isinstance(stmt, ast.stmt):
            continue
        where = ctx.scopes.statement_position(stmt)
        if where is None:
            return False
        block, index = where
        for after in block[index + 1 :]:
            if _seeds_every_device(after, ctx):
                return True
            if any(isinstance(node, _LEAVES) for node in ast.walk(after)):
                return False
    return False


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
        if any(_seeds_every_device(before, ctx) for before in block[:index]):
            return True
    return False


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
