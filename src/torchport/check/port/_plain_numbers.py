"""Operands a side computation meets that live on no device: numbers, strings, sizes, dtypes.

Split from :mod:`~torchport.check.port._side_computations` (issue 31, for room): a tensor
that meets only these and tensors placed with it can be placed. Syntax only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

__all__ = ["plain_number"]

_CONSTANTS = ("torch.", "math.", "numpy.")  # their attributes: dtypes, `pi`, `inf`


def plain_number(expr: ast.expr, qualname: Callable[[ast.expr], str | None]) -> bool:
    """A number, a string, a dtype or a size: nothing that lives on a device."""
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.UnaryOp):
        return plain_number(expr.operand, qualname)
    if isinstance(expr, ast.BinOp):
        return plain_number(expr.left, qualname) and plain_number(expr.right, qualname)
    if isinstance(expr, ast.Attribute):  # `x.shape`, `torch.float32`, `math.pi`
        name = qualname(expr) or ""
        return expr.attr in {"shape", "ndim", "dtype"} or name.startswith(_CONSTANTS)
    if isinstance(expr, ast.Tuple | ast.List):
        return all(plain_number(e, qualname) for e in expr.elts)
    if isinstance(expr, ast.Subscript):
        return plain_number(expr.value, qualname)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        return expr.func.attr in {"item", "tolist", "size", "dim", "numel"}  # Python data
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id in {"len", "int", "float", "round"}
    )
