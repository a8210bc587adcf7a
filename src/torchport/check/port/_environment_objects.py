"""Environment objects: a gym, gymnasium or envpool environment itself is no tensor.

RL scripts hand the environment to what drives it: ``ExperienceSource(envs, agent)``,
``TRPOAgent(env, policy, value)``. With a model (or something holding one) among the
same arguments, the environment is one of the values that "meet the model", and the
port reported it as a value to move to the device (TP521 "it comes from
``gym.make``", TP523 "made by ``make_env()``"): an environment cannot be moved, and
what it returns is read where it is converted. The environment object is told by
how it is made:

* a call of one of those libraries (``gym.make(...)``, ``gym.vector.SyncVectorEnv(...)``,
  ``gym.wrappers.RecordVideo(env)``): objects of the library, none a tensor;
* a wrapper of one: a class (``RecordEpisodeStatistics(env)``) or a ``wrap_*`` function
  (``ptan.common.wrappers.wrap_dqn(env)``) given it as its one positional argument;
* a function or lambda of the file whose every return is one (``make_env()``), a name
  bound only to one, and a list of them (``[make_env() for _ in range(n)]``).

Only the object: what its ``step()``/``reset()`` return is followed as before (an
environment registered by a project may return tensors). Anything else is not one.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.semantic import Binding, BindingKind

__all__ = ["an_environment"]

_LIBRARIES = frozenset({"gym", "gymnasium", "envpool"})
_HOPS = 8


def an_environment(expr: ast.expr, ctx: Context, hops: int = 0) -> bool:
    """Whether ``expr`` is an environment object, or a list of them (see the docstring)."""
    if hops > _HOPS:
        return False
    if isinstance(expr, ast.Name):
        found = ctx.scopes.bindings(expr.id, expr)
        values = [b.value for b in found]
        if not found or any(v is None for v in values):
            return _returns_environments(found, ctx, hops)
        return all(an_environment(v, ctx, hops + 1) for v in values if v is not None)
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp)):
        return an_environment(expr.elt, ctx, hops + 1)
    if isinstance(expr, (ast.List, ast.Tuple)):
        return bool(expr.elts) and all(an_environment(e, ctx, hops + 1) for e in expr.elts)
    if isinstance(expr, ast.Lambda):
        return an_environment(expr.body, ctx, hops + 1)
    if not isinstance(expr, ast.Call):
        return False
    name = ctx.qualname(expr.func) or ""
    if name.partition(".")[0] in _LIBRARIES:
        return True
    tail = name.rpartition(".")[2] or getattr(expr.func, "id", getattr(expr.func, "attr", ""))
    if len(expr.args) == 1 and (tail[:1].isupper() or tail.startswith("wrap")):
        return an_environment(expr.args[0], ctx, hops + 1)  # a wrapper given it alone
    if isinstance(expr.func, ast.Name) and not expr.args and not expr.keywords:
        return an_environment(expr.func, ctx, hops + 1)  # `make_env()`: what it returns
    return False


def _returns_environments(found: list[Binding], ctx: Context, hops: int) -> bool:
    """A name bound once to a function of the file whose every return is an environment."""
    if len(found) != 1 or found[0].kind is not BindingKind.DEF:
        return False
    func = found[0].node
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    returns = [
        n.value for n in ast.walk(func) if isinstance(n, ast.Return) and _own_return(n, func)
    ]
    if not returns or any(r is None for r in returns):
        return False
    return all(an_environment(r, ctx, hops + 1) for r in returns if r is not None)


def _own_return(node: ast.Return, func: ast.AST) -> bool:
    """Whether ``node`` returns from ``func`` itself, not from a function nested in it."""
    for inner in ast.walk(func):
        nested = inner is not func and isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef))
        if nested and any(n is node for n in ast.walk(inner)):
            return False
    return True
