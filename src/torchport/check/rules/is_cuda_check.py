"""TP103 is-cuda-check: ``if x.is_cuda:`` branches."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._records import replace
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._cuda_choice import cuda_api, moves_to_cuda, not_implemented_elsewhere
from torchport.check.rules._test_code import cuda_is_the_subject, cuda_quirk
from torchport.check.semantic._devices import IS_DEVICE_ATTRIBUTES
from torchport.check.semantic._guards import Guard, device_guard

_TESTED = (ast.If, ast.While, ast.IfExp, ast.Assert)
# Tests of another device type (`x.is_xpu`, `x.device.type`): the branch is ported.
_OTHER_TYPES = (IS_DEVICE_ATTRIBUTES - {"is_cuda"}) | {"type"}


class IsCudaCheck(Rule):
    """## What it does
    Finds `tensor.is_cuda` used as a condition (`if`, `while`, a conditional or a comprehension
    filter). Left alone: branches that also test another device type (`elif x.is_xpu:`,
    `device.type`), or sit inside such a branch (ported code); branches whose CUDA arm calls
    a custom CUDA kernel (`roi_align_forward_cuda(...)`), a `torch.cuda` function (TP401's)
    or spreads the work over several GPUs (DataParallel, TP405's), which really exist only
    for CUDA, and so `assert x.is_cuda` (or `if not x.is_cuda: raise ...`) before such a
    call, raising `NotImplementedError` before a compiled module's call (`_C.op(...)`), or
    any such test in a module written around a GPU-only kernel (`rules/_cuda_kernels.py`):
    the kernel's precondition; and a test's CUDA quirk (`if x.is_cuda: pass` before an
    `elif` of what it checks elsewhere). Before portable code either is reported.

    ## Why is this bad?
    `is_cuda` is False for tensors on MPS, XPU and other accelerators, so the accelerator
    branch is silently skipped there: the code takes the CPU path with accelerator
    tensors, or pins and copies what is already on the device.

    ## Fix safety
    The fix tests `x.device.type != "cpu"`, which is also true for `meta` tensors and for
    every accelerator, not only CUDA. So a branch that names CUDA itself (`device = "cuda"`,
    `.cuda()`, `torch.cuda.*`), which would then run on those accelerators too, is reported
    without a fix, as are `self.is_cuda` and an `is_cuda` attribute the module assigns
    itself (a class's flags), and a test about CUDA (`rules/_test_code.py`): its expectation.

    The fix says so in `Fix.changes`: on MPS or XPU the skipped branch runs, results change.
    """

    code = "TP103"
    name = "is-cuda-check"
    intent = Intent.DEVICE
    default = False
    message = 'test `x.device.type != "cpu"` (or compare with your `device`) instead of `x.is_cuda`'
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Attribute,)
    attr_names = frozenset({"is_cuda"})
    valid = (
        'if x.device.type != "cpu":\n    x = x.cpu()\n',
        "on_gpu = x.is_cuda\n",
        "if x.is_cuda:\n    f = cuda_impl\nelif x.is_xpu:\n    f = xpu_impl\n",
        "if x.is_cuda:\n    ext.roi_pool_forward_cuda(x, out)\n"
        "else:\n    ext.roi_pool_forward(x, out)\n",
        "assert grad.is_cuda\nroi_pool_forward_cuda(grad, out)\n",
        "def forward(x, out):\n    if not x.is_cuda:\n        raise NotImplementedError\n"
        "    _backend.dcn_cuda_forward(x, out)\n",
        "import torch\n\nif x.is_cuda:\n    dev = torch.cuda.current_device()\n",
        'if device.type == "cuda":\n    y = x if x.is_cuda else x.cuda()\n',
    )
    invalid = (
        Example(
            "if x.is_cuda:\n    x = x.cpu()\n",
            fixed='if x.device.type != "cpu":\n    x = x.cpu()\n',
        ),
        Example(
            "y = [t for t in ts if not t.is_cuda]\n",
            fixed='y = [t for t in ts if not t.device.type != "cpu"]\n',
        ),
        Example(
            "class Loader:\n    def next(self, x):\n        return x.cpu() if self.is_cuda else x\n"
        ),
        Example('device = "cpu"\nif x.is_cuda:\n    device = "cuda"\n'),
        Example(
            "def mm(a, b):\n    assert a.is_cuda and b.is_cuda\n    return kernel[grid](a, b)\n",
            fixed='def mm(a, b):\n    assert a.device.type != "cpu" and b.device.type != "cpu"\n'
            "    return kernel[grid](a, b)\n",
            count=2,
        ),
        Example(
            "if not a.is_cuda:\n    raise ValueError(a.device)\ny = a @ b\n",
            fixed='if not a.device.type != "cpu":\n    raise ValueError(a.device)\ny = a @ b\n',
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Attribute)
        if node.attr != "is_cuda" or not isinstance(node.ctx, ast.Load):
            return
        branch = _in_condition(node, ctx)
        own = ctx.segment(node) == "self.is_cuda" and ctx.mentions("self.is_cuda =")  # a flag
        if branch is None or own or _specific_to_cuda(branch, node, ctx) or cuda_quirk(branch, ctx):
            return
        found = ctx.finding(self, node)
        if isinstance(branch, ast.If):  # the test, spanning the branch it guards
            end = ctx.finding(self, branch.body[-1])
            found = replace(found, end_line=end.end_line, end_col=end.end_col)
        if _fix_would_mislead(node, branch, ctx):
            yield found
            return
        text = f'{ctx.segment(node.value)}.device.type != "cpu"'
        fix = Fix((ctx.replace(node, text),), FixSafety.UNSAFE, _EVERY_ACCELERATOR)
        yield replace(found, fix=fix)


def _fix_would_mislead(node: ast.Attribute, branch: ast.AST, ctx: Context) -> bool:
    """Whether ``.device.type != "cpu"`` would be wrong here.

    A class's own flag may have no ``.device``; a branch that names CUDA
    (``device = "cuda"``) would then run where CUDA is not.
    """
    if _own_flag(node, ctx) or cuda_is_the_subject(node, ctx):
        return True
    return isinstance(branch, (ast.If, ast.IfExp)) and moves_to_cuda(branch, ctx)


def _own_flag(node: ast.Attribute, ctx: Context) -> bool:
    """``self.is_cuda``, or an ``is_cuda`` the module assigns itself: a user's flag, no tensor's."""
    receiver = node.value
    if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
        return True
    return ctx.mentions(".is_cuda =") or ctx.mentions(".is_cuda=")


def _in_condition(node: ast.expr, ctx: Context) -> ast.AST | None:
    """The ``if``/``while``/conditional/comprehension whose condition ``node`` is, if any."""
    child: ast.AST = node
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, _TESTED):
            return outer if child is outer.test else None
        if isinstance(outer, ast.comprehension):
            return outer if any(cond is child for cond in outer.ifs) else None
        if not isinstance(outer, (ast.BoolOp, ast.UnaryOp)):
            return None
        child = outer
    return None


def _specific_to_cuda(branch: ast.AST, node: ast.Attribute, ctx: Context) -> bool:
    """Ported code (another device type is tested too) or a CUDA kernel's branch.

    For ``assert x.is_cuda`` the "branch" is what the assert guards: the
    statements after it in its block (a CUDA kernel's precondition, or not).
    """
    if device_guard(branch, ctx) is Guard.DEVICE_TYPE or not_implemented_elsewhere(branch, ctx):
        return True
    tests: list[ast.AST] = [getattr(branch, "test", branch)]
    arms: list[ast.AST] = [branch]
    if isinstance(branch, ast.Assert) or (isinstance(branch, ast.If) and _raises_only(branch)):
        arms = _after(branch, ctx)
    if isinstance(branch, ast.If):
        tail: list[ast.stmt] = branch.orelse
        while len(tail) == 1 and isinstance(tail[0], ast.If):  # the `elif` chain
            tests.append(tail[0].test)
            tail = tail[0].orelse
    for test in tests:
        for sub in ast.walk(test):
            if isinstance(sub, ast.Attribute) and sub is not node and sub.attr in _OTHER_TYPES:
                return True
    for arm in arms:
        for sub in ast.walk(arm):
            if isinstance(sub, ast.Call):
                func = sub.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if "cuda" in called.lower() and called != "cuda" and ctx.qualname(func) is None:
                    return True  # `roi_pool_forward_cuda(...)`: a kernel only CUDA has
                if cuda_api(ctx.qualname(func) or ""):
                    return True  # `torch.cuda.*` (TP401's), `data_parallel` over GPUs (TP405's)
    return False


def _raises_only(branch: ast.If) -> bool:
    """``if not x.is_cuda: raise ...``, no ``else``: an assert spelled out."""
    body = branch.body if not branch.orelse else []
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def _after(stmt: ast.stmt, ctx: Context) -> list[ast.AST]:
    """The statements after ``stmt`` in the block that holds it."""
    holder = ctx.scopes.parent(stmt)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(holder, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return list(block[next(i for i, s in enumerate(block) if s is stmt) + 1 :])
    return []


_EVERY_ACCELERATOR = (
    "the branch that ran only for CUDA tensors now runs for tensors on every accelerator "
    "(MPS, XPU): what it computes there changes"
)
