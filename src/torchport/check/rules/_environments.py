"""What a gym, gymnasium or envpool environment returns: NumPy arrays, on the host (TP202).

``obs, reward, done, info = envs.step(actions)`` with ``envs = envpool.make(...)``:
reading ``obs`` (``obs.tolist()``) waits for no device. The environment is known when
its name is bound to one of those libraries' calls (``gym.make``, ``gym.vector...``,
``envpool.make``), also through their wrappers (``gym.wrappers.RecordVideo(envs)``)
and any other wrapper given the environment alone (``RecordEpisodeStatistics(envs)``);
a wrapper given anything more (``VecPyTorch(envs, device)``) may return tensors on the
device, and is not followed; nor is an environment of another make (Isaac Gym's are
tensors on the GPU).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.semantic._residence import bound_value

__all__ = ["returned_by_an_environment"]

_LIBRARIES = frozenset({"gym", "gymnasium", "envpool"})
_RESULTS = frozenset({"step", "reset"})
# Methods whose result lives where their receiver does (NumPy's and torch's alike).
_SAME_PLACE = frozenset(
    {"reshape", "astype", "copy", "squeeze", "flatten", "ravel", "transpose", "mean", "sum",
     "max", "min", "argmax", "round", "clip", "view", "detach", "float", "long", "int"}
)  # fmt: skip
_HOPS = 4


def returned_by_an_environment(value: ast.expr, ctx: Context) -> bool:
    """Whether ``value`` is (a view, part or reduction of) what such an environment's
    ``step()`` or ``reset()`` returned."""
    for _ in range(12):
        if isinstance(value, ast.Subscript):
            value = value.value
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in _SAME_PLACE
        ):
            value = value.func.value
        else:
            break
    if not isinstance(value, ast.Name):
        return False
    made = _assigned_from(value, ctx)
    return (
        isinstance(made, ast.Call)
        and isinstance(made.func, ast.Attribute)
        and made.func.attr in _RESULTS
        and _an_environment(made.func.value, ctx)
    )


def _assigned_from(name: ast.Name, ctx: Context) -> ast.expr | None:
    """The value ``name`` was assigned, also as one item of a tuple target (``a, b = v``)."""
    binding = ctx.scopes.binding_at(name)
    if binding is None:
        return None
    if binding.value is not None:
        return binding.value
    holder = ctx.scopes.parent(binding.node)
    if isinstance(holder, (ast.Tuple, ast.List)):
        statement = ctx.scopes.parent(holder)
        if isinstance(statement, ast.Assign) and any(t is holder for t in statement.targets):
            return statement.value
    return None


def _an_environment(expr: ast.expr, ctx: Context) -> bool:
    """``envs`` bound to ``gym.make(...)`` or ``envpool.make(...)``, maybe wrapped (alone)."""
    for _ in range(_HOPS):
        if isinstance(expr, ast.Name):
            bound = bound_value(expr, ctx)
            if bound is None:
                return False
            expr = bound
            continue
        if not isinstance(expr, ast.Call):
            return False
        name = ctx.qualname(expr.func) or ""
        library = name.partition(".")[0] in _LIBRARIES
        if library and ".wrappers." not in name:
            return True  # `gym.make(...)`, `envpool.make(...)`, `gym.vector.SyncVectorEnv(...)`
        if expr.args and (library or (len(expr.args) == 1 and not expr.keywords)):
            expr = expr.args[0]  # `RecordEpisodeStatistics(envs)`: the environment, wrapped
            continue
        return False
    return False
