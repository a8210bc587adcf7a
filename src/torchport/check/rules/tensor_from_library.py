"""TP521 tensor-from-library: a tensor made by a library the port cannot see into."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.port._facts import PortFacts, PortScope, port_facts

_HEAD = "import torch\nfrom PIL import Image\nfrom torchvision import transforms\n\n"
_MODEL = "model = torch.nn.Linear(4, 2)\n"
# numpy arrays meeting device values are TP522's; builtins make no tensors.
_NOT_TENSORS = frozenset({"numpy", "builtins", "math", "random"})


class TensorFromLibrary(Rule):
    """## What it does
    Reports values that meet the model straight from a call into another
    library (`transforms.ToTensor()(img)`, `tokenizer(text)`,
    `some_lib.load(...)`): the port cannot see whether they are tensors, or
    where they live, so it does not move them.

    ## Why is this bad?
    Such tensors are made on the CPU; once the model is on an accelerator
    they fail its first forward. Whether `.to(device)` is right for them
    (a tensor), or they need their fields moved (a dict, a `BatchEncoding`),
    depends on that library: move them yourself.
    """

    code = "TP521"
    name = "tensor-from-library"
    intent = Intent.PORT
    default = False
    message = "move this value to `device` yourself: it comes from a library the port cannot see"
    node_types = (ast.Module,)  # the operands are found once per file
    valid = (
        _HEAD + _MODEL + "x = torch.zeros(2, 4)\nout = model(x)\n",
        _HEAD + _MODEL + "def f(model, x):\n    return model(x)\n",
    )
    invalid = (
        Example(
            _HEAD + _MODEL + "to_tensor = transforms.ToTensor()\n"
            "x = to_tensor(Image.open('cat.png'))\n"
            "out = model(x)\n"
        ),
        Example(_HEAD + _MODEL + "import timm_utils\n\nout = model(timm_utils.load_image(p))\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        facts = port_facts(ctx)
        for operand, scope in facts.operands:
            source = None
            if isinstance(operand, ast.Call):
                source = _library(operand, facts, scope, ctx)
            elif isinstance(operand, ast.Name) and operand.id not in scope.moved:
                values = facts.bindings(operand.id, scope)
                found = [_library(v, facts, scope, ctx) for v in values or ()]
                source = found[0] if found and all(found) else None
            if source is not None:
                message = (
                    f"move this value to `device` yourself: it comes from `{source}`, "
                    "which the port cannot see into"
                )
                yield ctx.finding(self, operand, message=message)


def _library(expr: ast.expr, facts: PortFacts, scope: PortScope, ctx: Context) -> str | None:
    """The library callable that made ``expr``, when it is a call into one (not torch)."""
    if not isinstance(expr, ast.Call) or facts.builds_model(expr, scope):
        return None
    name = ctx.qualname(expr.func)
    if name is None and isinstance(expr.func, ast.Name):
        # `to_tensor(img)` where `to_tensor = transforms.ToTensor()` at module level
        made = facts.bindings(expr.func.id, scope)
        if made and len(made) == 1 and isinstance(made[0], ast.Call):
            name = ctx.qualname(made[0].func)
    if name is None or name.startswith("torch.") or name.partition(".")[0] in _NOT_TENSORS:
        return None
    return name
