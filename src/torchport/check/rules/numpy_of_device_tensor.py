"""TP506 numpy-of-device-tensor: ``.numpy()`` of a tensor the port puts on the accelerator."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import in_no_grad, keyword
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._port import PortFacts, port_facts
from torchport.check.rules._snippets import DEVICE_LINE

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortScope

_HEAD = "import torch\n\n" + DEVICE_LINE + "\nmodel = torch.nn.Linear(4, 2).to(device)\n"


class NumpyOfDeviceTensor(Rule):
    """## What it does
    Finds `.numpy()` in code the port moves a model in, on any tensor not
    plainly brought to the CPU first: a model's output, anything computed
    from it, tensors made with `device=device`, and tensors whose origin the
    port cannot follow (lists of outputs, function arguments), and in the
    methods of an `nn.Module` (a `.numpy()` read inside `forward`), which run
    wherever the module is moved.

    ## Why is this bad?
    `.numpy()` raises for a tensor in accelerator memory. On the CPU,
    `.cpu()` returns the tensor itself, so the fix changes nothing there (and
    is free for a tensor that was on the CPU all along); it
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
    call_attrs = frozenset({"numpy"})
    valid = (
        _HEAD + "out = model(x)\na = out.detach().cpu().numpy()\n",
        _HEAD + "a = out.to('cpu').data.numpy()\n",
        "import torch\n\na = torch.zeros(3).numpy()\n",
    )
    invalid = (
        Example(  # inside forward: the module runs where it was moved
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
            "        return x * float(x.detach().numpy().max())\n",
            fixed="import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
            "        return x * float(x.detach().cpu().numpy().max())\n",
        ),
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
        if not _plain_numpy_call(node) or not isinstance(func, ast.Attribute):
            return
        facts = port_facts(ctx)
        scope = facts.scope_of.get(id(node))
        if scope is None or not _devices_in_play(scope, facts):
            return
        receiver = func.value
        if not facts.on_device(receiver, scope) and _on_host(receiver):
            return
        at = ctx.receiver_end(func)  # `(10 - idx).numpy()`: after the parentheses
        text = ".cpu()" if _detached(receiver) or in_no_grad(ctx) else ".detach().cpu()"
        yield ctx.finding(self, node, fix=Fix((Edit(at, at, text),), FixSafety.SAFE))


def _plain_numpy_call(node: ast.Call) -> bool:
    """``x.numpy()`` without arguments (``force=True`` copies to the host itself)."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr != "numpy" or node.args:
        return False
    return keyword(node, "force") is None


def _devices_in_play(scope: PortScope, facts: PortFacts) -> bool:
    """A module's own method (run on the module's device), or user code in a file with models."""
    if scope.module_method and bool(facts.known.classes):
        return True
    return not scope.internal and facts.has_models


def _detached(receiver: ast.expr) -> bool:
    """``x.data`` or ``x.detach()``: already cut from the graph."""
    if isinstance(receiver, ast.Attribute) and receiver.attr == "data":
        return True
    return (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr == "detach"
    )


_SAME_PLACE = frozenset({"data", "detach", "clone", "float", "double", "long", "int", "squeeze"})


def _on_host(expr: ast.expr) -> bool:
    """Whether ``expr`` plainly ends on the CPU (``x.cpu().data``, ``x.to("cpu")``)."""
    for _ in range(8):
        if isinstance(expr, ast.Attribute) and expr.attr in _SAME_PLACE:
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            attr = expr.func.attr
            if attr == "cpu":
                return True
            if attr == "to" and expr.args:
                first = expr.args[0]
                return isinstance(first, ast.Constant) and first.value == "cpu"
            if attr not in _SAME_PLACE:
                return False
            expr = expr.func.value
        else:
            return False
    return False
