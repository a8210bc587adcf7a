"""TP201 numpy-without-cpu: ``x.numpy()`` on a tensor that may live on an accelerator."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import (
    TENSOR_FACTORIES,
    in_no_grad,
    is_cpu_target,
    keyword,
    method_name,
    receiver_end,
)
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.semantic._residence import known_on_device

# Methods that keep a tensor where it is: look through them for `.cpu()` / `.detach()`.
_SAME_DEVICE = frozenset(
    {"detach", "clone", "float", "double", "half", "long", "int", "squeeze", "view", "reshape",
     "flatten", "contiguous", "sum", "mean"}
)  # fmt: skip


class NumpyWithoutCpu(Rule):
    """## What it does
    Finds `x.numpy()` on a tensor known to live on an accelerator: moved there
    (`.to(device)`, `.cuda()`), made there (`device=`), or computed from such a
    tensor (`model(x.to(device))`), with nothing before it that brings it back.

    ## Why is this bad?
    `.numpy()` raises for a tensor on CUDA, MPS or any accelerator ("can't
    convert cuda:0 device type tensor to numpy"), and for a tensor that
    requires grad. The code works on a CPU-only machine and breaks on the
    first GPU. Call `.detach().cpu().numpy()` (`.cpu()` is free for a CPU
    tensor).

    Tensors whose place is unknown are left alone: most bare `.numpy()` calls in
    real code are on CPU tensors (data pipelines, exports), and a rule that
    guesses there is wrong more often than right.

    The fix inserts `.cpu()`, and `.detach()` too unless the tensor is already
    detached or the code runs under `torch.no_grad()`/`inference_mode()`.

    ## Why is it off by default?
    Under 90% real on the judged samples (0 of 2); `--extend-select TP201` runs it as before.
    """

    code = "TP201"
    name = "numpy-without-cpu"
    intent = Intent.DEVICE
    default = False
    message = "call `.detach().cpu().numpy()` (`.cpu().numpy()` under no_grad), not bare `.numpy()`"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    call_attrs = frozenset({"numpy"})
    valid = (
        "a = out.detach().cpu().numpy()\n",
        'a = out.to("cpu").numpy()\n',
        "import torch\n\na = torch.zeros(3).numpy()\n",
        "a = out.numpy(force=True)\n",
        "import onnx_ir as ir\n\na = ir.tensor(x).numpy()\n",
        "a = out.numpy()\n",
        "out = model(x.to(device))\nout = out.cpu()\na = out.numpy()\n",
    )
    invalid = (
        Example(
            "out = model(x.to(device))\na = out.numpy()\n",
            fixed="out = model(x.to(device))\na = out.detach().cpu().numpy()\n",
        ),
        Example(
            "import torch\n\nwith torch.no_grad():\n    p = model(x.cuda()).softmax(-1).numpy()\n",
            fixed="import torch\n\n"
            "with torch.no_grad():\n"
            "    p = model(x.cuda()).softmax(-1).cpu().numpy()\n",
        ),
        Example(
            'a = out.to("cuda").detach().numpy()\n',
            fixed='a = out.to("cuda").detach().cpu().numpy()\n',
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if method_name(node) != "numpy" or node.args or keyword(node, "force") is not None:
            return
        assert isinstance(node.func, ast.Attribute)
        detached = _detached_unless_on_the_cpu(node.func.value, ctx)
        if detached is None:
            return  # made on the CPU, or by another library (numpy, onnx...)
        if not known_on_device(node.func.value, ctx):
            return  # most likely a CPU tensor: see the docstring
        at = receiver_end(node, ctx)
        text = ".cpu()" if detached or in_no_grad(ctx) else ".detach().cpu()"
        yield ctx.finding(self, node, fix=Fix((Edit(at, at, text),), FixSafety.SAFE))


def _detached_unless_on_the_cpu(expr: ast.expr, ctx: Context) -> bool | None:
    """Follow the chain that made the value: whether it was detached on the way.

    ``.data`` and ``.detach()`` detach; names are followed to what they are bound to.
    None when the chain shows the value is no device tensor: made on the CPU
    (``torch.from_numpy``, a factory without ``device=``, ``.cpu()``, ``.to("cpu")``) or
    by another library.
    """
    detached = False
    for _ in range(8):  # a chain of a few methods at most
        if isinstance(expr, ast.Name):
            bound = ctx.value_of(expr)
            if bound is None:
                break
            expr = bound
            continue
        if isinstance(expr, ast.Attribute) and expr.attr == "data":
            detached = True
            expr = expr.value
            continue
        if not isinstance(expr, ast.Call):
            break
        name = ctx.qualname(expr.func)
        if name is not None and not name.startswith("torch."):
            return None  # made by another library (numpy, onnx...): not a torch tensor
        if name == "torch.from_numpy" or (
            name in TENSOR_FACTORIES and keyword(expr, "device") is None
        ):
            return None  # made on the CPU
        method = method_name(expr)
        if method == "cpu" or (method == "to" and expr.args and is_cpu_target(expr.args[0], ctx)):
            return None
        if method not in _SAME_DEVICE:
            break
        detached = detached or method == "detach"
        assert isinstance(expr.func, ast.Attribute)
        expr = expr.func.value
    return detached
