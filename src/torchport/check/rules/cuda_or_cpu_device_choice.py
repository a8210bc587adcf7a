"""TP109 cuda-or-cpu-device-choice: ``"cuda" if torch.cuda.is_available() else "cpu"``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._guards import Guard, device_guard
from torchport.check._match import called, cuda_string
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._snippets import DEVICE_LINE

_TAILS = frozenset({"is_available"})


class CudaOrCpuDeviceChoice(Rule):
    """## What it does
    Finds choices between CUDA and the CPU made with `torch.cuda.is_available()`:
    the idiom `torch.device("cuda" if torch.cuda.is_available() else "cpu")`, and
    flags or branches such as `use_cuda = torch.cuda.is_available()` or
    `if torch.cuda.is_available(): model.cuda()`. The CUDA code inside such a
    branch is not reported by TP101: this rule reports the choice once.

    ## Why is this bad?
    It is not wrong: the PyTorch documentation teaches it, and the program runs
    everywhere. But it only knows two devices, so on an Apple (MPS), Intel (XPU)
    or other accelerator it silently runs on the CPU. `torch.accelerator`
    (torch >= 2.6) picks whatever accelerator is present:
    `torch.accelerator.current_accelerator() if torch.accelerator.is_available()
    else torch.device("cpu")`.

    ## Fix safety
    Only the idiom itself is rewritten, to the `torch.accelerator` expression
    (its `.type` string when the idiom was a string, so later `device == "cuda"`
    tests keep their meaning):
    on a machine with MPS or XPU the program now runs there instead of on the
    CPU, which changes speed, numerics and memory use. Flags and branches are
    reported without a fix: the code they guard may be CUDA-only (`.cuda()`),
    and would then fail on the other accelerators.
    """

    code = "TP109"
    name = "cuda-or-cpu-device-choice"
    intent = Intent.DEVICE
    message = (
        "use `torch.accelerator` to pick the device: this CUDA-or-CPU choice works, but runs "
        "on the CPU where MPS or XPU is available"
    )
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    valid = (
        "import torch\n\n"
        "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
        'else torch.device("cpu")\n',
        "import torch\n\nbf16 = torch.cuda.is_bf16_supported()\n",
        'import torch\n\nif x.device.type == "cuda":\n    ok = torch.cuda.is_available()\n',
    )
    invalid = (
        Example(
            "import torch\n"
            "\n"
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
            fixed=f"import torch\n\n{DEVICE_LINE}",
        ),
        Example(
            "import torch\n"
            "\n"
            "def run(x):\n"
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
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _TAILS) != "torch.cuda.is_available":
            return
        if device_guard(node, ctx) is Guard.DEVICE_TYPE:
            return  # inside a branch for one device type: already ported code
        idiom = _idiom(node, ctx)
        if idiom is None:
            yield ctx.finding(self, node)
            return
        if isinstance(idiom, ast.IfExp):
            # A string stays a string, so `device == "cuda"` tests further on keep working.
            t = ctx.torch_name()
            text = (
                f"{t}.accelerator.current_accelerator().type "
                f'if {t}.accelerator.is_available() else "cpu"'
            )
            edits = (ctx.replace(idiom, text), *ctx.torch_edits())
        else:
            parent = ctx.ancestors[-3] if len(ctx.ancestors) > 2 else None
            if isinstance(parent, ast.Assign) and parent.value is idiom:
                edits = (ctx.replace(idiom, ctx.device_expr()), *ctx.torch_edits())
            else:
                name, definition = ctx.device_definition()
                edits = (ctx.replace(idiom, name), *definition)
        yield ctx.finding(self, idiom, fix=Fix(edits, FixSafety.UNSAFE))


def _idiom(node: ast.Call, ctx: Context) -> ast.expr | None:
    """The whole idiom around ``node``: ``torch.device(<ifexp>)``, or the ``<ifexp>`` alone.

    ``<ifexp>`` is ``"cuda" if node else "cpu"`` (the ``else`` arm may be any
    CPU spelling).
    """
    chain = ctx.ancestors
    ifexp = chain[-1] if chain else None
    if not (
        isinstance(ifexp, ast.IfExp)
        and ifexp.test is node
        and cuda_string(ifexp.body) == "cuda"
        and _is_cpu(ifexp.orelse, ctx)
    ):
        return None
    outer = chain[-2] if len(chain) > 1 else None
    if (
        isinstance(outer, ast.Call)
        and len(outer.args) == 1
        and outer.args[0] is ifexp
        and not outer.keywords
        and ctx.qualname(outer.func) == "torch.device"
    ):
        return outer
    return ifexp


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
