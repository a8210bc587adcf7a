"""What a name made by calling one of the program's classes gives when it is called.

``policy = ActorCritic()`` then ``policy(state)``: the forward of ``ActorCritic``
may make its own tensor of ``state`` (``torch.from_numpy(state)``:
:func:`converted_inputs`); ``ac = MLPActorCritic(...)`` then ``ac.step(obs)``: a
plain method returning only ``.numpy()``/``.item()``/``.tolist()`` values gives host
values, not a forward's output (:class:`HostMethods`). Both follow every binding
of the name to ``Cls(...)`` (or ``Cls(...).to(...)``) of one class, and answer
nothing as soon as one binding is anything else.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchport.check._context import Context
from torchport.check.port._module_functions import converted_inputs as class_converted_inputs
from torchport.check.port._project import ProjectImports
from torchport.check.semantic import Binding, BindingKind

__all__ = ["HostMethods", "converted_inputs", "made_by"]

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def made_by(bound: ast.expr | None) -> ast.expr | None:
    """``Cls(...)`` of ``Cls(...).to(...)`` (as the port writes it): the call that made the
    object, under any ``.to`` calls."""
    while (
        isinstance(bound, ast.Call)
        and isinstance(bound.func, ast.Attribute)
        and bound.func.attr == "to"
    ):
        bound = bound.func.value
    return bound


def _self_class_bindings(ctx: Context, attr: ast.Attribute) -> list[Binding] | None:
    """``self.net``: the class each store of ``self.net`` in the enclosing class calls
    (``self.net = Net(...)``, bound once), or None when one store is anything else, there
    is none, or ``self`` is not the method's first parameter."""
    if not isinstance(attr.value, ast.Name):
        return None
    method: ast.AST | None = None
    node: ast.AST | None = attr
    while node is not None and not isinstance(node, ast.ClassDef):
        if isinstance(node, _NESTED) and not isinstance(node, ast.ClassDef):
            method = node if method is None else method
        node = ctx.scopes.parent(node)
    if not isinstance(node, ast.ClassDef) or not isinstance(
        method, ast.FunctionDef | ast.AsyncFunctionDef
    ):
        return None
    if ctx.scopes.parent(method) is not node or not _first_parameter(method, attr.value.id):
        return None
    out: list[Binding] = []
    for stmt in node.body:
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        own = stmt.args.posonlyargs + stmt.args.args
        if not own:
            continue
        me = own[0].arg
        for inner in ast.walk(stmt):
            targets = (
                inner.targets
                if isinstance(inner, ast.Assign)
                else [inner.target]
                if isinstance(inner, ast.AnnAssign | ast.AugAssign)
                else []
            )
            for target in targets:
                if not _self_store(target, me, attr.attr):
                    continue
                value = inner.value if isinstance(inner, ast.Assign | ast.AnnAssign) else None
                made = _class_made(ctx, value if len(targets) == 1 else None)
                if made is None:
                    return None
                out.append(made)
    return out or None


def _first_parameter(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    own = func.args.posonlyargs + func.args.args
    return bool(own) and own[0].arg == name and not func.decorator_list


def _self_store(target: ast.AST, me: str, attr: str) -> bool:
    """``self.net`` stored whole, or anything stored into it (``self.net[0] = ...``,
    ``self.net.x = ...``: then it is not known to hold only what ``Net(...)`` made)."""
    while isinstance(target, ast.Subscript | ast.Attribute):
        if (
            isinstance(target, ast.Attribute)
            and target.attr == attr
            and isinstance(target.value, ast.Name)
            and target.value.id == me
        ):
            return True
        target = target.value
    if isinstance(target, ast.Tuple | ast.List | ast.Starred):
        return any(_self_store(t, me, attr) for t in ast.walk(target) if t is not target)
    return False


def _class_bindings(ctx: Context, name: ast.Name) -> list[Binding] | None:
    """The binding of the class each binding of ``name`` calls (bound once), or None.

    None when ``name`` has no binding, or one of its bindings is not a call of a name
    (through ``.to(...)`` chains) bound once.
    """
    found = ctx.scopes.bindings(name.id, name)
    if not found:
        return None
    out = []
    for b in found:
        made = _class_made(ctx, getattr(b, "value", None))
        if made is None:
            return None
        out.append(made)
    return out


def _class_made(ctx: Context, value: ast.expr | None) -> Binding | None:
    """The binding of the name ``value`` calls (through ``.to(...)`` chains) when that name
    is bound once; else None."""
    bound = made_by(value)
    if not isinstance(bound, ast.Call) or not isinstance(bound.func, ast.Name):
        return None
    classes = ctx.scopes.bindings(bound.func.id, bound.func)
    return classes[0] if len(classes) == 1 else None


def converted_inputs(ctx: Context, project: ProjectImports, call: ast.Call) -> tuple[int, ...]:
    """The positions of ``call``'s arguments the model it runs makes its own tensor of.

    ``policy(state)`` with ``policy = ActorCritic()`` of the file, or of a project
    module (``project.converted``), whose forward does ``torch.from_numpy(state)``;
    ``self.policy(state)`` with every store of ``self.policy`` in the class such a call;
    ``policy.forward(state)`` as ``policy(state)``. ``()`` when the bindings disagree or
    are not known.
    """
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value  # `policy.forward(state)`: the same forward, called by name
    if isinstance(func, ast.Name):
        classes = _class_bindings(ctx, func)
    elif isinstance(func, ast.Attribute):
        classes = _self_class_bindings(ctx, func)
    else:
        return ()
    if classes is None:
        return ()
    answers: set[tuple[int, ...]] = set()
    for binding in classes:
        node = binding.node
        if isinstance(node, ast.ClassDef):
            answers.add(class_converted_inputs(ctx, node))
        elif binding.kind is BindingKind.IMPORT and binding.name in project.converted:
            answers.add(project.converted[binding.name])
        else:
            return ()
    return answers.pop() if len(answers) == 1 else ()


class HostMethods:
    """The plain methods of a file's classes that return only host values, by name.

    A method's body is searched only when a call names it (``ac.step``: the ``step``
    methods), once per name: most methods of a file are never asked about.
    """

    def __init__(self, ctx: Context, classdefs: Iterable[ast.ClassDef]) -> None:
        self.ctx = ctx
        # name -> (id(class), method) of every plain method so named, in class order
        self._methods: dict[str, list[tuple[int, ast.FunctionDef]]] = {}
        for cls in classdefs:
            for stmt in cls.body:
                if isinstance(stmt, ast.FunctionDef) and not stmt.decorator_list:
                    self._methods.setdefault(stmt.name, []).append((id(cls), stmt))
        self._owners: dict[str, set[int]] = {}  # name -> the classes whose one returns host values

    def owners(self, name: str) -> set[int]:
        """The classes (by ``id``) with a plain method ``name`` that returns only host values."""
        found = self._owners.get(name)
        if found is None:
            methods = self._methods.get(name, ())
            found = self._owners[name] = {c for c, m in methods if _returns_host_values(m)}
        return found

    def gives_host_values(self, func: ast.Attribute) -> bool:
        """``ac.step(obs)`` where every binding of ``ac`` is ``Cls(...)`` of one class of
        the file whose body defines ``step`` as a plain method returning only host
        values (``return self.v(obs).numpy()``, ``.item()``, ``.tolist()``, a number, a
        tuple of such): numpy or numbers, no forward's output."""
        if func.attr not in self._methods or not isinstance(func.value, ast.Name):
            return False
        owners = self.owners(func.attr)
        if not owners:
            return False
        classes = _class_bindings(self.ctx, func.value)
        return classes is not None and all(id(c.node) in owners for c in classes)


def _returns_host_values(func: ast.FunctionDef) -> bool:
    """Whether ``func`` returns, and every value it returns is a host value (see
    :meth:`HostMethods.gives_host_values`); a generator's yields are not looked at: none."""
    values: list[ast.expr | None] = []
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Return):
            values.append(node.value)
        if not isinstance(node, _NESTED):
            stack.extend(ast.iter_child_nodes(node))
    return bool(values) and all(v is not None and _host_value(v) for v in values)


def _host_value(expr: ast.expr) -> bool:
    """``t.numpy()``, ``t.item()``, ``t.tolist()`` (indexed or not), a constant, or a
    tuple of those."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Tuple):
        return bool(expr.elts) and all(_host_value(e) for e in expr.elts)
    if isinstance(expr, ast.Constant):
        return True
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in ("numpy", "item", "tolist")
        and not expr.args
    )
