"""Which device expressions the device flow reads as the CPU, and which follow a tensor.

What :class:`~torchport.check.port._device_flow.DeviceFlow` asks (``to_cpu``, ``names_cpu``):
``x.to("cpu")`` is a move to the host, not to the device; ``device = "cpu"`` (or a
parameter defaulting to it) names the CPU whatever the name says; ``device = out.device``
follows a tensor. Split from the flow's module for room (issue 31).
"""

from __future__ import annotations

import ast

from torchport.check.port._calls import follows_a_tensor

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context
    from torchport.check.port._device_flow import PortScope

__all__ = ["follows_a_tensor_name", "names_cpu", "to_cpu"]


def to_cpu(ctx: Context, module: PortScope, call: ast.expr, scope: PortScope) -> bool:
    """Whether ``call`` is ``x.to(<the CPU>)``: a move to the host, not to the device."""
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "to"
    ):
        return False
    target = call.args[0] if call.args else None
    target = target or next((k.value for k in call.keywords if k.arg == "device"), None)
    return target is not None and names_cpu(ctx, module, target, scope)


def names_cpu(
    ctx: Context, module: PortScope, expr: ast.expr, scope: PortScope, depth: int = 0
) -> bool:
    """Whether a device expression is the CPU (``"cpu"``, ``torch.device("cpu")``, a name
    bound only to those, a parameter whose default is one), whatever its name says."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str) and expr.value.partition(":")[0] == "cpu"
    if isinstance(expr, ast.Call):
        return (
            ctx.qualname(expr.func) == "torch.device"
            and len(expr.args) >= 1
            and names_cpu(ctx, module, expr.args[0], scope, depth)
        )
    if not isinstance(expr, ast.Name) or depth > 3:
        return False
    node = scope.node
    if expr.id in scope.local and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        positional = [*a.posonlyargs, *a.args]
        tail = positional[len(positional) - len(a.defaults) :]
        pairs = list(zip(tail, a.defaults, strict=True))
        pairs += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
        for param, default in pairs:
            if param.arg == expr.id:
                return names_cpu(ctx, module, default, scope, depth + 1)
    where = scope if expr.id in scope.local else module
    if expr.id in where.loop_bound:
        return False
    values = where.values_of(expr.id)
    return bool(values) and all(names_cpu(ctx, module, v, where, depth + 1) for v in values)


def follows_a_tensor_name(expr: ast.expr, scope: PortScope) -> bool:
    """``x.device``, or a name bound only to such (``device = output.device``)."""
    if follows_a_tensor(expr):
        return True
    if not isinstance(expr, ast.Name):
        return False
    values = scope.values_of(expr.id) if expr.id in scope.local else []
    return bool(values) and all(follows_a_tensor(v) for v in values)
