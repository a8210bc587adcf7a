"""Tensors a lambda or a function captures, where it is given a device value.

``f = lambda t: t * scale`` then ``f(model(x))``: ``scale`` meets the output
inside ``f``, where the flow of the calling scope does not look. The names such a
callee reads and does not bind itself reach the device, in the scope that binds
them (they are moved where they are made, or reported). And ``f(x)`` where ``f``
reads a weight or a device value it does not bind: ``x`` meets the device there.

And what the code puts into a model the port places (:func:`mark_model_state`):
``conv.weight.data = torch.arange(9.0).view(1, 1, 3, 3)``, ``net.fc.bias =
nn.Parameter(b)``, ``net.mask = m``, ``net.register_buffer("m", m)``: set after
``.to(device)``, a tensor made on the CPU puts the weight back on the CPU (or is
refused), so it meets the device: moved where it is made, or reported. So does
what a weight trained by hand is copied from (``x = start.clone().requires_grad_()``,
``nn.Parameter(w)`` outside a module): ``start`` is moved where it is made.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator

from torchport.check.port._calls import grad_leaf, grad_maker, grad_source, is_move
from torchport.check.port._device_flow import PortScope
from torchport.check.port._guesses import known_on_device
from torchport.check.port._lambdas import (
    handed_on,
    loose_message,
    loose_where,
    made_beside,
    parameters,
)
from torchport.check.port._models import QualName

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = [
    "grad_leaves",
    "mark_captured",
    "mark_loose",
    "mark_model_state",
    "mark_weights_made_later",
]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_REGISTERS = frozenset({"register_buffer", "register_parameter"})


def mark_captured(facts: PortFacts, scope: PortScope) -> None:
    """Add what the callees ``scope`` calls capture to the reach (see the module docstring)."""
    mark_model_state(facts, scope)
    flow = facts.flow
    mark_loose(facts, scope)
    for node in scope.nodes:
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Lambda):  # `(lambda t: ...)(y)`: its one call
            callee: tuple[ast.AST, set[str], PortScope] | None = (
                node.func.body,
                parameters(node.func),
                scope,
            )
        elif isinstance(node.func, ast.Name):
            callee = _callee_body(facts, node.func, scope)
        else:
            continue
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
        # given only device values the flow guesses (`_guesses`): reported, not moved
        known = any(known_on_device(flow, a, scope) for a in args) and not (
            isinstance(body, _FUNCTIONS) and facts.scope_of_function(body).guessed
        )
        for n in ast.walk(body):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in own:
                if _moved_where_read(facts, n):
                    continue  # `MEAN.to(image.device)`: moved where it meets the value
                holder = outer if n.id in outer.local else facts.module
                if n.id not in holder.models and n.id not in facts.functions:
                    (holder.reach if known else holder.guess_reach).add(n.id)
        lam = facts.parents.get(id(body))
        # `lambda t: t * torch.ones(3)`: made where it meets t (a loose one's: `mark_loose`)
        if isinstance(lam, ast.Lambda) and id(lam) in flow.followed:
            # moved where it is made only where every call hands the lambda device values
            # (one handed a `.cpu()` copy too would meet a device tensor there): else reported
            beside = made_beside(lam, facts.ctx.qualname)  # (first: the file-wide scan after)
            moved = (
                bool(beside)
                and known
                and (node.func is lam or _always_given_device(facts, node.func, body))
            )
            for made, meeting in beside:
                flow._meet(made, facts.scope_of.get(id(made)) or scope, None if moved else meeting)


def mark_loose(facts: PortFacts, scope: PortScope) -> None:
    """Mark what the loose lambdas of ``scope`` make beside their parameters (``_lambdas``),
    and ``scope``'s own if it is a function handed on: reported, never moved, where the file
    holds a device value or a model."""
    flow, module = facts.flow, facts.module
    if not (scope.values or scope.models or module.values or module.models):
        return
    for lam in scope.nodes:
        if not isinstance(lam, ast.Lambda) or id(lam) in flow.followed:
            continue
        for made, meeting in made_beside(lam, facts.ctx.qualname):
            where = loose_where(lam, facts.parents)
            flow.loose[id(meeting)] = loose_message(meeting, "a lambda", where)
            flow._meet(made, facts.scope_of.get(id(made)) or scope, meeting)
    func = scope.node  # a function of the file handed on (`map(f, outs)`): as a loose lambda
    if not isinstance(func, _FUNCTIONS) or scope.cls is not None:
        return
    load = handed_on(facts.loads_of(func.name), facts.parents)
    if load is None:
        return
    for made, meeting in made_beside(func, facts.ctx.qualname):
        made_in = facts.scope_of.get(id(made)) or scope
        if id(made) not in made_in.sink_nodes and id(made) not in made_in.reach_values:
            where = loose_where(load, facts.parents)  # (else moved: by its calls)
            flow.loose[id(meeting)] = loose_message(meeting, f"`{func.name}`", where)
            flow._meet(made, made_in, meeting)


def _always_given_device(facts: PortFacts, func: ast.expr, body: ast.AST) -> bool:
    """Whether every call of ``name`` in the file that runs the lambda ``body`` hands it
    only device values (what the flow knows so far; a call it does not yet: not always)."""
    flow = facts.flow
    name = func.id if isinstance(func, ast.Name) else None
    for scope in facts.scopes:
        for node in scope.nodes:
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == name
            ):
                continue
            callee = _callee_body(facts, node.func, scope)
            if callee is None or callee[0] is not body:
                continue
            args = [*node.args, *(k.value for k in node.keywords)]
            if not args or not all(known_on_device(flow, a, scope) for a in args):
                return False
    return True


def _moved_where_read(facts: PortFacts, read: ast.Name) -> bool:
    """``read.to(<device>)``: the tensor goes where it is used, from wherever it is made."""
    up = facts.parents.get(id(read))
    call = facts.parents.get(id(up))
    if not isinstance(up, ast.Attribute) or not isinstance(call, ast.Call):
        return False
    return call.func is up and is_move(call)


def mark_model_state(facts: PortFacts, scope: PortScope) -> None:
    """Mark what ``scope`` puts into a model's attributes (see the module docstring)."""
    flow = facts.flow
    put: list[ast.expr] = []
    for targets, value in scope.assigns:
        if any(_into_a_model(facts, t, scope) for t in targets):
            put.append(value)
    for node in scope.nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _REGISTERS:
            if _into_a_model(facts, func.value, scope, root=True):
                put.extend(node.args[1:2])  # `net.register_buffer("m", m)`
        elif (  # `setattr(net, "m", m)`
            isinstance(func, ast.Name)
            and func.id == "setattr"
            and len(node.args) == 3
            and _into_a_model(facts, node.args[0], scope, root=True)
        ):
            put.append(node.args[2])
    for _, made in grad_leaves(scope, facts.ctx.qualname):
        if grad_source(made, facts.ctx.qualname):  # `x = start.clone().requires_grad_()`
            put.append(made)
    for value in put:
        if flow.on_device(value, scope) or facts.builds_model(value, scope):
            continue  # `net.fc = nn.Linear(4, 4)`: a model, placed by TP501
        flow.operands.append((value, scope))
        flow.mark(value, scope.reach, scope.sink_nodes)


def grad_leaves(scope: PortScope, qualname: QualName) -> Iterator[tuple[list[str], ast.expr]]:
    """``(names, maker)`` of each weight ``scope`` trains by hand (:func:`grad_leaf`): bound
    to one (``w = torch.zeros(2).requires_grad_()``), or made one by a statement
    (``w.requires_grad_()``, ``w.requires_grad = True``) of a name bound in ``scope``."""
    for targets, value in scope.assigns:
        made = grad_leaf(value, qualname)
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if made is not None and names:
            yield names, made
    statements = ast.Expr, ast.Assign  # (what `_made_a_weight` reads: no call for the rest)
    for node in scope.nodes:
        if not isinstance(node, statements):
            continue
        name = _made_a_weight(node)
        for value in scope.values_of(name) if name in scope.local else ():
            made = grad_maker(value, qualname)
            if made is not None:
                yield [name], made


def mark_weights_made_later(facts: PortFacts, scope: PortScope) -> bool:
    """Seed each weight made one by a statement (``w.requires_grad = True``,
    ``w.requires_grad_()``) whose binding's value no factory makes that :func:`grad_leaves`
    sees (``torch.Tensor([1.0])``, ``torch.randn(3, 2) / 3``, ``torch.empty(3).normal_()``,
    a helper's tensor): the weight is a device value all the same, so the value is moved
    where it is made or reported (the port's sinks), never left on the CPU unsaid. Whether
    ``scope`` has one."""
    found = False
    for node in scope.nodes:
        name = _made_a_weight(node) if isinstance(node, ast.Expr | ast.Assign) else ""
        for value in scope.values_of(name) if name in scope.local else ():
            if grad_maker(value, facts.ctx.qualname) is None:
                scope.give([name])
                facts.flow.operands.append((value, scope))
                facts.flow.mark(value, scope.reach, scope.sink_nodes)
                found = True
    return found


def _made_a_weight(node: ast.AST) -> str:
    """``w`` for ``w.requires_grad_()`` or ``w.requires_grad = True`` (a statement), else ""."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func, args = node.value.func, node.value.args
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "requires_grad_"
            and isinstance(func.value, ast.Name)
            and all(_true(a) for a in args)
        ):
            return func.value.id
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and _true(node.value):
        target = node.targets[0]
        if isinstance(target, ast.Attribute) and target.attr == "requires_grad":
            return target.value.id if isinstance(target.value, ast.Name) else ""
    return ""


def _true(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def _into_a_model(
    facts: PortFacts, target: ast.expr, scope: PortScope, *, root: bool = False
) -> bool:
    """Whether ``target`` is an attribute of a model ``scope`` holds (``net.fc.weight.data``),
    or with ``root`` the model itself."""
    depth = 0
    while isinstance(target, ast.Attribute | ast.Subscript) and depth < 8:
        target, depth = target.value, depth + 1
    return (root or depth > 0) and isinstance(target, ast.Name) and facts.holds_model(target, scope)


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
        return values[0].body, parameters(values[0]), where
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
