"""Datasets whose tensors may already live on a device (TP303).

``data = torch.tensor(values).to(f"cuda:{gpu}")`` then ``DataLoader(IndexDataset(idx,
data))`` (pytorch_geometric_temporal's GPU-resident mode): the batches are slices of
device tensors. Pinning them raises ("cannot pin 'torch.cuda.FloatTensor'"), and
there is no host copy to speed up, so ``pin_memory=`` advice would break that path.
A dataset counts as possibly resident when it is built, in the loader's own function
(or module), from a value that some assignment there moves to a device (``.cuda()``,
``.to(x)`` with ``x`` not the CPU nor a dtype) or makes there, above the loader (a factory's
``device=`` that is not the CPU), directly (``TensorDataset(x.cuda(), y)``) or through
a name (``ds = MyDataset(data)``, ``data = ...cuda()``).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import is_cpu_target, keyword

__all__ = ["dataset_may_be_on_a_device"]


def dataset_may_be_on_a_device(loader: ast.Call, ctx: Context) -> bool:
    """Whether ``DataLoader(dataset, ...)``'s dataset is built from device-resident data."""
    data = loader.args[0] if loader.args else getattr(keyword(loader, "dataset"), "value", None)
    if data is None:
        return False
    scope = _enclosing_scope(ctx)
    key = f"resident_datasets.assignments:{id(scope)}"  # Context.memo's: one walk per scope
    kept = ctx.memo.get(key)
    if not (isinstance(kept, tuple) and kept[0] is scope):
        kept = ctx.memo[key] = (scope, _assignments(scope))
    every: dict[str, list[tuple[int, ast.expr]]] = kept[1]
    seen: set[str] = set()
    todo: list[ast.expr] = [data]
    while todo:
        expr = todo.pop()
        if isinstance(expr, ast.Name):
            if expr.id in seen:
                continue
            seen.add(expr.id)
            todo.extend(v for line, v in every.get(expr.id, ()) if line < loader.lineno)
            continue
        if _on_a_device(expr, ctx):
            return True
        if isinstance(expr, ast.Call):  # `Dataset(a, b=c)`: what it is built from
            todo.extend(expr.args)
            todo.extend(k.value for k in expr.keywords)
        elif isinstance(expr, (ast.Tuple, ast.List, ast.Starred, ast.Subscript)):
            todo.extend(n for n in ast.iter_child_nodes(expr) if isinstance(n, ast.expr))
    return False


def _enclosing_scope(ctx: Context) -> ast.AST:
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return outer
    return ctx.tree


def _assignments(scope: ast.AST) -> dict[str, list[tuple[int, ast.expr]]]:
    """Every value each plain name is assigned in ``scope``, with the assignment's line: a
    loader reads those above its own line only.

    Not below: ``for x, y in loader: x = x.to(device)`` moves a batch, not the data the
    loader was built from, even where the names are the same.
    """
    bound: dict[str, list[tuple[int, ast.expr]]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append((node.lineno, node.value))
        elif (
            isinstance(node, (ast.AnnAssign, ast.AugAssign))
            and node.value is not None
            and isinstance(node.target, ast.Name)
        ):
            bound.setdefault(node.target.id, []).append((node.lineno, node.value))
    return bound


def _on_a_device(expr: ast.expr, ctx: Context) -> bool:
    """``x.cuda()``, ``x.to(dev)`` (not the CPU, not a dtype) or ``f(..., device=dev)``
    (not the CPU), at the outside of ``expr`` or through the methods chained on it
    (``torch.tensor(v).to(dev).float()``)."""
    while isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr == "cuda":
            return True
        if isinstance(func, ast.Attribute) and func.attr == "to" and expr.args:
            target = expr.args[0]
            if not (is_cpu_target(target, ctx) or _dtype(target, ctx)):
                return True
        device = keyword(expr, "device")
        if device is not None and not is_cpu_target(device.value, ctx):
            return True
        if not isinstance(func, ast.Attribute):
            return False
        expr = func.value
    return False


def _dtype(expr: ast.expr, ctx: Context) -> bool:
    """``torch.float32``, or a name that says it is a dtype (``.to(weight_dtype)``)."""
    if "dtype" in ctx.segment(expr).lower():
        return True
    name = ctx.qualname(expr) if isinstance(expr, (ast.Attribute, ast.Name)) else None
    if name is None or not name.startswith("torch."):
        return False
    tail = name.rpartition(".")[2]
    return tail in _DTYPES


_DTYPES = frozenset(
    {"float", "float16", "float32", "float64", "bfloat16", "half", "double", "int", "int8",
     "int16", "int32", "int64", "uint8", "long", "short", "bool", "complex64", "complex128",
     "cfloat", "cdouble"}
)  # fmt: skip
