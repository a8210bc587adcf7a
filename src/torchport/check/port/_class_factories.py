"""Classmethods of the project's own classes that make an instance of their class.

``vocab = Vocabulary.from_stoi(bundle["vocab_stoi"])`` in aamirmalik-dr/text-sentiment-lstm's
``predict.py``, ``from_stoi`` a classmethod of ``sentlstm.tokenizer.Vocabulary`` ending
``vocab = cls(); ...; return vocab``: an instance of a plain class, no tensor, where the port
said it came "from a library it cannot see into" (TP521).

:func:`object_factory` answers for a call ``C.m(...)`` where ``C`` names a module-level class
of the file, or one a ``from module import C`` of the project's own modules binds (found as
the project view finds modules): True where ``C`` has no base but ``object`` (no tensor
subclass), no metaclass and no decorator, and ``m``, defined in its body with a sole
``classmethod`` or ``staticmethod`` decorator, returns only **objects**: ``cls(...)`` (a
classmethod's first parameter) or ``C(...)``, a constant or f-string, a literal list, tuple
or dict of those, or a local name every binding of which (in ``m``'s own body) is a plain
assignment of one (a generator, or a name bound otherwise, is not). False where ``C`` is
such a class but ``m`` is not shown to return objects (a project callable: never "a
library's", TP521); None where the call is no such ``C.m(...)``. :func:`record_class` answers
whether a name is the file's namedtuple class (a tuple of what its constructor is given).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.port._module_files import module_facts
from torchport.check.port._script_path import module_function_called, script_lookups
from torchport.check.semantic._binding import BindingKind

__all__ = ["object_factory", "record_class"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_CACHE: dict[str, tuple[tuple[int, int], dict[str, dict[str, bool]]]] = {}
_KINDS = frozenset({"classmethod", "staticmethod"})


def object_factory(call: ast.Call, ctx: Context) -> bool | None:
    """Whether ``C.m(...)`` makes an object, not a tensor (module text); None: not one."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id[:1].isupper()
    ):
        return None
    binding = ctx.scopes.binding_at(func.value)
    if binding is None or binding.scope is not ctx.scopes.module:
        return None
    if binding.kind is BindingKind.CLASS:
        key = "class_factories.own"
        own = ctx.memo.get(key)
        if own is None:
            own = ctx.memo[key] = _classes_of(ctx.tree)
        methods = own.get(func.value.id)  # type: ignore[attr-defined]
    elif binding.kind is BindingKind.IMPORT:
        callee = module_function_called(ast.Call(func=func.value, args=[], keywords=[]), ctx)
        if callee is None or callee[1] is None:
            return None
        path = callee[1]
        classes = module_facts(path, script_lookups(ctx), _CACHE, _classes_of, {})
        methods = classes.get(callee[0])
    else:
        return None
    if methods is None:
        return None
    return bool(methods.get(func.attr, False))


def _classes_of(tree: ast.Module) -> dict[str, dict[str, bool]]:
    """Each module-level class: its methods, True where they return objects only."""
    found: dict[str, dict[str, bool]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            found[stmt.name] = _methods_of(stmt)  # the last definition counts
            continue
        for node in ast.walk(stmt):  # anything else that binds the name: not known
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.pop(node.id, None)
            elif isinstance(node, ast.alias):
                found.pop((node.asname or node.name).split(".")[0], None)
            elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
                found.pop(node.name, None)
    return found


def _methods_of(cls: ast.ClassDef) -> dict[str, bool]:
    plain = (
        not cls.decorator_list
        and not cls.keywords
        and all(isinstance(b, ast.Name) and b.id == "object" for b in cls.bases)
    )
    methods: dict[str, bool] = {}
    for stmt in cls.body:
        if isinstance(stmt, _FUNCTIONS):
            kinds = {getattr(d, "id", None) for d in stmt.decorator_list}
            one = len(stmt.decorator_list) == 1 and kinds <= _KINDS
            methods[stmt.name] = plain and one and _returns_objects(stmt, cls.name, kinds)
    return methods


def _returns_objects(
    func: ast.FunctionDef | ast.AsyncFunctionDef, cls_name: str, kinds: set[str | None]
) -> bool:
    params = [p.arg for p in (*func.args.posonlyargs, *func.args.args)]
    makers = {cls_name} | ({params[0]} if "classmethod" in kinds and params else set())
    nodes: list[ast.AST] = []
    todo: list[ast.AST] = list(func.body)
    while todo:
        node = todo.pop()
        nodes.append(node)
        todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))
    if isinstance(func, ast.AsyncFunctionDef) or any(
        isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes
    ):
        return False
    bound: dict[str, list[ast.expr | None]] = {}
    for n in nodes:
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            bound.setdefault(n.id, []).append(None)  # any binding: not known, unless below
    for n in nodes:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            values = bound[n.targets[0].id]
            values[values.index(None)] = n.value
    if (makers - {cls_name}) & set(bound) or cls_name in bound:
        return False  # `cls` or the class's name rebound in the method

    def made(expr: ast.expr | None, seen: frozenset[str]) -> bool:
        if isinstance(expr, (ast.Constant, ast.JoinedStr)):
            return True
        if isinstance(expr, (ast.List, ast.Tuple)):
            return all(made(e, seen) for e in expr.elts)
        if isinstance(expr, ast.Dict):
            return all(made(e, seen) for e in (*expr.keys, *expr.values))
        if isinstance(expr, ast.Call):
            return isinstance(expr.func, ast.Name) and expr.func.id in makers
        if isinstance(expr, ast.Name) and expr.id in bound and expr.id not in seen:
            return all(made(v, seen | {expr.id}) for v in bound[expr.id])
        return False

    returns = [n for n in nodes if isinstance(n, ast.Return)]
    return all(r.value is None or made(r.value, frozenset()) for r in returns)


_NAMEDTUPLES = frozenset({"collections.namedtuple", "typing.NamedTuple"})


def record_class(func: ast.expr, ctx: Context) -> bool:
    """Whether ``func`` names a namedtuple class of the file (one binding).

    ``Pair = collections.namedtuple("Pair", "out target")`` (or
    ``typing.NamedTuple``) and ``class Pair(NamedTuple)``: a tuple of what its
    constructor is given, with no code of its own that could make a tensor.
    """
    if not isinstance(func, ast.Name):
        return False
    found = ctx.scopes.bindings(func.id, func)
    if len(found) != 1:
        return False
    node, value = found[0].node, found[0].value
    if isinstance(node, ast.ClassDef):
        plain = all(
            isinstance(s, ast.AnnAssign | ast.Pass | ast.Expr) for s in node.body
        )  # fields and a docstring: no method of its own
        bases = {ctx.qualname(b) for b in node.bases}
        return plain and bool(bases) and bases <= _NAMEDTUPLES
    return isinstance(value, ast.Call) and ctx.qualname(value.func) in _NAMEDTUPLES
