"""Where a script places its model itself, and the environment numbers next to a batch.

Two answers the origins search (``_origins.py``) asks for each value it follows: whether a
value is moved by the script under the very conditions its model is
(``if args.cuda: model.cuda(); X = X.cuda()``: the script's placement, which the port does
not overrule), and whether a name is one of the numbers an environment's ``step`` returns
beside its observation.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.port._calls import is_move
from torchport.check.port._facts import PortFacts
from torchport.check.semantic import Binding

__all__ = ["ScriptPlacement", "step_scalar"]


class ScriptPlacement:
    """The conditions under which one file's script moves its models in place."""

    def __init__(self, facts: PortFacts) -> None:
        self.facts = facts
        self._placements: set[tuple[str, ...]] | None = None  # see _model_placements

    def with_the_model(self, b: Binding) -> bool:
        """``X = X.cuda()`` (or ``.to(...)``) under the same conditions as a statement that
        places a model of the file in place (``if args.cuda: model.cuda()``): the script
        puts this value where it puts its model, itself; the port moves neither, so
        whatever else the name was bound to goes where the model goes."""
        value = b.value
        if not (
            isinstance(value, ast.Call)
            and is_move(value)
            and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == b.name
        ):
            return False
        return self._guard(value) in self._model_placements()

    def _model_placements(self) -> set[tuple[str, ...]]:
        """The conditions of each statement that moves a model in place (``model.cuda()``)."""
        found = self._placements
        if found is None:
            found = self._placements = set()
            for call in self.facts.structure.moves:
                func = call.func
                stmt = self.facts.parents.get(id(call))
                scope = self.facts.scope_of.get(id(call)) or self.facts.module
                if (
                    isinstance(stmt, ast.Expr)
                    and isinstance(func, ast.Attribute)
                    and self.facts.holds_model(func.value, scope)
                ):
                    found.add(self._guard(call))
        return found

    def _guard(self, node: ast.AST) -> tuple[str, ...]:
        """The tests of the ``if`` statements ``node`` runs under (its body, not its
        ``else``), innermost first, up to its function or the module."""
        tests: list[str] = []
        child, parent = node, self.facts.parents.get(id(node))
        while parent is not None and not isinstance(
            parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            if isinstance(parent, ast.If):
                if child is parent.test:
                    pass
                elif child in parent.body:
                    tests.append(ast.unparse(parent.test))
                else:
                    tests.append(f"not ({ast.unparse(parent.test)})")
            child, parent = parent, self.facts.parents.get(id(parent))
        return tuple(tests)


def step_scalar(ctx: Context, b: Binding) -> bool:
    """``reward`` of ``obs, reward, done, info = env.step(a)``: an environment's numbers.

    An environment's ``step`` returns the observation first and Python scalars
    and dicts after it (gym, gymnasium, and the environments written like them);
    a scalar mixes with a tensor on any device. The observation is followed.
    """
    holder = ctx.scopes.parent(b.node)
    if not isinstance(holder, ast.Tuple) or not holder.elts or holder.elts[0] is b.node:
        return False
    stmt = ctx.scopes.parent(holder)
    value = stmt.value if isinstance(stmt, ast.Assign) else None
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "step"
        and not ctx.qualname(value.func)  # not torch's (an optimizer's step)
    )
