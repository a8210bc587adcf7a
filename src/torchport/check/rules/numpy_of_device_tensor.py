"""TP506 numpy-of-device-tensor: ``.numpy()`` of a tensor the port puts on the accelerator."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import in_no_grad, keyword
from torchport.check._port_facts import port_facts
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._snippets import DEVICE_LINE

_HEAD = "import torch\n\n" + DEVICE_LINE + "\nmodel = torch.nn.Linear(4, 2).to(device)\n"


class NumpyOfDeviceTensor(Rule):
    """## What it does
    Finds `.numpy()` on values that live on the model's device once the code
    is ported: a model's output, anything computed from it, and tensors
    made with `device=device` (`y.data.numpy()`, `loss.detach().numpy()`).

    ## Why is this bad?
    `.numpy()` raises for a tensor in accelerator memory. On the CPU,
    `.cpu()` returns the tensor itself, so the fix changes nothing there; it
    inserts `.cpu()` (and `.detach()` when the tensor may require grad and
    the code is not under `no_grad`).
    """

    code = "TP506"
    name = "numpy-of-device-tensor"
    intent = Intent.PORT
    default = False
    message = "call `.cpu()` before `.numpy()`: the tensor lives on the model's device"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    valid = (
        _HEAD + "out = model(x)\na = out.detach().cpu().numpy()\n",
        _HEAD + "a = torch.zeros(3).numpy()\n",
    )
    invalid = (
        Example(
            _HEAD
            + "out = model(x)\npred = out.argmax(1)\na = out.data.numpy()\nb = pred.numpy()\n",
            fixed=_HEAD + "out = model(x)\npred = out.argmax(1)\n"
            "a = out.data.cpu().numpy()\nb = pred.detach().cpu().numpy()\n",
            count=2,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "numpy" or node.args:
            return
        if keyword(node, "force") is not None:
            return
        facts = port_facts(ctx)
        scope = facts.scope_of.get(id(node))
        if scope is None or scope.module_method or not facts.on_device(func.value, scope):
            return
        receiver = func.value
        detached = (isinstance(receiver, ast.Attribute) and receiver.attr == "data") or (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Attribute)
            and receiver.func.attr == "detach"
        )
        at = ctx.end(receiver)
        text = ".cpu()" if detached or in_no_grad(ctx) else ".detach().cpu()"
        yield ctx.finding(self, node, fix=Fix((Edit(at, at, text),), FixSafety.SAFE))
