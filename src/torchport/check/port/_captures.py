"""Tensors a lambda or a function captures, where it is given a device value.

``f = lambda t: t * scale`` then ``f(model(x))``: ``scale`` meets the output
inside ``f``, where the flow of the calling scope does not look. The names such a
callee reads and does not bind itself reach the device, in the scope that binds
them (they are moved where they are made, or reported). And ``f(x)`` where ``f``
reads a weight or a device value it does not bind: ``x`` meets the device there.
"""

from __future__ import annotations

import ast
import weakref

from torchport.check.port._device_flow import PortScope

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = ["mark_captured"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def mark_captured(facts: PortFacts, scope: PortScope) -> None:
    """Add what the callees ``scope`` calls capture to the reach (see the module docstring)."""
    flow = facts.flow
    for node in scope.nodes:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        callee = _callee_body(facts, node.func, scope)
        if callee is None:
            continue
        body, own, outer = callee
        args = [*node.args, *(k.value for k in node.keywords)]
        if not any(flow.on_device(a, scope) for a in args):
            if isinstance(body, ast.expr) and _reads_device(facts, body, own, outer):
                for arg in args:  # `f(x)` where `f = lambda t: t * w` and `w` is a weight
                    flow.operands.append((arg, scope))
                    flow.mark(arg, scope.reach, scope.sink_nodes)
            continue
        for n in ast.walk(body):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in own:
                holder = outer if n.id in outer.local else facts.module
                if n.id not in holder.models and n.id not in facts.functions:
                    holder.reach.add(n.id)


def _reads_device(facts: PortFacts, body: ast.AST, own: set[str], outer: PortScope) -> bool:
    """Whether a lambda's body reads a device value or a model it does not bind."""
    for n in ast.walk(body):
        if isinstance(n, ast.Name) and n.id not in own:
            holder = outer if n.id in outer.local else facts.module
            if n.id in holder.values or n.id in holder.models:
                return True
    return False


def _callee_body(
    facts: PortFacts, func: ast.Name, scope: PortScope
) -> tuple[ast.AST, set[str], PortScope] | None:
    """What a called name runs: (its body, the names it binds, the scope it was made in)."""
    where = scope if func.id in scope.local else facts.module
    values = where.values_of(func.id)
    if len(values) == 1 and isinstance(values[0], ast.Lambda):
        lam = values[0]
        a = lam.args
        own = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p}
        return lam.body, own, where
    for inner in _functions_named(facts).get(func.id, ()):
        node = inner.node
        if (
            isinstance(node, _FUNCTIONS)
            and inner.outer is where
            and inner.cls is None
            and not inner.internal
        ):
            return node, set(inner.local), where
    return None


_BY_NAME: weakref.WeakKeyDictionary[PortFacts, dict[str, list[PortScope]]] = (
    weakref.WeakKeyDictionary()
)


def _functions_named(facts: PortFacts) -> dict[str, list[PortScope]]:
    """The file's function scopes by name, in ``facts.scopes`` order, built once per file.

    Searched for every call of a name: a scan of every scope per call was quadratic.
    """
    found = _BY_NAME.get(facts)
    if found is None:
        found = _BY_NAME[facts] = {}
        for inner in facts.scopes[1:]:
            if isinstance(inner.node, _FUNCTIONS):
                found.setdefault(inner.node.name, []).append(inner)
    return found
