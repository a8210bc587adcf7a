"""TP104 legacy-tensor-constructor: ``torch.cuda.FloatTensor(...)`` and friends."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule

_DTYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8",
    "ShortTensor": "int16", "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool",
}  # fmt: skip


class LegacyTensorConstructor(Rule):
    """## What it does
    Finds the legacy typed constructors: `torch.FloatTensor(...)`,
    `torch.cuda.LongTensor(...)` and the rest of the family.

    ## Why is this bad?
    They are deprecated, take sizes or data depending on their arguments, and
    the `torch.cuda.*` ones exist only for CUDA. `torch.tensor(data, dtype=...)`
    and `torch.empty(*sizes, dtype=...)` say what they do and accept a `device`.

    The fix is offered when the arguments are plain sizes or one list/tuple of
    data; otherwise the call is only reported. `torch.cuda.*` constructors
    become `device="cuda"`: the fix keeps the device the code chose (TP101
    replaces it).
    """

    code = "TP104"
    name = "legacy-tensor-constructor"
    intent = Intent.DEVICE
    message = (
        "use `torch.tensor(data, dtype=..., device=...)` or `torch.empty(*sizes, dtype=..., "
        "device=...)` instead of the legacy typed constructor"
    )
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    call_attrs = frozenset(_DTYPES)
    valid = (
        "import torch\n\nx = torch.tensor([1.0, 2.0], dtype=torch.float32)\n",
        "import torch\n\nok = isinstance(x, torch.cuda.FloatTensor)\n",
    )
    invalid = (
        Example(
            "import torch\n\nx = torch.FloatTensor([1, 2])\n",
            fixed="import torch\n\nx = torch.tensor([1, 2], dtype=torch.float32)\n",
        ),
        Example(
            "import torch\n\nbuf = torch.cuda.LongTensor(4, 2)\n",
            fixed='import torch\n\nbuf = torch.empty(4, 2, dtype=torch.int64, device="cuda")\n',
        ),
        Example("import torch\n\nx = torch.FloatTensor(storage)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in _DTYPES:
            return
        name = ctx.qualname(func)
        if name not in (f"torch.{func.attr}", f"torch.cuda.{func.attr}"):
            return
        args = node.args
        torch = ctx.torch_at(node)
        if torch is None:
            yield ctx.finding(self, node)  # torch is optional here: no `import torch` to add
            return
        t, edits = torch
        parts: list[str]
        if len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
            factory, parts = "tensor", [ctx.segment(args[0])]
        elif args and all(isinstance(a, ast.Constant) and type(a.value) is int for a in args):
            factory, parts = "empty", [ctx.segment(a) for a in args]
        else:
            yield ctx.finding(self, node)
            return
        if node.keywords:
            yield ctx.finding(self, node)
            return
        parts.append(f"dtype={t}.{_DTYPES[func.attr]}")
        if name.startswith("torch.cuda."):
            # Keep the CUDA choice: replacing it is TP101's job (and a `noqa: TP101` keeps it).
            parts.append('device="cuda"')
        text = f"{t}.{factory}({', '.join(parts)})"
        yield ctx.finding(self, node, fix=Fix((ctx.replace(node, text), *edits), FixSafety.SAFE))
