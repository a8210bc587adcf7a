"""TP107 discarded-move: ``x.to(device)`` as a statement on a tensor."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import method_name, probably_module, probably_tensor
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule


class DiscardedMove(Rule):
    """## What it does
    Finds `x.to(...)`, `x.cuda()` and `x.cpu()` standing alone as a statement
    when `x` is (probably) a tensor.

    ## Why is this bad?
    For a tensor these return a new tensor and leave `x` where it was, so the
    statement does nothing but a copy that is thrown away; the next line still
    uses the old tensor on the old device. (`model.to(device)` on an
    `nn.Module` moves it in place and is fine; the rule stays silent when the
    receiver may be a module.) Left alone: a move of a tensor the statement itself
    makes from a shape (`torch.zeros((1, 1)).to(device, torch.float32)`, a
    `torch.randn`, `torch.empty_like`, also after `.float()`, `.contiguous()` and
    such of it): it holds no one's data and no name holds it, so nothing is left
    on the old device; such a statement runs for its effect, a warm-up on a new
    stream (sample Z's N1). Not a copy of data a name holds (`torch.tensor(x)`,
    `torch.cat([a, b])`, `x.clone()`): it may be the move of `x` meant.

    ## Fix safety
    The fix assigns the result back (`x = x.to(device)`), which changes what
    later lines see: that is the intent, but it is a change in behaviour. A
    name that is not local where the statement runs (a global used in a
    function) is reported without a fix: assigning it would make it local.
    """

    code = "TP107"
    name = "discarded-move"
    intent = Intent.DEVICE
    message = "assign the result (`x = x.to(device)`): tensor moves return a new tensor"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Expr,)
    valid = (
        "model.to(device)\n",
        "net = Net()\nnet.cuda()\n",
        "x = x.to(device)\n",
        "weight_post_process.to(device)\n",
        "import torch\n\ntorch.zeros((1, 1)).to(device, torch.float32)\n",  # a warm-up
    )
    invalid = (
        Example(
            "import torch\n\nx = torch.zeros(3)\nx.to(device)\n",
            fixed="import torch\n\nx = torch.zeros(3)\nx = x.to(device)\n",
        ),
        Example(
            "def step(batch):\n    labels = batch[1]\n    labels.cuda()\n",
            fixed="def step(batch):\n    labels = batch[1]\n    labels = labels.cuda()\n",
        ),
        Example("import torch\n\nbuf = torch.zeros(3)\n\ndef save():\n    buf.cpu()\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Expr)
        call = _a_tensor_moved(node.value, ctx)
        if call is None:
            return
        assert isinstance(call.func, ast.Attribute)
        receiver = call.func.value
        fix = None
        if _can_assign_back(receiver, ctx):
            at = ctx.start(node)
            text = f"{ctx.segment(receiver)} = "
            fix = Fix((Edit(at, at, text),), FixSafety.UNSAFE, _LATER_LINES)
        yield ctx.finding(self, call, fix=fix)


def _a_tensor_moved(value: ast.expr, ctx: Context) -> ast.Call | None:
    """``x.to(...)``, ``x.cuda()`` or ``x.cpu()`` of what is probably a tensor, not a module."""
    if not isinstance(value, ast.Call) or method_name(value) not in ("to", "cuda", "cpu"):
        return None
    assert isinstance(value.func, ast.Attribute)
    receiver = value.func.value
    if probably_module(receiver, ctx) or not probably_tensor(receiver, ctx):
        return None
    return None if _made_here(receiver, ctx) else value


# torch's factories that make a tensor from a shape and constants (or another's shape: the
# `_like` ones), no tensor's data: not `tensor`, `as_tensor`, `cat`, `stack`, `from_numpy`
_FROM_A_SHAPE = frozenset(
    f"torch.{n}"
    for n in ("zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye",
              "rand", "randn", "randint", "randperm", "zeros_like", "ones_like",
              "empty_like", "full_like", "rand_like", "randn_like")
)  # fmt: skip
# methods whose result is their receiver or a new tensor made from it alone: of a tensor no
# name holds, a tensor no name holds (not `.pow(x)`, `.add(x)`, `.set_(x)`: another's data)
_OWN_RESULT = frozenset(
    {"float", "double", "half", "bfloat16", "long", "int", "bool", "contiguous", "clone",
     "detach", "to", "cuda", "cpu", "view", "reshape", "squeeze", "unsqueeze", "t", "sum",
     "mean", "abs", "sqrt", "softmax", "argmax"}
)  # fmt: skip


def _made_here(receiver: ast.expr, ctx: Context) -> bool:
    """``receiver`` is a tensor made from a shape that no name holds: a call of one of
    :data:`_FROM_A_SHAPE`, or one of :data:`_OWN_RESULT`'s methods called on such."""
    while isinstance(receiver, ast.Call):
        func = receiver.func
        if ctx.qualname(func) in _FROM_A_SHAPE:
            return True
        if not isinstance(func, ast.Attribute) or func.attr not in _OWN_RESULT:
            return False
        receiver = func.value
    return False


def _can_assign_back(receiver: ast.expr, ctx: Context) -> bool:
    """Whether ``receiver = receiver.to(...)`` keeps the program valid.

    An attribute always; a name only where it is already local to this scope
    (assigning makes it local: `buf.cpu()` on a global inside a function would raise
    UnboundLocalError).
    """
    if isinstance(receiver, ast.Attribute):
        return True
    return isinstance(receiver, ast.Name) and ctx.scopes.resolve(
        receiver.id, receiver
    ) is ctx.scopes.scope_of(receiver)


_LATER_LINES = "the lines after this one now use the moved tensor, on its new device"
