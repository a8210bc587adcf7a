"""Which of the file's functions a call runs: the port's call sites for models.

A model handed to a function of the file (``train(model, loader)``), to a method
of one of its classes (``Job().run(model)``, ``job.run(model)``) or to a class's
``__init__`` (``Job(model)``) is followed into that function's parameter, so the
tensors made there for it are moved. A method name several of the file's classes
define is settled by the receiver's class (``Job1()``, a name bound only to one);
where that is unknown the call is recorded in ``PortFacts.unresolved_calls`` and
a model handed to it is reported (TP523) instead.
"""

from __future__ import annotations

import ast
import weakref

from torchport.check.port._device_flow import PortScope
from torchport.check.port._handed_on import rest_of
from torchport.check.semantic import Binding, BindingKind, ScopeMap

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._device_flow import DeviceFlow
    from torchport.check.port._facts import PortFacts

__all__ = [
    "callee",
    "callees",
    "handed",
    "method_of_receiver",
    "methods_by_name",
    "overrides",
    "partial_target",
    "receiver_class",
    "shows_items",
]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_Function = ast.FunctionDef | ast.AsyncFunctionDef


def methods_by_name(scopes: list[PortScope]) -> dict[str, list[tuple[_Function, str]]]:
    """Methods of the file's own classes (not a library's): name -> (method, class).

    Each method is also under ``"<class>.<name>"`` (no method name has a dot):
    ``Job(model)`` and ``job.run(model)`` look their class's up at once; a scan of
    every method of that name for each call was quadratic in the file's classes.
    """
    found: dict[str, list[tuple[_Function, str]]] = {}
    for scope in scopes[1:]:
        node = scope.node
        if scope.cls is not None and not scope.internal and isinstance(node, _FUNCTIONS):
            found.setdefault(node.name, []).append((node, scope.cls.name))
            found.setdefault(f"{scope.cls.name}.{node.name}", []).append((node, scope.cls.name))
    return found


def callees(
    facts: PortFacts,
    node: ast.Call,
    scope: PortScope,
    methods: dict[str, list[tuple[_Function, str]]],
) -> list[tuple[_Function, int]]:
    """Every function of the file a call may run: :func:`callee`'s, and for a method, the
    overrides of it in the file's subclasses of its class (``self.learn()`` in a base
    runs a subclass's ``learn`` on the subclass's instances)."""
    partial = partial_target(facts, node)
    if partial is not None:  # `functools.partial(step, model)`, or a call of one
        return [partial]
    found = callee(facts, node, scope, methods)
    if found is None:
        return []
    method, bound = found
    if bound != 1 or not isinstance(node.func, ast.Attribute):
        return [found]
    owners = [c for m, c in methods.get(method.name, ()) if m is method]
    cls = _file_classes(facts).get(owners[0]) if owners else None
    if cls is None:
        return [found]
    subclasses = _subclasses(facts, cls)
    return [found] + [
        (m, 1)
        for m, c in methods.get(method.name, ())
        if m is not method and any(s.name == c for s in subclasses)
    ]


_PARTIALS = frozenset({"functools.partial"})


def partial_target(facts: PortFacts, node: ast.Call) -> tuple[_Function, int] | None:
    """The file's function a partial of it runs, and how many leading parameters the call
    does not fill: ``functools.partial(step, model)`` fills ``step``'s from its second
    argument on (-1: the call's first argument is ``step`` itself); ``f(x)`` with ``f`` bound
    once to that partial fills those after the partial's (``1``: ``model``'s). Keywords
    the partial binds are matched by name, as a call's. None: no such call.

    Either call is one whose function the imports make ``functools.partial``, so the
    file's text names ``partial``: a file that does not (most) has no such call, and
    is told so without a scope question per call (its text searched once).
    """
    if not _names_partial(facts):
        return None
    made = _partial_of(facts, node)
    if made is not None:
        return made, -1
    func = node.func
    if not isinstance(func, ast.Name):
        return None
    found = facts.ctx.scopes.bindings(func.id, func)
    value = found[0].value if len(found) == 1 else None
    if not isinstance(value, ast.Call):
        return None
    made = _partial_of(facts, value)
    if made is None or any(isinstance(a, ast.Starred) for a in value.args):
        return None
    return made, len(value.args) - 1


def _names_partial(facts: PortFacts) -> bool:
    """Whether the file's text has ``partial`` anywhere (searched once per file)."""
    memo = facts.ctx.memo
    found = memo.get("port.names_partial")
    if found is None:
        found = memo["port.names_partial"] = "partial" in facts.ctx.source
    return found is True


def _partial_of(facts: PortFacts, node: ast.Call) -> _Function | None:
    """``step`` of ``functools.partial(step, ...)`` when it is a plain function of the file."""
    if facts.ctx.qualname(node.func) not in _PARTIALS or not node.args:
        return None
    first = node.args[0]
    if not isinstance(first, ast.Name):
        return None
    found = facts.functions.get(first.id)
    scopes = facts.ctx.scopes
    if found is not None and scopes.resolve(first.id, first) is scopes.module:
        return found
    return _nested_function(facts, first)


def _subclasses(facts: PortFacts, cls: ast.ClassDef) -> list[ast.ClassDef]:
    """The file's classes deriving from ``cls`` through the file's classes (by name)."""
    found: list[ast.ClassDef] = []
    names = {cls.name}
    changed = True
    while changed:
        changed = False
        for other in _file_classes(facts).values():
            if other.name in names:
                continue
            if any(isinstance(b, ast.Name) and b.id in names for b in other.bases):
                names.add(other.name)
                found.append(other)
                changed = True
    return found


def overrides(facts: PortFacts, method: _Function, cls: ast.ClassDef) -> list[_Function]:
    """The methods of the file's subclasses of ``cls`` that override ``method``."""
    return [
        stmt
        for sub in _subclasses(facts, cls)
        for stmt in sub.body
        if isinstance(stmt, _FUNCTIONS) and stmt.name == method.name
    ]


def callee(
    facts: PortFacts,
    node: ast.Call,
    scope: PortScope,
    methods: dict[str, list[tuple[_Function, str]]],
) -> tuple[_Function, int] | None:
    """The file's function a call runs, and how many leading parameters it fills itself."""
    func = node.func
    if isinstance(func, ast.Name):
        found = facts.functions.get(func.id)
        # Not shadowed by a local of another kind (`x not in local - functions`, without
        # building that set for every call).
        if found is not None and (func.id not in scope.local or func.id in facts.functions):
            return found, 0
        nested = _nested_function(facts, func)
        if nested is not None:
            return nested, 0
        inits = [m for m, _ in methods.get(f"{func.id}.__init__", ())]
        return (inits[0], 1) if len(inits) == 1 else None  # `Job(model)`
    if isinstance(func, ast.Attribute) and func.attr != "__init__":
        # `Job().run(model)`, `job.run(model)`, `self.job.run(x)`: a method of one of the
        # file's classes, the one of the receiver's class (or a base of it the file
        # defines), or the only one of that name when the receiver's class is not told.
        candidates = methods.get(func.attr, [])
        if not candidates:
            return None
        owner = receiver_class(facts, func.value, scope)
        if owner is not None:
            candidates = _inherited(facts, owner, func.attr, methods)
        elif len(candidates) > 1:
            facts.unresolved_calls.add(id(node))  # what is handed here: reported
            return None
        if len(candidates) == 1:
            method = candidates[0][0]
            static = any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list
            )
            return method, 0 if static else 1
    return None


def method_of_receiver(
    facts: PortFacts, func: ast.Attribute, scope: PortScope | None
) -> _Function | None:
    """The method ``<receiver>.<name>`` runs when the code says the receiver's class
    (:func:`receiver_class`): that class's own, else the first of its file bases'."""
    owner = receiver_class(facts, func.value, scope)
    if owner is None:
        return None
    classes = _file_classes(facts)
    seen: set[int] = set()
    stack = [owner]
    while stack:
        cls = stack.pop(0)
        if id(cls) in seen:
            continue
        seen.add(id(cls))
        for stmt in cls.body:
            if isinstance(stmt, _FUNCTIONS) and stmt.name == func.attr:
                return stmt
        stack += [classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in classes]
    return None


def _nested_function(facts: PortFacts, func: ast.Name) -> _Function | None:
    """The function a name calls when one ``def`` (in a function, or under an ``if``)
    is its only binding where it is read: not a method, not a library's class."""
    found = facts.ctx.scopes.bindings(func.id, func)
    node = found[0].node if len(found) == 1 and found[0].kind is BindingKind.DEF else None
    if not isinstance(node, _FUNCTIONS):
        return None
    inner = facts.scope_of_function(node)
    return node if inner.cls is None and not inner.internal else None


def _inherited(
    facts: PortFacts,
    owner: ast.ClassDef,
    name: str,
    methods: dict[str, list[tuple[_Function, str]]],
) -> list[tuple[_Function, str]]:
    """``owner``'s method ``name``: its own, else the first of its bases the file defines."""
    classes = _file_classes(facts)
    seen: set[int] = set()
    stack = [owner]
    while stack:
        cls = stack.pop(0)
        if id(cls) in seen:
            continue
        seen.add(id(cls))
        found = methods.get(f"{cls.name}.{name}", [])
        if found:
            return found
        stack += [classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in classes]
    return []


def _class_of(facts: PortFacts, expr: ast.expr, scope: PortScope) -> str | None:
    """The name of the file's class an object is made from, where the code says which."""
    cls = receiver_class(facts, expr, scope)
    return cls.name if cls is not None else None


def receiver_class(
    facts: PortFacts, expr: ast.expr, scope: PortScope | None = None, depth: int = 0
) -> ast.ClassDef | None:
    """The file's class ``expr`` is an instance of, where the code says which (else None).

    ``self`` in a method of the class; ``Job()``; a name every binding of which is
    ``Job(...)``, or a parameter annotated ``Job`` (``"Job"`` too); ``self.job`` (or
    ``trainer.job`` of an object whose class is known) where every store of that
    attribute in its class is ``Job(...)`` and the file stores it nowhere else.
    """
    classes = _file_classes(facts)
    if depth > 3 or not classes:
        return None
    if isinstance(expr, ast.Call):
        return classes.get(expr.func.id) if isinstance(expr.func, ast.Name) else None
    if isinstance(expr, ast.Name):
        if expr.id == "self" and scope is not None and scope.cls is not None:
            return scope.cls
        found = facts.ctx.scopes.bindings(expr.id, expr)
        if not found:
            return None
        owners = {id(c): c for b in found if (c := _bound_class(facts, b, depth)) is not None}
        made = all(_bound_class(facts, b, depth) is not None for b in found)
        return next(iter(owners.values())) if made and len(owners) == 1 else None
    if isinstance(expr, ast.Attribute):
        owner = receiver_class(facts, expr.value, scope, depth + 1)
        return _attribute_class(facts, owner, expr.attr, depth) if owner is not None else None
    return None


def _bound_class(facts: PortFacts, binding: Binding, depth: int) -> ast.ClassDef | None:
    """The file's class one binding of a name makes an instance of (``x = Job()``,
    ``def f(x: Job)``), else None."""
    classes = _file_classes(facts)
    if binding.kind is BindingKind.PARAMETER and isinstance(binding.node, ast.arg):
        note = binding.node.annotation
        if isinstance(note, ast.Constant) and isinstance(note.value, str):
            return classes.get(note.value)
        return classes.get(note.id) if isinstance(note, ast.Name) else None
    if binding.kind is BindingKind.ASSIGN and binding.value is not None:
        return receiver_class(facts, binding.value, None, depth + 1)
    return None


def _attribute_class(
    facts: PortFacts, owner: ast.ClassDef, attr: str, depth: int
) -> ast.ClassDef | None:
    """The class of ``<an instance of owner>.<attr>``: every store of ``self.<attr>`` in
    ``owner`` makes one of the same file class, and no other code stores ``.<attr>``."""
    stores = _attribute_stores(facts)
    made: list[ast.ClassDef | None] = []
    for target, value, cls in stores.get(attr, ()):
        on_self = isinstance(target.value, ast.Name) and target.value.id == "self"
        if cls is not owner or not on_self:
            return None  # stored on another object, or by another class: not told
        made.append(receiver_class(facts, value, None, depth + 1) if value is not None else None)
    if not made or any(m is None for m in made) or len({id(m) for m in made}) != 1:
        return None
    return made[0]


_CLASSES: weakref.WeakKeyDictionary[PortFacts, dict[str, ast.ClassDef]] = (
    weakref.WeakKeyDictionary()
)
_STORES: weakref.WeakKeyDictionary[
    PortFacts, dict[str, list[tuple[ast.Attribute, ast.expr | None, ast.ClassDef | None]]]
] = weakref.WeakKeyDictionary()


def _file_classes(facts: PortFacts) -> dict[str, ast.ClassDef]:
    """The file's classes by name (a name two classes share is neither's), built once."""
    found = _CLASSES.get(facts)
    if found is None:
        counts: dict[str, int] = {}
        for cls in facts.classdefs:
            counts[cls.name] = counts.get(cls.name, 0) + 1
        found = _CLASSES[facts] = {c.name: c for c in facts.classdefs if counts[c.name] == 1}
    return found


def _attribute_stores(
    facts: PortFacts,
) -> dict[str, list[tuple[ast.Attribute, ast.expr | None, ast.ClassDef | None]]]:
    """Every store of an attribute in the file: attr -> (target, value or None when it
    is unpacked into, the class whose method stores it), built once per file."""
    found = _STORES.get(facts)
    if found is None:
        found = _STORES[facts] = {}
        for scope in facts.scopes:
            for targets, value in scope.assigns:
                for target in targets:
                    _add_stores(found, target, value, scope.cls)
            for node in scope.nodes:  # `self.x += ...`, `for self.x in ...`, `with ... as self.x`
                if isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor):
                    _add_stores(found, node.target, None, scope.cls)
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    _add_stores(found, node.optional_vars, None, scope.cls)
    return found


def _add_stores(
    found: dict[str, list[tuple[ast.Attribute, ast.expr | None, ast.ClassDef | None]]],
    target: ast.expr,
    value: ast.expr | None,
    cls: ast.ClassDef | None,
) -> None:
    if isinstance(target, ast.Attribute):
        found.setdefault(target.attr, []).append((target, value, cls))
    elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
        for n in ast.walk(target):
            if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load):
                found.setdefault(n.attr, []).append((n, None, cls))


def handed(
    call: ast.Call, params: list[str], target: PortScope, flow: DeviceFlow
) -> list[tuple[str, ast.expr]]:
    """(parameter, argument) for each argument an own call hands a named parameter of
    ``target`` (or its ``*args`` tuple, its ``**kwargs`` dict: issue 31, a device value
    handed there was followed nowhere); the items of a dict unpacked into keywords
    (``f(**d)``) by their keys (``LiteralItems.unpacked``); a starred argument (``f(*outs)``)
    and each after it to every parameter from its place on (any may take one of its items:
    the ``Starred`` node, whose items the flow reads, issue 31)."""
    pairs: list[tuple[str, ast.expr]] = []
    node = target.node
    rest = getattr(getattr(node, "args", None), "vararg", None)  # `def f(*ts)`: the rest
    star = None
    for i, arg in enumerate(call.args):
        star = i if star is None and isinstance(arg, ast.Starred) else star
        if star is not None:  # `f(*outs)`: any parameter from here may take an item (the
            items = _starred_items(arg, flow)  # Starred: its items, to the flow)
            pairs += [(p, item) for p in params[star:] for item in items]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and rest is not None:
                pairs += [(rest.arg, item) for item in items]
        elif i < len(params):
            pairs.append((params[i], arg))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and rest is not None:
            pairs.append((rest.arg, arg))  # (a tuple of what they hand: `ts[0]` is one)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        a = node.args
        names = {p.arg for p in (*a.args, *a.kwonlyargs)}
        pairs += [(k.arg, k.value) for k in call.keywords if k.arg is not None and k.arg in names]
        for k in call.keywords:
            given = flow.items.unpacked(k.value) if k.arg is None else None
            if k.arg is None and given is None and rest_of(k.value, flow.ctx.scopes, "kwarg"):
                given = {n: [k.value] for n in names}  # `g(**kwargs)` of the caller's own
                if a.kwarg is not None:  # (any parameter may take one of its items)
                    pairs.append((a.kwarg.arg, k.value))
            pairs += [(key, v) for key, vs in (given or {}).items() if key in names for v in vs]
            if a.kwarg is not None:  # `def f(**kw)`: a dict of the keywords no parameter takes
                pairs += (
                    [(a.kwarg.arg, k.value)] if k.arg is not None and k.arg not in names else []
                )
                pairs += [
                    (a.kwarg.arg, v)
                    for n, vs in (given or {}).items()
                    if n not in names
                    for v in vs
                ]
    return pairs


def _starred_items(arg: ast.expr, flow: DeviceFlow) -> list[ast.expr]:
    """What the starred ``arg`` hands a parameter where the code shows a container of items:
    the values of ``*d.values()`` (``LiteralItems.view_values``), else ``arg`` itself (its
    items, to the flow) where it is a display, a comprehension, or a name bound only to such
    or to a split of a tensor (``outs = y.chunk(2)``); nothing where it is anything else (a
    loop's variable, a call's result: the flow cannot tell what it holds, and a tensor met
    there is reported, not moved)."""
    held = arg.value if isinstance(arg, ast.Starred) else arg
    if (
        isinstance(held, ast.Call)
        and isinstance(held.func, ast.Attribute)
        and held.func.attr == "values"
        and not held.args
    ):
        found = flow.items.view_values(held.func.value)
        return [] if found is None else found
    if rest_of(held, flow.ctx.scopes, "vararg") is not None:
        return [arg]  # `g(*args)` of the caller's own `*args`: its items, to the flow
    return [arg] if shows_items(held, flow.ctx.scopes) else []


def shows_items(held: ast.expr, scopes: ScopeMap) -> bool:
    """Whether ``held`` is a container whose items the code shows: a display, a comprehension,
    a split of a tensor, a dict's ``.values()`` (its kinds, ``_elements``), or a name bound
    only to such."""
    func = held.func if isinstance(held, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr == "values":
        return True
    values: list[ast.expr | None] = [held]
    if isinstance(held, ast.Name):
        values = [b.value for b in scopes.bindings(held.id, held)]
    return bool(values) and all(v is not None and _container(v) for v in values)


def _container(value: ast.expr) -> bool:
    """A display, a comprehension, or a split of a tensor (its items: tensors)."""
    if isinstance(value, ast.List | ast.Tuple | ast.ListComp | ast.GeneratorExp | ast.SetComp):
        return True
    func = value.func if isinstance(value, ast.Call) else None
    return isinstance(func, ast.Attribute) and func.attr in _SPLITS


_SPLITS = frozenset({"chunk", "split", "unbind", "tensor_split", "hsplit", "vsplit"})
