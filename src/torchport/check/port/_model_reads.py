"""Models the flow finds called through a partial or taken back out of a literal.

Read by :meth:`~torchport.check.port._device_flow.DeviceFlow.operands_of`: what such a call
is given goes to where the model runs, so it meets the model as a forward's input does.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._device_flow import ModelQuestions, PortScope

__all__ = ["model_from_a_literal", "partial_of_a_model"]


def partial_of_a_model(
    call: ast.Call, scope: PortScope, ctx: Context, models: ModelQuestions
) -> bool:
    """``f(x)`` where ``f = functools.partial(step, model)``: ``x`` goes to where the model
    runs, so it meets the model as a forward's input does (the partial itself is
    reported: what ``step`` does with them, the port does not follow)."""
    func = call.func
    if not isinstance(func, ast.Name):
        return False
    found = ctx.scopes.bindings(func.id, func)
    value = found[0].value if len(found) == 1 else None
    return (
        isinstance(value, ast.Call)
        and ctx.qualname(value.func) == "functools.partial"
        and any(
            models.builds_model(a, scope)
            for a in [*value.args[1:], *(k.value for k in value.keywords)]
        )
    )


def model_from_a_literal(
    func: ast.expr, scope: PortScope, ctx: Context, models: ModelQuestions
) -> bool:
    """``m(x)`` with ``for m in [model]``, or ``models["a"](x)`` with ``models = {"a":
    model}``: a model taken back out of a literal holding one. ``x`` meets it as a
    forward's input does (the container is still reported: TP523)."""
    scopes = ctx.scopes
    holder: ast.expr | None = None
    if isinstance(func, ast.Name):
        found = scopes.bindings(func.id, func)
        loop = scopes.parent(found[0].node) if len(found) == 1 else None
        if isinstance(loop, (ast.For, ast.AsyncFor)) and loop.target is found[0].node:
            holder = loop.iter
    elif isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):
        found = scopes.bindings(func.value.id, func.value)
        holder = found[0].value if len(found) == 1 else None
    if isinstance(holder, (ast.List, ast.Tuple, ast.Set)):
        items = list(holder.elts)
    elif isinstance(holder, ast.Dict):
        items = list(holder.values)
    else:
        return False
    return any(models.builds_model(i, scope) for i in items)
