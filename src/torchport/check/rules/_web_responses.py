"""A CUDA-or-CPU choice that is only a web response's text: a FastAPI route's returned field.

Held-out sample AD, pos 58 (roboticsai's ``src/inference/groot_server.py``): ``@app.get(
"/health", response_model=HealthResponse) def health(): return HealthResponse(...,
device="cuda" if torch.cuda.is_available() else "cpu", ...)``, judged low (f): the value
is the health response's ``device`` text, and no device is chosen from it. a34l's F2
narrowing (``_idle_choices._only_shown``) follows a choice bound to a name to its reads;
this one is given straight to the response, so it had no name to follow. TP109 leaves the
choice when all of this holds (any doubt: reported):

* the choice is returned by a function as it stands: ``return Model(..., key=<choice>)`` of a
  class of the module subclassing ``pydantic.BaseModel`` whose field ``key`` is annotated
  ``str`` (``Optional[str]``, ``str | None``) and whose body defines no function (no
  validator may turn the text into something else), or ``return {"key": <choice>, ...}``;
* the function is a FastAPI route: a decorator ``@x.get(...)`` (``post``, ``put``,
  ``patch``, ``delete``, ``api_route``, ...) with ``x`` bound in the module only to
  ``fastapi.FastAPI(...)`` or ``fastapi.APIRouter(...)``: FastAPI serializes what it returns
  as JSON for the client;
* the module names the function nowhere else (no call of it reads the response's field).

Kept: a field annotated otherwise (``torch.device``, ``Any``), a response built and kept
(``resp = ...; resp.device``), a function that is no route or that the module also calls, a
model with a validator. Not seen from the module: another module importing the route
function and calling it to read the field.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["only_a_response_field"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_VERBS = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "api_route"})
_APPS = frozenset({"fastapi.FastAPI", "fastapi.APIRouter", "fastapi.routing.APIRouter"})
_MODELS = frozenset({"pydantic.BaseModel", "pydantic.main.BaseModel"})


def only_a_response_field(node: ast.IfExp, ctx: Context) -> bool:
    """Whether the choice ``node`` is only a route's returned text field."""
    chain = ctx.ancestors
    if len(chain) < 4:
        return False
    holder, up = chain[-1], chain[-2]
    if isinstance(holder, ast.keyword) and holder.arg and isinstance(up, ast.Call):
        ret, field = chain[-3], holder.arg
        if not _text_field(up, field, ctx):
            return False
    elif isinstance(holder, ast.Dict) and any(v is node for v in holder.values):
        ret, up = up, holder
    else:
        return False
    if not (isinstance(ret, ast.Return) and ret.value is up):
        return False
    at = next((i for i in range(len(chain) - 1, 0, -1) if isinstance(chain[i], _FUNCTIONS)), 0)
    func, scope = chain[at], chain[at - 1]
    if not isinstance(func, _FUNCTIONS) or not isinstance(scope, (ast.Module, *_FUNCTIONS)):
        return False  # a method: its class decides what calls it
    return _route(func, scope, ctx) and not _named_elsewhere(func, ctx)


def _text_field(call: ast.Call, field: str, ctx: Context) -> bool:
    """``call`` builds a pydantic model of the module whose ``field`` is text."""
    if not isinstance(call.func, ast.Name):
        return False
    classes = [
        c for c in ast.walk(ctx.tree) if isinstance(c, ast.ClassDef) and c.name == call.func.id
    ]
    if len(classes) != 1:
        return False
    cls = classes[0]
    if not any(ctx.qualname(b) in _MODELS for b in cls.bases) or cls.decorator_list:
        return False
    if any(isinstance(s, (*_FUNCTIONS, ast.ClassDef)) for s in cls.body):
        return False  # a validator, a nested config that may hold one
    return any(
        isinstance(s, ast.AnnAssign)
        and isinstance(s.target, ast.Name)
        and s.target.id == field
        and _text(s.annotation, ctx)
        for s in cls.body
    )


def _text(annotation: ast.expr, ctx: Context) -> bool:
    """``str``, ``Optional[str]``, ``str | None`` (a string annotation of those too)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(annotation, ast.Name):
        return annotation.id == "str"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = (annotation.left, annotation.right)
        return any(
            _text(a, ctx) and isinstance(b, ast.Constant) and b.value is None
            for a, b in (sides, sides[::-1])
        )
    if isinstance(annotation, ast.Subscript):
        name = ctx.qualname(annotation.value) or ""
        return name in ("typing.Optional",) and _text(annotation.slice, ctx)
    return False


def _route(func: ast.FunctionDef | ast.AsyncFunctionDef, scope: ast.AST, ctx: Context) -> bool:
    """A decorator ``@app.<verb>(...)`` with ``app`` bound in ``scope`` (where the decorator
    is evaluated: the module, or the function defining the route) only to a FastAPI app or
    router."""
    for decorator in func.decorator_list:
        if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)):
            continue
        app = decorator.func.value
        if decorator.func.attr in _VERBS and isinstance(app, ast.Name) and _app(app.id, scope, ctx):
            return True
    return False


def _app(name: str, scope: ast.AST, ctx: Context) -> bool:
    """``name`` is bound in ``scope`` (not in the functions or classes it defines, whose names
    are their own) only by ``name = fastapi.FastAPI(...)`` or ``APIRouter(...)``."""
    bound = 0
    for sub in _own_nodes(scope):
        if isinstance(sub, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in sub.targets
        ):
            value = sub.value
            if not (isinstance(value, ast.Call) and ctx.qualname(value.func) in _APPS):
                return False
            bound += 1
        elif _binds_otherwise(sub, name):
            return False
    if any(
        isinstance(g, (ast.Global, ast.Nonlocal)) and name in g.names for g in ast.walk(ctx.tree)
    ):
        return False  # rebound from a function
    return bound > 0


def _binds_otherwise(node: ast.AST, name: str) -> bool:
    """A parameter, an import, a loop or ``with`` target, a ``def`` named ``name``."""
    if isinstance(node, ast.arg):
        return node.arg == name
    if isinstance(node, ast.alias):
        return (node.asname or node.name.partition(".")[0]) == name
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.withitem)):
        target = getattr(node, "target", None) or getattr(node, "optional_vars", None)
        return any(isinstance(t, ast.Name) and t.id == name for t in ast.walk(target or node))
    return isinstance(node, ast.NamedExpr) and node.target.id == name


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope``'s own statements, not those of functions, lambdas and classes
    it defines (their decorators, defaults and bases are its own)."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(getattr(scope, "body", []))
    if isinstance(scope, _FUNCTIONS):
        todo.append(scope.args)
    while todo:
        node = todo.pop()
        found.append(node)
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            todo.extend(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                todo.extend([*node.bases, *node.keywords])
            else:
                todo.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
            continue
        if isinstance(node, ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def _named_elsewhere(func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context) -> bool:
    """The module names the function other than by its ``def`` (a call, a reference, a
    string)."""
    for sub in ast.walk(ctx.tree):
        if isinstance(sub, ast.Name) and sub.id == func.name:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == func.name:
            return True
        if isinstance(sub, ast.Constant) and sub.value == func.name:
            return True
        other = isinstance(sub, (*_FUNCTIONS, ast.ClassDef)) and sub is not func
        if other and sub.name == func.name:  # type: ignore[attr-defined]
            return True  # another definition of the name
    return False
