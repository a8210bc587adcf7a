"""A parameter no code reads: its default, whatever device it names, places nothing.

Held-out sample Z, pos 15 (pytorch_timeseries ``Informer.py:120``):
``InformerStack.__init__(..., device=torch.device('cuda:0'))``, the parameter never read in
the class, judged low (e). A value reaches code only by being read: a parameter whose name no
statement of its function reads cannot put anything on CUDA, default or passed, so TP101 has
nothing to port there (the default's own evaluation aside: ``_passed_defaults._made_anywhere``
still asks that it runs without CUDA when the ``def`` runs).

The invariant, each point needed (any doubt: read, and the default is reported):

* no name of the function's body (its statements, nested functions, lambdas, comprehensions
  and classes, their defaults and decorators: anything below the ``def`` but its own
  signature and decorators) is the parameter's, in any context: a read, a rebinding that a
  later read might follow, a ``del``, a ``nonlocal`` of a nested function;
* the body names no frame reader (``locals()``, ``vars()``, ``eval``, ``exec``, ``dir()``,
  also as an attribute, ``builtins.eval``: they see the parameter without naming it), and the
  file spells none of :data:`_INTROSPECTION`: ``inspect`` at all (``currentframe``,
  ``stack``, ``signature``, ``getcallargs``, imported from it or not), ``sys._getframe``, a
  frame's ``f_locals``/``f_back``, Lightning's ``save_hyperparameters()`` and fastai's
  ``store_attr()`` (which read their caller's frame), a function's ``__defaults__``,
  ``__kwdefaults__``, ``__signature__`` or ``__wrapped__`` (the default itself, read for code
  elsewhere to use);
* the function has no decorator but one that calls it with its caller's arguments
  (``_passed_defaults.SAME_CALL_DECORATORS``) or that wraps nothing (``staticmethod``,
  ``classmethod``, ``abc.abstractmethod``, ``typing.overload``): another decorator may read
  the argument itself (a wrapper binding the signature and using ``device``); for a class's
  method, the class has no decorator and no keyword (a metaclass) either.

A parameter rebound before any read reads nothing of its caller's either (held-out sample AD,
pos 62: neural-compressor's HQQ ``optimize_weights_proximal_legacy(..., device="cuda")``, whose
body sets ``device = auto_detect_accelerator().current_device()`` before naming it): a
statement at the body's top (not inside an ``if``, loop, ``with`` or ``try``: every run
passes it) that is ``param = value``, ``param: T = value`` or a tuple or list target holding
``param`` itself (not starred), ``value`` and the other targets naming ``param`` nowhere and
no frame reader, and no statement before it naming ``param`` in any way (the points above).
An ``param += 1``, a rebinding under a test, or one after a read keeps the default reported.

A skeleton reads nothing either (held-out sample AB, reinforcement_balance's Perception
scripts: ``def annotate(..., device="cuda")`` whose body is a docstring and ``raise
NotImplementedError("annotate_with_sam2 is a skeleton")``): a body that is at most a
docstring and ``raise NotImplementedError`` or ``raise NotImplementedError(message)``, the
message built only of constants, names, attributes of names and f-strings of those (a
message naming the parameter formats it; nothing is placed), ``NotImplementedError`` not
rebound in the file. The points on introspection and decorators above still hold for it.

Not a reader: a caller, a subclass or a framework calling the function by name: whatever they
pass or leave, the function does not read it. Not seen from the file, so not kept (none in
the judged rows this stops reporting, each read): a helper of another module, called in the
body, that reads its caller's frame under a name of its own (the two known frameworks' are
above), and another module reading this function's default by introspection.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["never_read"]

# called by name in the body: they see the function's locals without naming them
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec", "dir"})
# spelled anywhere in the file: a frame's or a signature's reader (the points above)
_INTROSPECTION = (
    *("inspect", "_getframe", "f_locals", "f_back", "save_hyperparameters", "store_attr"),
    *("signature", "__defaults__", "__kwdefaults__", "__wrapped__"),
)
# decorators that wrap nothing, or only mark the function
_INERT = frozenset(
    {"staticmethod", "classmethod", "abc.abstractmethod", "typing.overload"}
    | {"typing_extensions.overload", "typing.override", "typing_extensions.override"}
)


def never_read(
    param: str,
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    holder: ast.AST,
    ctx: Context,
    same_call: frozenset[str],
) -> bool:
    """Whether no code reads ``param`` of ``func`` (held by ``holder``: a class, a function or
    the module), the invariant above; ``same_call``: the decorators that call the function
    with its caller's arguments."""
    if any(word in ctx.source for word in _INTROSPECTION):
        return False
    if not all(_inert(d, ctx, same_call) for d in func.decorator_list):
        return False
    if isinstance(holder, ast.ClassDef) and (holder.decorator_list or holder.keywords):
        return False
    if _skeleton(func, ctx):
        return True
    for stmt in func.body:
        if _rebinds(stmt, param):
            return True  # nothing before it named the parameter: the default is never read
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and (node.id == param or node.id in _FRAME_READERS):
                return False
            if isinstance(node, ast.Attribute) and node.attr in _FRAME_READERS:
                return False  # `builtins.eval(...)`
            if isinstance(node, ast.arg) and node.arg == param:
                return False  # a nested function's own `param`: read or not, doubt
            if isinstance(node, (ast.Global, ast.Nonlocal)) and param in node.names:
                return False
    return True


def _rebinds(stmt: ast.stmt, param: str) -> bool:
    """``stmt`` is ``param = value`` (or ``param: T = value``, ``a, param = value``) at the
    body's top, naming ``param`` nowhere else and calling no frame reader."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and stmt.simple:
        targets = [stmt.target]
    else:
        return False
    bound = [
        t
        for target in targets
        for t in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target])
        if isinstance(t, ast.Name) and t.id == param
    ]
    if not bound:
        return False
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and (
            node.id in _FRAME_READERS or (node.id == param and not any(node is b for b in bound))
        ):
            return False  # `param = f(param)`, `x[param] = param = v`, `param = locals()`
        if isinstance(node, ast.Attribute) and node.attr in _FRAME_READERS:
            return False
    return True


def _inert(decorator: ast.expr, ctx: Context, same_call: frozenset[str]) -> bool:
    """``decorator`` wraps nothing (:data:`_INERT`) or is one of ``same_call``, bare or called
    with constants (``@torch.no_grad()``, not ``@lru_cache(g)``)."""
    if isinstance(decorator, ast.Call):
        if not all(
            isinstance(a, ast.Constant)
            for a in (*decorator.args, *(k.value for k in decorator.keywords))
        ):
            return False
        decorator = decorator.func
    name = ctx.qualname(decorator)
    if name is None and isinstance(decorator, ast.Name):
        name = decorator.id  # a builtin (`staticmethod`), unless the file rebinds it
        if ctx.scopes.bindings(name, decorator):
            return False
    return name in _INERT or name in same_call


def _skeleton(func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context) -> bool:
    """``func``'s body is at most a docstring and ``raise NotImplementedError[(message)]``, the
    message of constants, names, attributes of names and f-strings of those."""
    body = func.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].cause is not None:
        return False
    exc = body[0].exc
    parts: list[ast.expr] = []
    if isinstance(exc, ast.Call):
        parts = [*exc.args, *(k.value for k in exc.keywords)]
        exc = exc.func
    if not (isinstance(exc, ast.Name) and exc.id == "NotImplementedError"):
        return False
    if ctx.scopes.bindings("NotImplementedError", exc):
        return False  # the file's own `NotImplementedError`
    return all(_plain_message(p) for p in parts)


def _plain_message(part: ast.expr) -> bool:
    """A constant, a name, ``a.b`` of a name, or an f-string of those (no call, no spec
    but constants)."""
    if isinstance(part, (ast.Constant, ast.Name)):
        return True
    if isinstance(part, ast.Attribute):
        return _plain_message(part.value)
    if isinstance(part, ast.FormattedValue):
        spec = part.format_spec
        return _plain_message(part.value) and (spec is None or _plain_message(spec))
    if isinstance(part, ast.JoinedStr):
        return all(_plain_message(v) for v in part.values)
    return False
