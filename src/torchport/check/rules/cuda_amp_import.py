"""TP408 cuda-amp-import: the line importing ``GradScaler``/``autocast`` from ``torch.cuda.amp``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._amp_imports import IMPORTED, used_old_amp_import


class CudaAmpImport(Rule):
    """## What it does
    Finds the line that imports `GradScaler` or `autocast` from `torch.cuda.amp`
    (`from torch.cuda.amp import GradScaler`, `import torch.cuda.amp as amp`) when
    something uses them, once per line. Left alone: an unused import (TP403 reports
    and removes it) and the fallback of a torch without `torch.amp` (an `except`
    arm, the `else` of a version test).

    ## Why is this bad?
    `torch.cuda.amp` is deprecated and ties mixed precision to CUDA; the import
    line is what a port changes (to `torch.amp`, whose classes take the device
    type). TP403 reports and fixes each call; this line goes with them. Reported
    without a fix: the calls' fixes leave it unused, and TP403's fix then removes it.

    ## Why is it off by default?
    It repeats what TP403 says at the calls: each import line has its calls reported
    already, so it adds a second finding for one change. `--extend-select TP408`
    runs it (a recall count by lines, or a port that starts at the imports).
    """

    code = "TP408"
    name = "cuda-amp-import"
    intent = Intent.DEVICE
    default = False
    message = IMPORTED
    fix_safety = FixSafety.NONE
    node_types = (ast.Import, ast.ImportFrom)
    valid = (
        "from torch.amp import GradScaler\n\nscaler = GradScaler(device.type)\n",
        "from torch.cuda.amp import GradScaler\n",  # unused: TP403's
        "try:\n    from torch.amp import GradScaler\n"
        "except ImportError:\n    from torch.cuda.amp import GradScaler\n\ns = GradScaler()\n",
    )
    invalid = (
        Example(
            "from torch.cuda.amp import GradScaler, autocast\n\nscaler = GradScaler()\n"
            "with autocast():\n    pass\n"
        ),
        Example("import torch.cuda.amp as amp\n\nwith amp.autocast():\n    pass\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Import | ast.ImportFrom)
        if used_old_amp_import(node, ctx):
            yield ctx.finding(self, node)
