"""TP102 cuda-set-device: ``torch.cuda.set_device(...)``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called, guard_statement
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.semantic._guards import device_guard

_TAILS = frozenset({"set_device"})


class CudaSetDevice(Rule):
    """## What it does
    Finds calls to `torch.cuda.set_device`, outside branches that already test
    the device (`if device.type == "cuda":`, `if torch.cuda.is_available():`).

    ## Why is this bad?
    It raises on every machine without CUDA, so a script that picks its GPU
    this way cannot run on the CPU, MPS or XPU. `torch.accelerator.set_device_index`
    does the same for whatever accelerator is present.

    ## Fix safety
    The fix calls `torch.accelerator.set_device_index` (torch >= 2.7) when an
    accelerator is available and does nothing otherwise, where the original
    raised; code that relied on that error behaves differently.
    """

    code = "TP102"
    name = "cuda-set-device"
    intent = Intent.DEVICE
    message = (
        "call `torch.accelerator.set_device_index(...)` when `torch.accelerator.is_available()` "
        "instead of `torch.cuda.set_device(...)`"
    )
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = _TAILS
    valid = (
        "import torch\n"
        "\n"
        "if torch.accelerator.is_available():\n"
        "    torch.accelerator.set_device_index(local_rank)\n",
        'import torch\n\nif device.type == "cuda":\n    torch.cuda.set_device(device)\n',
    )
    invalid = (
        Example(
            "import torch\n\ndef setup(local_rank):\n    torch.cuda.set_device(local_rank)\n",
            fixed="import torch\n"
            "\n"
            "def setup(local_rank):\n"
            "    if torch.accelerator.is_available():\n"
            "        torch.accelerator.set_device_index(local_rank)\n",
        ),
        Example("import torch\n\nok = torch.cuda.set_device(0) or True\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _TAILS) != "torch.cuda.set_device":
            return
        if device_guard(node, ctx) is not None:
            return  # `if device.type == "cuda":` (ported) or a CUDA-or-CPU branch (TP109)
        args = ", ".join(ctx.segment(a) for a in (*node.args, *node.keywords))
        torch = ctx.torch_at(node)
        t = torch[0] if torch is not None else ctx.torch_name()
        edit = guard_statement(node, f"{t}.accelerator.set_device_index({args})", ctx, t)
        fix = None
        if edit is not None and torch is not None:
            fix = Fix((edit, *torch[1]), FixSafety.UNSAFE)
        yield ctx.finding(self, node, fix=fix)
