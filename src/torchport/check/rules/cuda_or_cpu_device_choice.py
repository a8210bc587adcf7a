"""TP109 cuda-or-cpu-device-choice: ``"cuda" if torch.cuda.is_available() else "cpu"``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from torchport.check._context import Context
from torchport.check._match import called, cuda_string, names
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._snippets import DEVICE_LINE
from torchport.check.semantic._guards import Guard, device_guard, tests_other_accelerators
from torchport.check.semantic._residence import bound_value

_AVAILABLE = "torch.cuda.is_available"
_TAILS = frozenset({"is_available"})
# Calls choosing no device (questions; seeding is TP402's).
_QUERIES = frozenset(f"torch.cuda.{n}" for n in ("is_available", "is_bf16_supported",
    "get_device_name", "get_device_capability", "device_count", "manual_seed",
    "manual_seed_all"))  # fmt: skip


class CudaOrCpuDeviceChoice(Rule):
    """## What it does
    Finds choices between CUDA and the CPU made with `torch.cuda.is_available()`
    (directly or through a flag bound to it): the idiom
    `torch.device("cuda" if torch.cuda.is_available() else "cpu")`, and branches
    such as `if torch.cuda.is_available(): model.cuda()` or
    `mem = torch.cuda.memory_reserved() if torch.cuda.is_available() else 0`.
    The CUDA code inside such a branch is not reported by TP101 or TP401: this
    rule reports the choice once, spanning the CUDA branch. A branch naming no
    CUDA device or API (a dtype choice, building a CUDA extension) is no device
    choice and is left alone, as are `assert torch.cuda.is_available()` and
    chains that also test MPS or XPU (`elif torch.backends.mps.is_available():`).

    ## Why is this bad?
    It is not wrong: the PyTorch documentation teaches it, and the program runs
    everywhere. But it knows two devices only, so on an Apple (MPS), Intel (XPU)
    or other accelerator it silently runs on the CPU. `torch.accelerator`
    (torch >= 2.6) picks whatever accelerator is present.

    ## Fix safety
    Only the idiom itself is rewritten, to the `torch.accelerator` expression
    (its `.type` string when the idiom was a string, so `device == "cuda"` tests
    keep their meaning): on a machine with MPS or XPU the program now runs there
    instead of on the CPU, which changes speed, numerics and memory use. Flags and
    branches are reported without a fix: the code they guard may be CUDA-only
    (`.cuda()`), and would then fail on the other accelerators.
    """

    code = "TP109"
    name = "cuda-or-cpu-device-choice"
    intent = Intent.DEVICE
    message = (
        "use `torch.accelerator` to pick the device: this CUDA-or-CPU choice works, but runs "
        "on the CPU where MPS or XPU is available"
    )
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.If, ast.IfExp)
    valid = (
        "import torch\n\n"
        "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
        'else torch.device("cpu")\n',
        'import torch\n\ndt = "bf16" if torch.cuda.is_available() else "fp16"\n',
        "import torch\n\nif torch.cuda.is_available():\n    d = 'cuda'\n"
        "elif torch.backends.mps.is_available():\n    d = 'mps'\n",
        "import torch\n\nassert torch.cuda.is_available()\n",
        "import torch\n\nif torch.cuda.is_available():\n    sources += ['nms_cuda.c']\n",
        'import torch\n\nif x.device.type == "cuda":\n    ok = torch.cuda.is_available()\n',
    )
    invalid = (
        Example(
            "import torch\n\n"
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
            fixed=f"import torch\n\n{DEVICE_LINE}",
        ),
        Example(
            "import torch\n\ndef run(x):\n"
            '    return x.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))\n',
            fixed=f"import torch\n\n{DEVICE_LINE}\ndef run(x):\n    return x.to(device)\n",
        ),
        Example(
            'import torch\n\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n',
            fixed="import torch\n\ndevice = torch.accelerator.current_accelerator().type "
            'if torch.accelerator.is_available() else "cpu"\n',
        ),
        Example(
            "import torch\n\nuse_cuda = torch.cuda.is_available()\nif use_cuda:\n    model.cuda()\n"
        ),
        Example("import torch\n\nif torch.cuda.is_available():\n    x = x.cuda()\n"),
        Example(
            "import torch\n\n"
            'dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")\n',
            fixed="import torch\n\n" + DEVICE_LINE.replace("device = ", "dev = ", 1),
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, (ast.If, ast.IfExp))
        test = node.test
        if not _tests_cuda(test, ctx) or not _moves_to_cuda(node, ctx):
            return
        if tests_other_accelerators(node, ctx):
            return  # `elif torch.backends.mps.is_available():` already looks further
        if device_guard(node, ctx) is Guard.DEVICE_TYPE:
            return  # inside a branch for one device type: already ported code
        if isinstance(node, ast.If):  # the test, spanning the CUDA branch it guards
            end = ctx.finding(self, node.body[-1])
            yield replace(ctx.finding(self, test), end_line=end.end_line, end_col=end.end_col)
            return
        if not (isinstance(test, ast.Call) and _is_cpu(node.orelse, ctx)):
            yield ctx.finding(self, node)  # `"cuda" if use_cuda else "cpu"`: no fix
            return
        parent, idiom = ctx.parent, node  # type: ast.AST | None, ast.expr
        if isinstance(node.body, ast.Constant) and not _is_device_call(parent, node, ctx):
            # A string stays a string, so `device == "cuda"` tests further on keep working.
            t = ctx.torch_name()
            text = (
                f"{t}.accelerator.current_accelerator().type "
                f'if {t}.accelerator.is_available() else "cpu"'
            )
            edits = (ctx.replace(node, text), *ctx.torch_edits())
            yield ctx.finding(self, node, fix=Fix(edits, FixSafety.UNSAFE))
            return
        if _is_device_call(parent, node, ctx):
            assert isinstance(parent, ast.Call)
            idiom, parent = parent, (ctx.ancestors[-2] if len(ctx.ancestors) > 1 else None)
        if isinstance(parent, ast.Assign) and parent.value is idiom:
            edits = (ctx.replace(idiom, ctx.device_expr()), *ctx.torch_edits())
        else:
            name, definition = ctx.device_definition()
            edits = (ctx.replace(idiom, name), *definition)
        yield ctx.finding(self, idiom, fix=Fix(edits, FixSafety.UNSAFE))


def _tests_cuda(test: ast.expr, ctx: Context, depth: int = 0) -> bool:
    """``torch.cuda.is_available()`` in ``test``, directly or through a flag bound to it."""
    for _ in range(3 - depth):
        if isinstance(test, ast.Name):
            if not ctx.mentions("is_available"):
                return False  # no flag in this file can hold the answer
            bound = bound_value(test, ctx)
            if bound is None or not names(bound, "is_available"):
                return False
            test = bound
            continue
        if isinstance(test, ast.BoolOp):
            # `x = x and y` binds a name to itself: the depth bounds the search.
            return depth < 2 and any(_tests_cuda(v, ctx, depth + 1) for v in test.values)
        if isinstance(test, ast.UnaryOp):
            return False  # `if not torch.cuda.is_available():` is the CPU branch
        return isinstance(test, ast.Call) and called(test, ctx, _TAILS) == _AVAILABLE
    return False


def _moves_to_cuda(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """Whether the branch taken on CUDA names CUDA: ``.cuda()``, ``"cuda"``, ``torch.cuda.*``."""
    body: list[ast.AST] = [*node.body] if isinstance(node, ast.If) else [node.body]
    for part in body:
        for sub in ast.walk(part):
            if isinstance(sub, ast.Constant) and cuda_string(sub) is not None:
                return True
            if isinstance(sub, ast.JoinedStr) and sub.values:
                head = sub.values[0]
                if isinstance(head, ast.Constant) and str(head.value).startswith("cuda:"):
                    return True
            if isinstance(sub, ast.Call):
                func = sub.func
                if isinstance(func, ast.Attribute) and func.attr == "cuda":
                    if ctx.qualname(func) is None:
                        return True
                    continue
                name = ctx.qualname(func) or ""
                if name.startswith("torch.cuda.") and name not in _QUERIES:
                    return True
    return False


def _is_device_call(parent: ast.AST | None, node: ast.expr, ctx: Context) -> bool:
    return (
        isinstance(parent, ast.Call)
        and len(parent.args) == 1
        and parent.args[0] is node
        and not parent.keywords
        and ctx.qualname(parent.func) == "torch.device"
    )


def _is_cpu(expr: ast.expr, ctx: Context) -> bool:
    if isinstance(expr, ast.Constant):
        return expr.value == "cpu"
    return (
        isinstance(expr, ast.Call)
        and ctx.qualname(expr.func) == "torch.device"
        and len(expr.args) == 1
        and isinstance(expr.args[0], ast.Constant)
        and expr.args[0].value == "cpu"
    )
