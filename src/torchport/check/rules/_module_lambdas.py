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
runs after the module is built). Kept so as well: ``setattr(self, "X", lambda ...)``, and
a name ``__init__`` binds to the lambda and keeps (``f = lambda ...; self.X = f``; a name
also read otherwise, run there or handed on: reported). Else reported, with no fix. A lambda
no other method reads is left alone (it never runs there). A lambda the class body binds
(``f = staticmethod(lambda n: torch.zeros(n))``, ``g = lambda self, t: t + torch.ones(3)``)
is reported (:func:`class_lambda`), and so is one bound to a module-level name a method
uses (``act = lambda t: torch.cat([t, torch.zeros(1)])``, :func:`module_lambda`).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.rules._module_tensors import (
    builds_the_module,
    init_holds_weights,
    method_of_a_module,
    moved_or_kept_on_the_cpu,
    zero_dim,
)
from torchport.check.rules._port import port_facts

__all__ = ["class_lambda", "held_lambda", "module_lambda"]

_HELD_LAMBDA = (
    "the lambda kept in `self.{name}` makes this tensor on the CPU each time it runs: "
    "`model.to(device)` does not move it; make it on the module's device "
    "(`device=next(self.parameters()).device`)"
)

_CLASS_LAMBDA = (
    "the lambda the class binds to `{name}` makes this tensor on the CPU each time it runs: "
    "`model.to(device)` does not move it; make it on its input's device, or write it as a "
    "method making it on the module's device (`next(self.parameters()).device`)"
)

_HOLDERS = (ast.List, ast.Tuple, ast.Dict)
_Parents = dict[int, ast.AST]


def held_lambda(node: ast.Call, name: str, ctx: Context) -> tuple[str, str | None] | None:
    """``(message, the device to make ``node`` on, or None: not sure)`` where ``node`` (a
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
    found = _lambda_held(node, parents, (), init)
    if found is None:
        return None
    lam, held, holder = found
    params = [*init.args.posonlyargs, *init.args.args]
    me = params[0].arg if params else None
    kept = _kept_on(held, holder, init, me, parents) if me is not None else None
    if kept is None:
        return None
    attrs, exact = kept
    if attrs and not any(_reads(m, a) for m in cls.body if m is not init for a in attrs):
        return None
    shadowed = me in _names_bound(lam) or any(
        isinstance(n, ast.Name) and n.id == me and not isinstance(n.ctx, ast.Load)
        for n in ast.walk(init)
    )
    own_init = next((m for m in cls.body if getattr(m, "name", "") == "__init__"), init)
    inits = {id(init): init, id(own_init): own_init}.values()
    read_in_init = any(_reads(m, a) for m in inits for a in attrs)
    sure = exact and not shadowed and not read_in_init and init_holds_weights(cls, facts)
    message = _HELD_LAMBDA.format(name=attrs[0] if attrs else "<the name setattr gives>")
    return message, f"next({me}.parameters()).device" if sure else None


def _kept_on(
    held: ast.AST, holder: ast.AST | None, init: ast.FunctionDef, me: str, parents: _Parents
) -> tuple[list[str], bool] | None:
    """``(the attributes of ``me`` the lambda ``held`` is kept on, whether those are all
    the ways it leaves ``init``)``: ``self.X = held``, ``setattr(self, "X", held)`` (a name
    not written: ``[]``, not exact), or a name bound once to it and kept so (``f = held;
    self.X = f``, also in a list, tuple or dict: ``self.fs = [f]``; any other read of the
    name, a call there included, is not exact). None: not kept on the module."""
    attr = _self_store(held, holder, me)
    if attr is not None:
        return ([attr] if attr else []), bool(attr)
    if not (
        isinstance(holder, ast.Assign)
        and holder.value is held
        and len(holder.targets) == 1
        and isinstance(name := holder.targets[0], ast.Name)
    ):
        return None
    attrs, exact = [], True
    for n in ast.walk(init):
        if not (isinstance(n, ast.Name) and n.id == name.id) or n is name:
            continue
        item: ast.AST = n
        up = parents.get(id(n))
        while isinstance(up, _HOLDERS) and not (isinstance(up, ast.Dict) and item in up.keys):
            item, up = up, parents.get(id(up))  # `self.fs = [f]`
        kept = _self_store(item, up, me) if isinstance(n.ctx, ast.Load) else None
        if kept:
            attrs.append(kept)
        else:  # called here (it may run before the weights are), bound again, handed on
            exact = False
    return (attrs, exact) if attrs else None


def _self_store(held: ast.AST, holder: ast.AST | None, me: str) -> str | None:
    """``X`` of ``me.X = held`` or ``setattr(me, "X", held)`` ("" where the name is not a
    constant); None: neither."""
    if (
        isinstance(holder, ast.Assign)
        and holder.value is held
        and len(holder.targets) == 1
        and isinstance(target := holder.targets[0], ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == me
    ):
        return target.attr
    if not (
        isinstance(holder, ast.Call)
        and isinstance(holder.func, ast.Name)
        and holder.func.id == "setattr"
        and len(holder.args) == 3
        and holder.args[2] is held
        and isinstance(holder.args[0], ast.Name)
        and holder.args[0].id == me
    ):
        return None
    name = holder.args[1]
    return name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else ""


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


def class_lambda(node: ast.Call, name: str, ctx: Context) -> str | None:
    """TP504's message where a module class binds in its body a lambda making ``node`` (``f =
    staticmethod(lambda n: torch.zeros(n))``, ``g = lambda self, t: t + torch.ones(3)``),
    to a name one of its methods reads as ``self.<name>``: reported (which device the
    lambda's tensor belongs on is its caller's); else None."""
    if zero_dim(node, name):
        return None
    facts = port_facts(ctx)
    parents = facts.parents
    lam: ast.AST | None = parents.get(id(node))
    while lam is not None and not isinstance(lam, ast.Lambda | ast.FunctionDef | ast.ClassDef):
        lam = parents.get(id(lam))
    holder = parents.get(id(lam)) if isinstance(lam, ast.Lambda) else None
    if isinstance(holder, ast.Call) and getattr(holder.func, "id", "") in _WRAPS:
        holder = parents.get(id(holder))  # `staticmethod(lambda ...)`
    cls = parents.get(id(holder))
    if not (
        isinstance(holder, ast.Assign)
        and len(holder.targets) == 1
        and isinstance(target := holder.targets[0], ast.Name)
        and isinstance(cls, ast.ClassDef)
    ):
        return None
    methods = [m for m in cls.body if isinstance(m, ast.FunctionDef)]
    if not any(method_of_a_module(facts.scope_of.get(id(m.body[0]))) for m in methods):
        return None  # not a module's class
    read = any(_reads(m, target.id) for m in methods)
    return _CLASS_LAMBDA.format(name=target.id) if read else None


_WRAPS = frozenset({"staticmethod", "classmethod"})


_MODULE_LAMBDA = (
    "the lambda bound to `{name}` makes this tensor on the CPU each time it "
    "runs, and a module method uses it (line {used}): `model.to(device)` does not move it; "
    "make it on its input's device (`device=t.device`), or write it as a method making it "
    "on the module's device (`next(self.parameters()).device`)"
)


def module_lambda(node: ast.Call, name: str, ctx: Context) -> str | None:
    """TP504's message where the file binds at module level, to a name, a lambda making
    ``node`` (alone, or an item of a list, tuple or dict literal: ``act = lambda t:
    torch.cat([t, torch.zeros(1)])``) and a method of a module class reads that name, other
    than to call it while the module is built (``__init__`` handing it on, ``self.act =
    act``, counts): reported (which device the lambda's tensor belongs on is its caller's,
    as for a function of the file, :mod:`._module_leftovers`); else None."""
    if zero_dim(node, name):
        return None
    facts = port_facts(ctx)
    parents = facts.parents
    found = _lambda_held(node, parents, _DEFS, None)
    if found is None:
        return None
    _, held, holder = found
    if not (isinstance(holder, ast.Assign) and holder.value is held):
        return None
    if facts.scope_of.get(id(holder)) is not facts.module:
        return None
    for target in holder.targets:
        if not isinstance(target, ast.Name):
            continue
        for read in facts.loads_of(target.id):
            scope = facts.scope_of.get(id(read))
            method = method_of_a_module(scope)
            if method is None or scope is None:
                continue
            bound = ctx.scopes.bindings(target.id, read)
            if not any(b.node is target or b.node is holder for b in bound):
                continue  # a name of its own there
            up = parents.get(id(read))
            if (
                isinstance(up, ast.Call)
                and up.func is read
                and builds_the_module(method, scope.cls, ctx)
            ):
                continue  # run while the module is built: what it makes is kept, or TP504's
            return _MODULE_LAMBDA.format(name=target.id, used=read.lineno)
    return None


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _lambda_held(
    node: ast.AST, parents: dict[int, ast.AST], stops: tuple[type, ...], stop: ast.AST | None
) -> tuple[ast.Lambda, ast.AST, ast.AST | None] | None:
    """The lambda around ``node`` (not past ``stop`` or a node of a ``stops`` type), what
    holds it (the lambda, or the list, tuple or dict value it sits in), and that holder's
    parent: ``f = lambda: ...``, ``fs = [lambda: ...]``, ``{"k": lambda: ...}``."""
    lam = parents.get(id(node))
    while lam is not None and lam is not stop and not isinstance(lam, (ast.Lambda, *stops)):
        lam = parents.get(id(lam))
    if not isinstance(lam, ast.Lambda):
        return None
    held: ast.AST = lam
    holder = parents.get(id(lam))
    while isinstance(holder, _HOLDERS) and not (
        isinstance(holder, ast.Dict) and held in holder.keys
    ):
        held, holder = holder, parents.get(id(holder))
    return lam, held, holder
