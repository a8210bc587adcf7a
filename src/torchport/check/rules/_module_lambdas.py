"""A lambda a module keeps on an attribute that makes a tensor on the CPU (issue 31, TP504).

``self.shift = lambda t: t + torch.ones(3)`` (or ``self.f = lambda n: torch.zeros(n)``) in
``__init__``, called in ``forward``: ``model.to(device)`` moves the module's weights, and
the lambda makes its tensor on the CPU each time it runs. The invariant: placed on the
module's parameters' device, read when the lambda runs (``torch.ones(3,
device=next(self.parameters()).device)``), where that device is sure to be there: the lambda
(alone, or an item of a list, tuple or dict literal) is bound to ``self.X`` by a statement
of ``__init__`` (or of a method only ``__init__`` calls, ``self.build()``), ``self`` is that
method's first parameter and no parameter of the lambda (nor another binding there) takes
its name, ``__init__`` gives the module weights, and neither reads ``self.X`` (the lambda
runs after the module is built). Else reported, with no fix. A lambda no other method reads is left alone (it never runs there).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.rules._module_tensors import (
    init_holds_weights,
    method_of_a_module,
    moved_or_kept_on_the_cpu,
    zero_dim,
)
from torchport.check.rules._port import port_facts

__all__ = ["HELD_LAMBDA", "held_lambda"]

HELD_LAMBDA = (
    "the lambda kept in `self.{name}` makes this tensor on the CPU each time it runs: "
    "`model.to(device)` does not move it; make it on the module's device "
    "(`device=next(self.parameters()).device`)"
)

_HOLDERS = (ast.List, ast.Tuple, ast.Dict)


def held_lambda(node: ast.Call, name: str, ctx: Context) -> tuple[str, str | None] | None:
    """``(attribute, the device to make ``node`` on, or None: not sure)`` where ``node`` (a
    call of the creator ``name`` in a method building a module: ``__init__``, or one only it
    calls) is made in a lambda that method keeps on ``self.<attribute>`` and another method
    of the class reads; else None."""
    facts = port_facts(ctx)
    scope = facts.scope_of.get(id(node))
    init = method_of_a_module(scope)  # `__init__`, or a method only it calls (`self.build()`)
    if scope is None or init is None or scope.cls is None:
        return None
    cls = scope.cls
    if zero_dim(node, name) or moved_or_kept_on_the_cpu(node, scope.nodes, facts, ctx):
        return None  # `torch.rand(n).to(...)`
    parents = facts.parents
    lam: ast.AST | None = parents.get(id(node))
    while lam is not None and lam is not init and not isinstance(lam, ast.Lambda):
        lam = parents.get(id(lam))
    if not isinstance(lam, ast.Lambda):
        return None
    held: ast.AST = lam
    holder = parents.get(id(lam))
    while isinstance(holder, _HOLDERS) and not (
        isinstance(holder, ast.Dict) and held in holder.keys
    ):
        held, holder = holder, parents.get(id(holder))
    params = [*init.args.posonlyargs, *init.args.args]
    me = params[0].arg if params else None
    if not (
        me is not None
        and isinstance(holder, ast.Assign)
        and holder.value is held
        and len(holder.targets) == 1
        and isinstance(target := holder.targets[0], ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == me
    ):
        return None
    attr = target.attr
    if not any(_reads(method, attr) for method in cls.body if method is not init):
        return None
    shadowed = me in _names_bound(lam) or any(
        isinstance(n, ast.Name) and n.id == me and not isinstance(n.ctx, ast.Load)
        for n in ast.walk(init)
    )
    own_init = next((m for m in cls.body if getattr(m, "name", "") == "__init__"), init)
    read_in_init = any(_reads(m, attr) for m in {id(init): init, id(own_init): own_init}.values())
    sure = not shadowed and not read_in_init and init_holds_weights(cls, facts)
    return attr, f"next({me}.parameters()).device" if sure else None


def _names_bound(lam: ast.Lambda) -> set[str]:
    a = lam.args
    return {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p}


def _reads(method: ast.stmt, attr: str) -> bool:
    """Whether the method ``method`` reads ``<its first parameter>.<attr>``."""
    if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    params = [*method.args.posonlyargs, *method.args.args]
    if not params:
        return False
    own = params[0].arg
    return any(
        isinstance(n, ast.Attribute)
        and n.attr == attr
        and isinstance(n.ctx, ast.Load)
        and isinstance(n.value, ast.Name)
        and n.value.id == own
        for n in ast.walk(method)
    )
