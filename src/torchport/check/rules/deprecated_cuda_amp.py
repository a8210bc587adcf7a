"""TP403 deprecated-cuda-amp: ``torch.cuda.amp.autocast`` / ``GradScaler``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called, in_old_torch_fallback
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._snippets import DEVICE_LINE

_AMP = {
    "torch.cuda.amp.autocast": "autocast",
    "torch.cuda.amp.autocast_mode.autocast": "autocast",
    "torch.cuda.amp.GradScaler": "GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "GradScaler",
}

_TAILS = frozenset(_AMP.values())
_NEW = "torch.amp."


class DeprecatedCudaAmp(Rule):
    """## What it does
    Finds `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)`.

    ## Why is this bad?
    Both are deprecated (they warn on every call) and tie mixed precision to
    CUDA: on any other device autocast is silently off. `torch.amp.autocast`
    and `torch.amp.GradScaler` take the device type as their first argument.

    ## Fix safety
    The fix passes `device.type`. Where the old code ran without CUDA, autocast
    was a no-op; now it is on for that device (bfloat16 on the CPU by default),
    which changes the numerics there.
    """

    code = "TP403"
    name = "deprecated-cuda-amp"
    intent = Intent.DEVICE
    message = "use `torch.amp.autocast(device.type)` / `torch.amp.GradScaler(device.type)`"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = _TAILS
    valid = (
        "import torch\n\nwith torch.amp.autocast(device.type):\n    y = model(x)\n",
        "import torch\n\ntry:\n    scaler = torch.amp.GradScaler(device.type)\n"
        "except (AttributeError, TypeError):  # torch < 2.3\n"
        "    scaler = torch.cuda.amp.GradScaler()\n",
    )
    invalid = (
        Example(
            "import torch\n"
            "\n"
            "scaler = torch.cuda.amp.GradScaler()\n"
            "with torch.cuda.amp.autocast(enabled=True):\n"
            "    y = model(x)\n",
            fixed="import torch\n"
            "\n"
            f"{DEVICE_LINE}"
            "\n"
            "scaler = torch.amp.GradScaler(device.type)\n"
            "with torch.amp.autocast(device.type, enabled=True):\n"
            "    y = model(x)\n",
            count=2,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        name = called(node, ctx, _TAILS)
        if name is None or name not in _AMP or _old_torch_arm(ctx):
            return
        if in_old_torch_fallback(ctx, lambda c: (ctx.qualname(c.func) or "").startswith(_NEW)):
            return  # `try: torch.amp.GradScaler(...) except AttributeError: <old spelling>`
        found, torch = ctx.device_at(node), ctx.torch_at(node)
        if found is None or torch is None:
            yield ctx.finding(self, node)  # no device or torch name is safe here: by hand
            return
        device, edits = found
        func = ctx.replace(node.func, f"{torch[0]}.amp.{_AMP[name]}")
        given: list[ast.AST] = [*node.args, *node.keywords]
        if given:
            at = min(ctx.start(a) for a in given)
            add = Edit(at, at, f"{device}.type, ")
        else:
            at = ctx.end(node) - 1
            add = Edit(at, at, f"{device}.type")
        if not edits:
            edits = torch[1]
        fix = Fix((func, add, *edits), FixSafety.UNSAFE, _ON_ELSEWHERE)
        yield ctx.finding(self, node, fix=fix)


_ON_ELSEWHERE = (
    "mixed precision now runs on MPS/XPU/CPU too, where the old call was a no-op: "
    "numerics change there"
)


def _old_torch_arm(ctx: Context) -> bool:
    """The ``else`` of a torch version test: the fallback for torches without ``torch.amp``."""
    child: ast.AST | None = None
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.If, ast.IfExp)) and child is not outer.test:
            orelse = outer.orelse if isinstance(outer.orelse, list) else [outer.orelse]
            if any(s is child for s in orelse) and "version" in ctx.segment(outer.test):
                return True
        child = outer
    return False
