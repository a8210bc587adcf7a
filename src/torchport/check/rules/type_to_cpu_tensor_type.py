"""TP509 type-to-cpu-tensor-type: ``x.type(torch.FloatTensor)`` on a tensor bound for the model."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._port import port_facts

# The CPU tensor types and the dtype each one holds.
_DTYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32",
    "ShortTensor": "int16", "CharTensor": "int8", "ByteTensor": "uint8", "BoolTensor": "bool",
}  # fmt: skip
_HEAD = "import torch\n\nmodel = torch.nn.Linear(2, 2)\n"


class TypeToCpuTensorType(Rule):
    """## What it does
    Finds `x.type(torch.FloatTensor)` (and the other CPU tensor types,
    `torch.LongTensor`...) on tensors that meet the model, or inside a
    module's methods.

    ## Why is this bad?
    `torch.FloatTensor` is the type of a float32 tensor *on the CPU*:
    `.type(torch.FloatTensor)` converts the dtype and also copies a tensor
    that is on an accelerator back to the CPU, undoing the port. The fix
    converts the dtype only, `x.type(torch.float32)`, which on the CPU gives
    exactly the same tensor.
    """

    code = "TP509"
    name = "type-to-cpu-tensor-type"
    intent = Intent.PORT
    default = False
    message = "pass a dtype (`torch.float32`), not a CPU tensor type, to keep the tensor's device"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    call_attrs = frozenset({"type"})
    valid = (
        _HEAD + "x = torch.cat((a, b)).type(torch.float32)\nout = model(x)\n",
        _HEAD + "x = a.type(torch.FloatTensor)\nprint(x)\n",
        # a name that may hold a dtype (which has no `.dtype`): left as it is
        _HEAD + "def f(x, dtype):\n    return model(x.type(dtype))\n",
        _HEAD + "dtype = torch.float32\nout = model(a.type(dtype))\n",
    )
    invalid = (
        Example(
            _HEAD + "x = torch.cat((a, b), 0).type(torch.FloatTensor)\n"
            "y = labels.type(torch.LongTensor)\n"
            "loss = torch.nn.functional.cross_entropy(model(x), y)\n",
            fixed=_HEAD + "x = torch.cat((a, b), 0).type(torch.float32)\n"
            "y = labels.type(torch.int64)\n"
            "loss = torch.nn.functional.cross_entropy(model(x), y)\n",
            count=2,
        ),
        Example(
            _HEAD + "dtype = torch.FloatTensor\n"
            "x = torch.randn(3, 2).type(dtype)\nw = dtype(2, 2)\nout = model(x)\n",
            fixed=_HEAD + "dtype = torch.FloatTensor\n"
            "x = torch.randn(3, 2).type(dtype.dtype)\nw = dtype(2, 2)\nout = model(x)\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "type" and len(node.args) == 1):
            return
        arg = node.args[0]
        if node.keywords:
            return
        # `dtype = torch.FloatTensor` then `.type(dtype)`: the name holds the CPU type.
        held = ctx.value_of(arg) if isinstance(arg, ast.Name) else None
        named = arg if held is None else held
        if not isinstance(named, ast.Attribute) or not _names_a_cpu_tensor_type(named, ctx):
            return
        if not _meets_the_device(node, ctx):
            return
        if held is not None:  # the name may serve as a type elsewhere: its dtype here only
            text = f"{ctx.segment(arg)}.dtype"
        else:
            text = f"{ctx.segment(named.value)}.{_DTYPES[named.attr]}"
        yield ctx.finding(self, node, fix=Fix((ctx.replace(arg, text),), FixSafety.SAFE))


def _names_a_cpu_tensor_type(named: ast.Attribute, ctx: Context) -> bool:
    """``torch.FloatTensor`` and the like: torch's CPU tensor types."""
    return named.attr in _DTYPES and ctx.qualname(named) == f"torch.{named.attr}"


def _meets_the_device(node: ast.Call, ctx: Context) -> bool:
    """In a module's method, or where the value meets a device tensor or model."""
    facts = port_facts(ctx)
    scope = facts.scope_of.get(id(node))
    if scope is None:
        return False
    key = id(node)
    return scope.module_method or key in scope.sink_nodes or key in scope.reach_values
