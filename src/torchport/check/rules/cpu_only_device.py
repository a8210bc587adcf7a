"""TP507 cpu-only-device: ``device = torch.device("cpu")`` in code being ported."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._port import cpu_only_device
from torchport.check.rules._snippets import DEVICE_LINE


class CpuOnlyDevice(Rule):
    """## What it does
    Finds a variable named like a device bound to the CPU and nothing else:
    `device = torch.device("cpu")`.

    ## Why is this bad?
    Everything the script moves to `device` then stays on the CPU even when
    the machine has an accelerator. The fix binds it to the accelerator when
    there is one and to the CPU otherwise, the same line every other fix
    writes, so results on the CPU are unchanged.

    A CPU the program chose on purpose is left: a constant or a name that says
    CPU (`CPU_DEVICE`, `cpu_device`), a binding in one branch of an `if` or a
    `try` (the gloo branch of a distributed script), a name bound again
    elsewhere (`if args.cuda: device = ...`), or a file with a flag that picks
    the device (`--cuda`, `--no-accel`, `--device`).
    """

    code = "TP507"
    name = "cpu-only-device"
    intent = Intent.PORT
    default = False
    message = "pick the accelerator when there is one: `torch.accelerator.current_accelerator()`"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Assign,)
    valid = (
        DEVICE_LINE,
        'import torch\n\ncpu = torch.device("cpu")\n',
        'import torch\n\ndevice = torch.device("cuda")\n',
        'import torch\n\nCPU_DEVICE = torch.device("cpu")\n',
        'import torch\n\nif backend == "gloo":\n    device = torch.device("cpu")\n'
        'else:\n    device = torch.device(f"cuda:{rank}")\n',
        'import torch\n\ndevice = torch.device("cpu")\nif args.cuda:\n'
        '    device = torch.device("cuda")\n',
        "import argparse\nimport torch\n\np = argparse.ArgumentParser()\n"
        'p.add_argument("--no-accel", action="store_true")\ndevice = torch.device("cpu")\n',
    )
    invalid = (
        Example(
            'import torch\n\ndevice = torch.device("cpu")  # CPU only\n',
            fixed="import torch\n\n" + DEVICE_LINE.rstrip("\n") + "  # CPU only\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        if not cpu_only_device(node, ctx.qualname):
            return
        from torchport.check.port._choices import deliberate_cpu  # on first use

        assert isinstance(node, ast.Assign)
        if deliberate_cpu(node, ctx):
            return  # the program's own choice: a constant, a branch, a flag
        found = ctx.torch_at(node)
        fix = None
        if found is not None:
            edits = (ctx.replace(node.value, ctx.device_expr(found[0])), *found[1])
            fix = Fix(edits, FixSafety.SAFE)
        yield ctx.finding(self, node, fix=fix)
