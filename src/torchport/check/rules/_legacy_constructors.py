"""The legacy typed constructors (``torch.FloatTensor(...)``, ``torch.cuda.LongTensor(...)``).

Shared by TP104 (the ``torch.cuda.*`` family: CUDA only, on by default) and TP903
(the CPU family: deprecated but runs on every device, off by default): which call
is one, and the ``torch.tensor``/``torch.empty`` call that replaces it; and by TP522,
where the CPU family is given a device value (:func:`refused_on_device`).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._rule import Fix, FixSafety

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["DTYPES", "legacy_constructor", "refused_on_device", "replacement"]

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


def refused_on_device(
    node: ast.AST, ctx: Context, on_device: Callable[[ast.expr], bool]
) -> str | None:
    """What to do where ``node`` calls a CPU typed constructor (``torch.FloatTensor(x)``) with
    a value ``on_device`` says is on the device: it builds a CPU tensor and raises on a
    device one ("expected TensorOptions(... device=cpu ...)", CUDA and the simulated
    accelerator alike). None elsewhere."""
    if legacy_constructor(node, ctx) != "torch":
        return None
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    if not node.args or _rebound_by_its_statement(node.args[0], ctx):
        return None  # `s = torch.FloatTensor(s)`: the read sees the binding before this one
    if not on_device(node.args[0]):
        return None
    text = ast.unparse(node.args[0])
    named = f"`{text}`" if len(text) <= 40 else "its argument"
    return (
        f"`{ctx.segment(node.func)}(...)` builds a CPU tensor and raises on {named}, which is "
        f"on the device: convert it where it is (`.to(torch.{DTYPES[node.func.attr]})`)"
    )


def _rebound_by_its_statement(given: ast.expr, ctx: Context) -> bool:
    """``given`` is a name the statement holding the call binds (``s = torch.unsqueeze(
    torch.FloatTensor(s), 0)`` of a parameter ``s``): the device values that binding makes
    are not what the call reads."""
    if not isinstance(given, ast.Name):
        return False
    stmt = next((a for a in reversed(ctx.ancestors) if isinstance(a, ast.stmt)), None)
    if isinstance(stmt, ast.Assign):
        targets = [n for t in stmt.targets for n in ast.walk(t)]
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        targets = [stmt.target]
    else:
        return False
    return any(isinstance(t, ast.Name) and t.id == given.id for t in targets)


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
