"""What is chained to a tensor where it is made: dtype casts and in-place initializers.

``torch.from_numpy(a).float()`` is moved after the cast (half the bytes of a
float64 copy; float64 does not exist on MPS), ``torch.Tensor(2, 3).uniform_()``
after the initializer (drawn by the CPU's generator, as before). Syntax only.
"""

from __future__ import annotations

import ast

__all__ = ["cast_end", "initialized"]

_INITIALIZERS = frozenset(
    {"uniform_", "normal_", "random_", "bernoulli_", "exponential_", "geometric_",
     "cauchy_", "log_normal_", "fill_", "zero_", "copy_"}
)  # fmt: skip

_CASTS = frozenset(
    {"float", "half", "bfloat16", "double", "long", "int", "short", "bool", "byte", "char"}
)
_DTYPES = frozenset(
    {"float32", "float", "float16", "half", "bfloat16", "float64", "double", "int64", "long",
     "int32", "int", "int16", "short", "int8", "uint8", "bool"}
)  # fmt: skip


def cast_end(node: ast.Call, parents: dict[int, ast.AST]) -> ast.expr | None:
    """The last dtype cast chained to ``node`` (``.float()``, ``.to(torch.float32)``), if any."""
    expr: ast.expr = node
    end: ast.expr | None = None
    while True:
        up = parents.get(id(expr))
        if not (isinstance(up, ast.Attribute) and up.value is expr):
            return end
        call = parents.get(id(up))
        if not (isinstance(call, ast.Call) and call.func is up):
            return end
        plain = up.attr in _CASTS and not call.args and not call.keywords
        dtype = (
            up.attr == "to"
            and len(call.args) == 1
            and not call.keywords
            and isinstance(call.args[0], ast.Attribute)
            and call.args[0].attr in _DTYPES
        )
        if not (plain or dtype):
            return end
        expr = end = call


def drawn(node: ast.Call, parents: dict[int, ast.AST]) -> ast.expr | None:
    """``node`` with the in-place initializers chained to it where one of them draws from
    the generator (``torch.empty(n).normal_()``): made there with ``device=``, the device's
    generator would draw it, other numbers than the CPU's, so the port moves the drawn
    tensor (``.to(device)`` after the chain) instead; None where none draws."""
    end = initialized(node, parents)
    expr: ast.AST = end
    while expr is not node:
        assert isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
        if expr.func.attr in _DRAWS:
            return end
        expr = expr.func.value
    return None


_DRAWS = _INITIALIZERS - {"fill_", "zero_", "copy_"}


def initialized(node: ast.Call, parents: dict[int, ast.AST]) -> ast.expr:
    """``node`` with the in-place initializers chained to it (``.uniform_(-1, 1)``)."""
    expr: ast.expr = node
    while True:
        up = parents.get(id(expr))
        if not (isinstance(up, ast.Attribute) and up.attr in _INITIALIZERS):
            return expr
        call = parents.get(id(up))
        if not (isinstance(call, ast.Call) and call.func is up):
            return expr
        expr = call
