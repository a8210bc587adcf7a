"""The file's lambdas bound to a name, offered as the model factories they may be.

``Net = lambda: _Net()`` then ``net = Net()``: the port moved the model inside the lambda
(TP501) and left the input ``net`` meets on the CPU, "0 left", where a ``def Net():
return _Net()`` was placed (k31ak). A lambda bound by a plain ``name = lambda ...: body``
(one target; or annotated, ``name: T = lambda ...: body``, b31al), the file's only binding
of ``name`` (no other assignment, ``def``, ``class`` or import of it anywhere in the file:
factories are known by name), is offered as a function returning ``body``; whether it
builds a model is the factories' own question.
"""

from __future__ import annotations

import ast

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._device_flow import PortScope
    from torchport.check.port._facts import PortFacts

__all__ = ["lambda_factory_returns"]


def lambda_factory_returns(facts: PortFacts) -> list[tuple[str, PortScope, list[ast.expr]]]:
    """``(name, enclosing scope, [body])`` of each lambda the module docstring offers."""
    structure = facts.structure
    if not structure.lambdas:
        return []
    defined = structure.definitions()
    found: list[tuple[str, PortScope, list[ast.expr]]] = []
    for lam in structure.lambdas:
        stmt = facts.parents.get(id(lam))
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target: ast.expr = stmt.targets[0]
        elif isinstance(stmt, ast.AnnAssign):  # `Net: Callable[[], nn.Module] = lambda: ...`
            target = stmt.target
        else:
            continue
        if stmt.value is not lam or not isinstance(target, ast.Name):
            continue
        name = target.id
        if defined.get(name) or name in facts.functions:
            continue
        everywhere = facts.ctx.scopes.scopes.values()  # (imports and other scopes' too)
        if sum(len(scope.bindings.get(name, ())) for scope in everywhere) != 1:
            continue
        found.append((name, facts.scope_of.get(id(stmt)) or facts.module, [lam.body]))
    return found
