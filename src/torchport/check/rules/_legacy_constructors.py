"""The legacy typed constructors (``torch.FloatTensor(...)``, ``torch.cuda.LongTensor(...)``).

Shared by TP104 (the ``torch.cuda.*`` family: CUDA only, on by default) and TP903
(the CPU family: deprecated but runs on every device, off by default): which call
is one, and the ``torch.tensor``/``torch.empty`` call that replaces it.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._rule import Fix, FixSafety

__all__ = ["DTYPES", "legacy_constructor", "replacement"]

DTYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8",
    "ShortTensor": "int16", "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool",
}  # fmt: skip


def legacy_constructor(node: ast.AST, ctx: Context) -> str | None:
    """``"torch"`` or ``"torch.cuda"`` when ``node`` calls that module's typed constructor."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr not in DTYPES:
        return None
    name = ctx.qualname(func)
    for module in ("torch", "torch.cuda"):
        if name == f"{module}.{func.attr}":
            return module
    return None


def replacement(node: ast.Call, ctx: Context) -> Fix | None:
    """The safe fix: ``torch.tensor(data, dtype=...)`` or ``torch.empty(*sizes, dtype=...)``.

    None when the arguments are neither plain integer sizes nor one list/tuple of
    data (a storage, a NumPy array, keywords), or torch cannot be named there.
    A ``torch.cuda`` constructor keeps ``device="cuda"``: replacing CUDA is TP101's
    job (and a ``noqa: TP101`` keeps it).
    """
    assert isinstance(node.func, ast.Attribute)
    torch = ctx.torch_at(node)
    if torch is None or node.keywords:
        return None
    t, edits = torch
    args = node.args
    parts: list[str]
    if len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
        factory, parts = "tensor", [ctx.segment(args[0])]
    elif args and all(isinstance(a, ast.Constant) and type(a.value) is int for a in args):
        factory, parts = "empty", [ctx.segment(a) for a in args]
    else:
        return None
    parts.append(f"dtype={t}.{DTYPES[node.func.attr]}")
    if legacy_constructor(node, ctx) == "torch.cuda":
        parts.append('device="cuda"')
    text = f"{t}.{factory}({', '.join(parts)})"
    return Fix((ctx.replace(node, text), *edits), FixSafety.SAFE)
