"""``torch.cuda`` counts whose own expression already settles what they decide, for TP401
(benchmarks/RESULTS.md, issue 34, branch k34: its judged rows in other code over samples A-T).

* A ``torch.cuda.device_count()`` in an ``and`` whose later operand demands a CUDA device
  (``torch.cuda.device_count() > 1 and "cuda" in device.type``): wherever the device is not
  CUDA the ``and`` is false whatever the count says, and the count itself never raises (it
  is 0 without CUDA), so counting every accelerator changes nothing. A later test that
  holds on other devices too (``device.type != "cpu"``), an ``or``, or another call than a
  count (``torch.cuda.synchronize()`` runs before the test, and raises without CUDA) is not
  this.
* A call in the test of a conditional expression whose two arms are the same expression
  (``args.device if torch.cuda.device_count() else args.device``): the answer picks nothing.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.semantic._devices import cuda_test

__all__ = ["settled"]

# What may stand between the call and the `and` or the conditional: `count() > 1`, `not`
_WRAPPERS = (ast.Compare, ast.UnaryOp, ast.BinOp)


def settled(node: ast.Call, function: str, ctx: Context) -> bool:
    """Whether the answer of ``node`` (``torch.cuda.<function>(...)``) decides nothing."""
    child: ast.AST = node
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, ast.IfExp):
            from torchport.check.port._device_name import same_tree  # on first use; no cycles

            return child is outer.test and same_tree(outer.body, outer.orelse)
        if isinstance(outer, ast.BoolOp):
            if not (function == "device_count" and isinstance(outer.op, ast.And)):
                return False
            after = outer.values[next(i for i, v in enumerate(outer.values) if v is child) + 1 :]
            return any(cuda_test(value) is True for value in after)
        if not isinstance(outer, _WRAPPERS):
            return False
        child = outer
    return False
