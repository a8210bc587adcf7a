"""A device parameter whose CPU default every caller of the file overrides.

``def accuracy(model, loader, device: str = "cpu")`` in aamirmalik-dr/text-sentiment-lstm's
``train.py`` runs ``model(ids.to(device), lengths.to(device))``, and its one caller in the
file is ``accuracy(self.model, loader, self.device)``: where what callers hand is the
program's device, the ``.to(device)`` is its own choice, handed down, not a placement on the
CPU that "the code puts this value on the CPU" (TP523) should name. (There, ``self.device``
is ``Trainer.device: str = "cpu"``, which no script sets: the CPU, and TP523 stays.)

:func:`given_by_callers` answers for a device expression that names the CPU only through a
parameter's default: True where that parameter is the sole binding of its name in a
module-level function of the file, the function's name is bound once at the module, every
read of that name in the file is a call of it (no callback, no alias: each caller is seen);
or of a ``classmethod``/``staticmethod`` ``m`` of a module-level class ``C`` every ``.m`` of
the file reads as ``C.m(...)`` (``SentimentClassifier.load(path, device=device)``);
there is at least one, and each hands the parameter (by position, with no ``*args`` before
it, or by keyword) something that does not name the CPU in the caller's scope. Where one call
leaves it to its default (or passes the CPU), the finding stays: that call places on the CPU.
An argument ``self.a`` in a method of a class of the file that binds ``a`` to the CPU
(a class-level default, ``self.a = d`` of a CPU-defaulting ``d``) names the CPU: what
``Trainer.fit`` hands down from ``Trainer.device: str = "cpu"`` is the CPU where no one sets it.
Callers in other modules are not seen (a module that imports the function and leaves the
default gets the CPU, where its own model is too, unless it moves that model itself).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check._context import Context
from torchport.check.semantic._binding import BindingKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts, PortScope

__all__ = ["cpu_here", "given_by_callers"]


def given_by_callers(
    expr: ast.expr,
    func: ast.AST,
    ctx: Context,
    names_cpu: Callable[[ast.expr, ast.Call], bool],
) -> bool:
    """Whether ``expr``, a parameter of ``func``, is handed a non-CPU device by every call of
    ``func`` in the file (module text); ``names_cpu(arg, call)``: whether an argument names
    the CPU where ``call`` is."""
    scopes = ctx.scopes
    if not (
        isinstance(expr, ast.Name) and isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
    ):
        return False
    found = scopes.bindings(expr.id, expr)
    if len(found) != 1 or found[0].kind is not BindingKind.PARAMETER:
        return False
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    if expr.id not in {*positional, *(p.arg for p in a.kwonlyargs)}:
        return False  # a parameter of an enclosing function, a lambda's
    position = positional.index(expr.id) if expr.id in positional else -1
    owner = scopes.parent(func)
    if owner is ctx.tree:
        calls = _calls_of_function(func, ctx)
    elif isinstance(owner, ast.ClassDef) and scopes.parent(owner) is ctx.tree:
        kinds = [getattr(d, "id", None) for d in func.decorator_list]
        if kinds not in (["classmethod"], ["staticmethod"]):
            return False  # an instance method: its callers' receivers are not followed
        position -= 1 if kinds == ["classmethod"] and position >= 0 else 0
        calls = _calls_of_method(func, owner, ctx)
    else:
        return False
    return bool(calls) and all(_given(c, position, expr.id, names_cpu) for c in calls)


def _calls_of_function(
    func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context
) -> list[ast.Call]:
    """Every call of a module-level function in its file ([]: a read that is not a call)."""
    scopes = ctx.scopes
    defs = scopes.bindings(func.name, func)
    if len(defs) != 1 or defs[0].node is not func:
        return []
    calls = []
    for read in scopes.loads_of(func.name):
        if scopes.resolve(func.name, read) is not scopes.module:
            continue  # another variable of that name
        call = scopes.parent(read)
        if not (isinstance(call, ast.Call) and call.func is read):
            return []  # handed on, stored: called where the port cannot see
        calls.append(call)
    return calls


def _calls_of_method(
    func: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef, ctx: Context
) -> list[ast.Call]:
    """Every ``C.m(...)`` of a class- or static method ``m`` of the module-level class ``C``
    in its file ([]: any other ``.m`` read, on any receiver, or ``m`` defined twice)."""
    scopes = ctx.scopes
    defs = scopes.bindings(cls.name, cls)
    if len(defs) != 1 or defs[0].node is not cls:
        return []
    if [s for s in cls.body if getattr(s, "name", None) == func.name] != [func]:
        return []
    calls = []
    for node in ast.walk(ctx.tree):
        if not (isinstance(node, ast.Attribute) and node.attr == func.name):
            continue
        call = scopes.parent(node)
        if not (
            isinstance(node.value, ast.Name)
            and node.value.id == cls.name
            and scopes.resolve(cls.name, node.value) is scopes.module
            and isinstance(call, ast.Call)
            and call.func is node
        ):
            return []  # `self.load(...)`, `Sub.load`, `f = C.load`: not followed
        calls.append(call)
    return calls


def _given(
    call: ast.Call, position: int, name: str, names_cpu: Callable[[ast.expr, ast.Call], bool]
) -> bool:
    arg = next((k.value for k in call.keywords if k.arg == name), None)
    if arg is None and position >= 0:
        starred = any(isinstance(a, ast.Starred) for a in call.args[: position + 1])
        arg = None if starred or position >= len(call.args) else call.args[position]
    return arg is not None and not names_cpu(arg, call)


def cpu_here(facts: PortFacts) -> Callable[[ast.expr, PortScope | None], bool]:
    """Whether a device expression names the CPU in a scope of ``facts``'s file
    (``PortFacts.names_cpu``: a parameter's CPU default too), unless it is a parameter every
    caller in the file hands a device (:func:`given_by_callers`)."""

    def names_cpu(arg: ast.expr, call: ast.Call) -> bool:
        scope = facts.scope_of.get(id(call)) or facts.module
        return facts.names_cpu(arg, scope) or _cpu_attribute(arg, scope.node, facts)

    def here(expr: ast.expr, scope: PortScope | None) -> bool:
        scope = scope or facts.module
        if not facts.names_cpu(expr, scope):
            return False
        return not given_by_callers(expr, scope.node, facts.ctx, names_cpu)

    return here


def _cpu_attribute(arg: ast.expr, method: ast.AST | None, facts: PortFacts) -> bool:
    """``self.device`` in a method of a module-level class of the file that binds ``device``
    to the CPU anywhere: its class-level default (``device: str = "cpu"`` of a dataclass,
    ``field(default="cpu")``) or ``self.device = d`` in a method, where ``d`` names the CPU
    there (a parameter's default too). text-sentiment-lstm's ``Trainer.device``, which no
    script sets: what it hands down is the CPU."""
    scopes = facts.ctx.scopes
    cls = scopes.parent(method) if method is not None else None
    if not (
        isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
        and isinstance(cls, ast.ClassDef)
        and isinstance(arg, ast.Attribute)
        and isinstance(arg.value, ast.Name)
        and [p.arg for p in (*method.args.posonlyargs, *method.args.args)][:1] == [arg.value.id]
    ):
        return False
    for stmt in cls.body:
        value = getattr(stmt, "value", None)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == arg.attr for t in targets):
                if isinstance(value, ast.Call) and not facts.names_cpu(value, facts.module):
                    value = next((k.value for k in value.keywords if k.arg == "default"), value)
                if facts.names_cpu(value, facts.module):
                    return True  # the class's default
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        own = [p.arg for p in (*stmt.args.posonlyargs, *stmt.args.args)][:1]
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Assign)
                and any(
                    isinstance(t, ast.Attribute)
                    and t.attr == arg.attr
                    and isinstance(t.value, ast.Name)
                    and [t.value.id] == own
                    for t in node.targets
                )
                and facts.names_cpu(node.value, facts.scope_of.get(id(node)) or facts.module)
            ):
                return True  # `self.device = device` of a parameter defaulting to the CPU
    return False
