"""The file's lambdas bound to a name, offered as the model factories they may be.

``Net = lambda: _Net()`` then ``net = Net()``: the port moved the model inside the lambda
(TP501) and left the input ``net`` meets on the CPU, "0 left", where a ``def Net():
return _Net()`` was placed (k31ak). A lambda bound by a plain ``name = lambda ...: body``
(one target; or annotated, ``name: T = lambda ...: body``, b31al), the file's only binding
of ``name`` (no other assignment, ``def``, ``class`` or import of it anywhere in the file:
factories are known by name), is offered as a function returning ``body``; whether it
builds a model is the factories' own question. So is a lambda bound by a walrus, a tuple's
element, a conditional of two lambdas (both bodies), or a call of a lambda returning lambdas
(``Net = outer()``: the inner bodies) (x31an: each "0 left" with the input on the CPU).

So is a name bound the same way to another spelling of a class that builds the model
(x31al, k31ak's left): ``functools.partial(_Net, ...)``, a dict literal's item
(``MODELS["net"]`` of ``MODELS = {"net": _Net}``), a class attribute holding the class
(``Models.Net`` with ``class Models: Net = _Net``), ``globals()["_Net"]``: offered as a
function returning a call of that class (each left the model and its input on the CPU, "0
left"): a dict literal the file changes after, or ``globals()`` where the file writes it, is
read as no class (q31am: the literal's class was moved, "0 left").
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check.port._models import changed_after
from torchport.check.semantic import ScopeKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._device_flow import PortScope
    from torchport.check.port._facts import PortFacts

__all__ = [
    "bound_lambdas",
    "globals_written",
    "lambda_factory_returns",
    "spelled_classes",
    "spelled_factories",
]


def lambda_factory_returns(facts: PortFacts) -> list[tuple[str, PortScope, list[ast.expr]]]:
    """``(name, enclosing scope, [body, ...])`` of each lambda binding the module docstring
    offers (a conditional's two lambdas: both bodies)."""
    structure = facts.structure
    if not structure.lambdas:
        return []
    defined = structure.definitions()
    statements: dict[int, ast.stmt] = {}
    for lam in structure.lambdas:
        stmt = facts.parents.get(id(lam))
        for _ in range(16):  # up from a tuple, a conditional, a walrus, a lambda's lambda
            if stmt is None or isinstance(stmt, ast.stmt):
                break
            stmt = facts.parents.get(id(stmt))
        if isinstance(stmt, ast.stmt):
            statements.setdefault(id(stmt), stmt)
    found: list[tuple[str, PortScope, list[ast.expr]]] = []
    for name, stmt, lambdas in bound_lambdas(list(statements.values()), facts.ctx.tree):
        if _only_binding(facts, name, defined):
            scope = facts.scope_of.get(id(stmt)) or facts.module
            found.append((name, scope, [lam.body for lam in lambdas]))
    return found


def bound_lambdas(
    statements: list[ast.stmt], tree: ast.Module
) -> list[tuple[str, ast.stmt, list[ast.Lambda]]]:
    """``(name, statement, the lambdas a call of it runs)`` for each name ``statements`` bind
    to lambdas: ``name = lambda ...: body`` (annotated too), an element of a tuple binding
    (``Net, scale = lambda: _Net(), 2.0``), a walrus (``(Net := lambda: _Net())``), a
    conditional of two (``(lambda: A()) if big else (lambda: B())``: both), and a call of a
    name so bound whose lambdas return lambdas (``outer = lambda: (lambda: _Net())``, ``Net =
    outer()``: the inner ones; such statements are found in ``tree``). Whether the name is
    bound once, the caller asks."""
    found = [(n, s, lams) for s in statements for n, v in _targets(s) if (lams := _lambdas_of(v))]
    outer = {n: lams for n, _, lams in found if all(_lambdas_of(lam.body) for lam in lams)}
    if outer:
        calls = [
            s
            for s in ast.walk(tree)
            if isinstance(s, (ast.Assign, ast.AnnAssign))
            and isinstance(s.value, ast.Call)
            and isinstance(s.value.func, ast.Name)
            and s.value.func.id in outer
        ]
        for stmt in calls:
            for name, value in _targets(stmt):
                assert isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                inner = [i for lam in outer[value.func.id] for i in _lambdas_of(lam.body)]
                found.append((name, stmt, inner))
    return found


def _lambdas_of(value: ast.expr) -> list[ast.Lambda]:
    """The lambdas a call of ``value`` runs: itself, or a conditional's two (else [])."""
    if isinstance(value, ast.Lambda):
        return [value]
    if isinstance(value, ast.IfExp):
        body, orelse = _lambdas_of(value.body), _lambdas_of(value.orelse)
        return body + orelse if body and orelse else []
    return []


def _targets(stmt: ast.stmt) -> list[tuple[str, ast.expr]]:
    """``(name, value)`` for each name ``stmt`` binds to a value of its own: one target, an
    annotated one, a tuple's element of a tuple of the same length, a walrus in it."""
    out: list[tuple[str, ast.expr]] = []
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, ast.Name):
            out.append((target.id, value))
        elif (
            isinstance(target, (ast.Tuple, ast.List))
            and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
            and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
        ):
            out += [
                (t.id, v)
                for t, v in zip(target.elts, value.elts, strict=True)
                if isinstance(t, ast.Name)
            ]
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
        out.append((stmt.target.id, stmt.value))
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        heads = [getattr(stmt, f) for f in ("test", "value", "iter") if hasattr(stmt, f)]
        for head in heads:
            for node in ast.walk(head) if isinstance(head, ast.expr) else ():
                if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                    out.append((node.target.id, node.value))
    return out


def _only_binding(
    facts: PortFacts, name: str, defined: dict[str, int], *, classes: bool = True
) -> bool:
    """Whether the file binds ``name`` once, no ``def`` or ``class`` of it anywhere (a class
    body's attributes not counted where ``classes`` is False)."""
    if defined.get(name) or name in facts.functions:
        return False
    everywhere = facts.ctx.scopes.scopes.values()  # (imports and other scopes' too)
    counted = [s for s in everywhere if classes or s.kind is not ScopeKind.CLASS]
    return sum(len(scope.bindings.get(name, ())) for scope in counted) == 1


def spelled_factories(facts: PortFacts) -> list[tuple[str, PortScope, list[ast.expr]]]:
    """``(name, scope, [a call of the class])`` of each module-level ``name = <spelling>``
    of a class (the module docstring's), the file's only binding of ``name`` (a class
    attribute of that name aside): a factory no code of the file moves the model of, moved
    where the name is called (``facts.known.spelled``, kept here)."""
    defined = facts.structure.definitions()
    found: list[tuple[str, PortScope, list[ast.expr]]] = []
    for stmt in facts.ctx.tree.body:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            continue
        classes = _spelled(facts, stmt.value)
        name = stmt.targets[0].id
        if classes and _only_binding(facts, name, defined, classes=False):
            calls: list[ast.expr] = [
                ast.copy_location(ast.Call(func=c, args=[], keywords=[]), c) for c in classes
            ]
            found.append((name, facts.module, calls))
    facts.known.spelled = {name for name, _, _ in found}
    return found


def _spelled(facts: PortFacts, value: ast.expr) -> list[ast.expr]:
    """The class expressions ``value`` spells (the module docstring's forms), else []."""
    return spelled_classes(facts.ctx.tree, value, facts.ctx.qualname)


def spelled_classes(
    tree: ast.Module, value: ast.expr, qualname: Callable[[ast.expr], str | None]
) -> list[ast.expr]:
    """The class expressions a module-level ``value`` spells, by syntax (the module
    docstring's forms: a dict literal or a class the module binds at its top level), else
    []; shared with a project module's kinds (``_port_kinds``)."""
    if isinstance(value, ast.Call):
        return [value.args[0]] if value.args and qualname(value.func) == "functools.partial" else []
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant):
        base, key = value.value, value.slice.value
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Name):
            if base.func.id == "globals" and not base.args and str(key).isidentifier():
                if globals_written(tree):
                    return []  # `globals()["_Net"] = Other` (q31am): which class, a run tells
                return [ast.copy_location(ast.Name(id=str(key), ctx=ast.Load()), value)]
            return []
        bound = _top_level(tree, base, ast.Assign)
        if isinstance(bound, ast.Assign) and isinstance(bound.value, ast.Dict):
            if isinstance(base, ast.Name) and changed_after(tree, base.id):
                return []  # `MODELS.update(net=Other)` (q31am): the literal's class may not be
            keys = bound.value.keys
            return [v for k, v in zip(keys, bound.value.values, strict=True)
                    if isinstance(k, ast.Constant) and k.value == key]  # fmt: skip
        return []
    if isinstance(value, ast.Attribute):
        owner = _top_level(tree, value.value, ast.ClassDef)
        held = [
            s.value
            for s in getattr(owner, "body", ())
            if isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and s.targets[0].id == value.attr
        ]
        return held if len(held) == 1 else []
    return []


def globals_written(tree: ast.Module) -> bool:
    """Whether a ``globals()`` of the file is used otherwise than by an item read."""
    read = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
    }
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "globals"
        and id(n) not in read
        for n in ast.walk(tree)
    )


def _top_level(tree: ast.Module, name: ast.expr, kind: type) -> ast.AST | None:
    """A statement of ``kind``, alone binding ``name`` at the module's top level (an
    assignment to the name alone, or a class of that name), else None."""
    if not isinstance(name, ast.Name):
        return None
    found = [
        s
        for s in tree.body
        if (isinstance(s, ast.ClassDef) and s.name == name.id)
        or (isinstance(s, ast.Assign) and any(_binds(t, name.id) for t in s.targets))
    ]
    return found[0] if len(found) == 1 and isinstance(found[0], kind) else None


def _binds(target: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))
