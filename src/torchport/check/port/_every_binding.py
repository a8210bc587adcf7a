"""Whether a value is on the device by every binding it reads, not by one of them.

The flow (:class:`~torchport.check.port._device_flow.DeviceFlow`) is flow-insensitive: a
name is a device value wherever one binding makes it one. That is the right question for
a sink (what meets the name must be moved), and too wide a one for a read that the run
would stop at: ``X = np.arange(n)`` read by ``sns.lineplot(x=X)``, then ``for X, y in
loader:`` with the batch moved, makes ``X`` a device value at the plot too, where the run
reads the array. :func:`surely_on_device` follows the value back through its bindings and
says yes only where each of them is a device value (an empty list or dict aside: what goes
into it decides, and the flow already asked), a numpy or host library's result never being
one. It is asked where TP522 reports a host library's call (scikit-learn, pandas, ...).
"""

from __future__ import annotations

import ast

from torchport.check.port._calls import host_library, moves_to_program_device
from torchport.check.port._device_flow import PortScope

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = ["surely_on_device"]

_DEPTH = 6  # bindings followed at most this deep; past it, the flow's word


def surely_on_device(expr: ast.expr, scope: PortScope, facts: PortFacts, depth: int = 0) -> bool:
    """Whether ``expr`` is a device value in ``scope`` by every binding it reads (see above)."""
    if not facts.on_device(expr, scope):
        return False
    if depth >= _DEPTH:
        return True
    deeper = depth + 1
    if isinstance(expr, ast.Attribute | ast.Subscript | ast.Starred):
        return surely_on_device(expr.value, scope, facts, deeper)
    if isinstance(expr, ast.Name):
        return _every_binding(expr.id, scope, facts, deeper)
    if isinstance(expr, ast.BinOp):
        return any(surely_on_device(s, scope, facts, deeper) for s in (expr.left, expr.right))
    if isinstance(expr, ast.Compare):
        operands = (expr.left, *expr.comparators)
        return any(surely_on_device(o, scope, facts, deeper) for o in operands)
    if isinstance(expr, ast.Tuple | ast.List):
        return any(surely_on_device(e, scope, facts, deeper) for e in expr.elts)
    if isinstance(expr, ast.ListComp | ast.GeneratorExp | ast.SetComp):
        return any(surely_on_device(g.iter, scope, facts, deeper) for g in expr.generators) or (
            surely_on_device(expr.elt, scope, facts, deeper)
        )
    if isinstance(expr, ast.Call):
        return _call(expr, scope, facts, deeper)
    return True  # the flow's word


def _call(call: ast.Call, scope: PortScope, facts: PortFacts, depth: int) -> bool:
    """A call the flow takes for a device value: a forward, an own function returning one or a
    move is one; a numpy or host library's result is none; else as what it is given."""
    flow = facts.flow
    if facts.forward(call, scope) or id(call) in flow.device_calls:
        return True
    if moves_to_program_device(call) or any(k.arg == "device" for k in call.keywords):
        return True
    name = facts.ctx.qualname(call.func) or ""
    if name.startswith("numpy.") or host_library(name):
        return False
    func = call.func
    given = [*call.args, *(k.value for k in call.keywords)]
    if isinstance(func, ast.Attribute):
        given.insert(0, func.value)  # `out.argmax(1)`: as `out`
    return any(surely_on_device(a, scope, facts, depth) for a in given)


def _every_binding(name: str, scope: PortScope, facts: PortFacts, depth: int) -> bool:
    """Each value ``name`` is bound to where ``scope`` reads it is a device value."""
    where = scope if name in scope.local else facts.module
    values = where.values_of(name)
    if not values:
        return True  # a parameter or a loop's target only: the flow's word
    return all(_empty(v) or surely_on_device(v, where, facts, depth) for v in values)


def _empty(value: ast.expr) -> bool:
    """``[]``, ``{}``: what goes in decides (the flow asked it)."""
    if isinstance(value, ast.List):
        return not value.elts
    return isinstance(value, ast.Dict) and not value.keys
