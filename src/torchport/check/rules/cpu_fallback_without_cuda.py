"""TP120 cpu-fallback-without-cuda: ``if not torch.cuda.is_available(): device = "cpu"``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called
from torchport.check._records import replace
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._partial_chains import partial_chain, sets_the_cpu
from torchport.check.rules._test_code import benchmark_code, collected_by_a_test_runner
from torchport.check.semantic._devices import names_other_accelerator
from torchport.check.semantic._residence import bound_value

_AVAILABLE = "torch.cuda.is_available"
_TAILS = frozenset({"is_available"})


class CpuFallbackWithoutCuda(Rule):
    """## What it does
    Finds a one-armed fallback to the CPU taken wherever CUDA is missing:
    `if not torch.cuda.is_available(): args.device = "cpu"` (also `self.device =
    torch.device("cpu")`, a flag bound to `torch.cuda.is_available()`, or `not
    torch.cuda.is_available() or args.cpu`), with no `else`. Left alone: a test that
    also names another accelerator (`and not torch.backends.mps.is_available()`), the
    `elif` of a chain that does, a body that does, test code and benchmark code.
    Also a chain of `is_available()` tests of CUDA and MPS or XPU, not both, that falls back
    to the CPU (`if torch.cuda...: ... elif torch.xpu...: ... else: device = "cpu"`, the
    nested conditional, a helper's `return`s; `_partial_chains`): on the accelerator it
    leaves out it runs on the CPU. A chain testing each of the three is left alone.

    ## Why is this bad?
    The device the program uses otherwise (a `--device` option defaulting to `"cuda"`,
    an attribute set before) is replaced by the CPU on every machine without CUDA,
    also where an Apple (MPS) or Intel (XPU) accelerator is there, and also when the
    user asked for it (`--device mps`), or an earlier `if torch.backends.mps...` arm
    chose it: the program silently runs on the CPU. Fall back only when no accelerator
    is there (`if not torch.accelerator.is_available():`), or make the fallback the
    `else` of a chain that tests each device. Reported without a fix: what the device
    is otherwise is the program's, and may be `"cuda"`.

    ## Why is it off by default?
    New (held-out recall round 5e), and judged on too few findings: over the 273
    repositories of the precision samples it reports 4, 3 real and 1 of low value (a
    detectron2 predictor, which supports CUDA and the CPU only); the policy wants every
    one real under 8 judged. `--extend-select TP120` runs it.
    """

    code = "TP120"
    name = "cpu-fallback-without-cuda"
    intent = Intent.DEVICE
    default = False
    message = (
        "test `torch.accelerator.is_available()` here: this fallback puts the program on the "
        "CPU wherever CUDA is missing, also where MPS or XPU is there or was asked for"
    )
    fix_safety = FixSafety.NONE
    node_types = (ast.If, ast.IfExp)
    valid = (
        "import torch\n\nif not torch.accelerator.is_available():\n    device = 'cpu'\n",
        "import torch\n\nif not torch.cuda.is_available():\n    raise SystemExit('no GPU')\n",
        "import torch\n\nif torch.backends.mps.is_available():\n    device = 'mps'\n"
        "elif not torch.cuda.is_available():\n    device = 'cpu'\n",
        "import torch\n\nif not torch.cuda.is_available() and not torch.backends.mps."
        "is_available():\n    device = 'cpu'\n",
        "import torch\n\nif not torch.cuda.is_available():\n    device = 'cpu'\nelse:\n"
        "    device = 'cuda'\n",  # a two-armed choice: TP109's
        "import torch\n\nif not args.cuda:\n    device = 'cpu'\n",  # the user's flag
        "import torch\n\nif torch.cuda.is_available():\n    device = 'cuda'\n"
        "elif torch.backends.mps.is_available():\n    device = 'mps'\n"
        "elif torch.xpu.is_available():\n    device = 'xpu'\nelse:\n    device = 'cpu'\n",
    )
    invalid = (
        Example("import torch\n\nif not torch.cuda.is_available():\n    args.device = 'cpu'\n"),
        Example(
            "import torch\n\nclass Manager:\n    def __init__(self, device):\n"
            "        self.device = device\n        if torch.backends.mps.is_available():\n"
            "            self.device = 'mps'\n        if not torch.cuda.is_available():\n"
            "            self.device = torch.device('cpu')\n"
        ),
        Example(
            "import torch\n\nuse_cuda = torch.cuda.is_available()\n"
            "if not use_cuda or args.cpu:\n    device = 'cpu'\n"
        ),
        Example(
            "import torch\n\nif torch.cuda.is_available():\n    device = 'cuda'\n"
            "elif torch.xpu.is_available():\n    device = 'xpu'\nelse:\n    device = 'cpu'\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, (ast.If, ast.IfExp))
        chain = partial_chain(node, ctx) if ctx.mentions("is_available") else None
        if chain is not None:
            if not (collected_by_a_test_runner(ctx) or benchmark_code(ctx)):
                yield _chain_finding(self, node, ctx, *chain)
            return
        if not isinstance(node, ast.If) or node.orelse or not _without_cuda(node.test, ctx):
            return
        if not any(sets_the_cpu(stmt, ctx, returns=False) for stmt in node.body):
            return
        if _names_another(node.test) or any(_names_another(s) for s in node.body):
            return
        parent = ctx.parent
        if isinstance(parent, ast.If) and parent.orelse == [node] and _chain_names_another(parent):
            return  # `elif not torch.cuda.is_available():` after an MPS arm
        if collected_by_a_test_runner(ctx) or benchmark_code(ctx):
            return  # a test's or benchmark's device is the suite's choice
        end = ctx.finding(self, node.body[-1])
        yield replace(ctx.finding(self, node.test), end_line=end.end_line, end_col=end.end_col)


def _chain_finding(
    rule: Rule, node: ast.If | ast.IfExp, ctx: Context, tested: str, left: str
) -> Finding:
    """The chain's head, spanning its first branch (an ``if``) or the whole expression."""
    message = (
        f"pick the device with `torch.accelerator`: this choice tests {tested} only, so it "
        f"falls back to the CPU where {left} (or another accelerator) is there"
    )
    if isinstance(node, ast.IfExp):
        return ctx.finding(rule, node, message=message)
    end = ctx.finding(rule, node.body[-1])
    found = ctx.finding(rule, node.test, message=message)
    return replace(found, end_line=end.end_line, end_col=end.end_col)


def _without_cuda(test: ast.expr, ctx: Context) -> bool:
    """``not <CUDA is available>``, alone or as an ``or`` operand: true wherever CUDA is
    missing, whatever else the machine has."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(_without_cuda(v, ctx) for v in test.values)
    return (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and _cuda_available(test.operand, ctx)
    )


def _cuda_available(expr: ast.expr, ctx: Context, hops: int = 2) -> bool:
    """``torch.cuda.is_available()``, or a name bound to it (``and``-ed with a flag or not)."""
    if isinstance(expr, ast.Call):
        return called(expr, ctx, _TAILS) == _AVAILABLE
    if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.And):
        return any(_cuda_available(v, ctx, hops) for v in expr.values)
    if isinstance(expr, ast.Name) and hops > 0 and ctx.mentions("is_available"):
        bound = bound_value(expr, ctx)
        return bound is not None and _cuda_available(bound, ctx, hops - 1)
    return False


def _names_another(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        name = sub.attr if isinstance(sub, ast.Attribute) else getattr(sub, "id", "")
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            name = sub.value
        if isinstance(name, str) and name and names_other_accelerator(name):
            return True
    return False


def _chain_names_another(node: ast.If) -> bool:
    return _names_another(node.test) or any(_names_another(s) for s in node.body)
