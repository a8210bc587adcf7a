"""TP108's conversions: float64 made from a tensor that is already on a device.

``F.softmax(logits.to(torch.float64), dim=-1)`` with ``logits`` a model's output on the
device, ``x.double()``, ``torch.rand_like(x, dtype=torch.float64)``: no ``device=`` is
named, but the float64 tensor is made where ``x`` lives. The invariant: **a float64
conversion (or ``*_like`` factory) of a tensor known to be on a device makes float64 on
that device**. Known to be on a device is ``semantic/_residence.known_on_device``'s
answer (a ``.cuda()``/``.to(device)`` result, a ``device=`` factory, what a moved model
returns, through names, views and casts), or, for a parameter of a module-level
function, the answer at every call of that function in the module (a helper such as
``def add_gumbel_noise(logits, t): logits = logits.to(torch.float64)`` whose callers all
pass device tensors). A helper with no call in its module, called there with something
not known to be on a device, or named there other than in a call (handed on as a
callback) is left alone; calls from other modules are not read. So is a module that runs
torch's gradient checks (``torch.autograd.gradcheck``): its float64 is the check's need,
as in a CUDA kernel's test script (Deformable-DETR's ``models/ops/test.py``: judged low,
6 of the 11 findings this added on the precision samples' repositories).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import keyword, method_name
from torchport.check.semantic._binding import BindingKind
from torchport.check.semantic._residence import bound_value, known_on_device

__all__ = ["float64_of_device_tensor"]

_FLOAT64 = ("torch.float64", "torch.double")
_LIKE = frozenset(
    f"torch.{n}_like" for n in ("rand", "randn", "randint", "zeros", "ones", "full", "empty")
)
# Methods whose result lives where their receiver does (a cast, a view, a copy).
_SAME_PLACE = frozenset(
    {"to", "double", "float", "half", "detach", "clone", "contiguous", "view", "reshape"}
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def float64_of_device_tensor(call: ast.Call, ctx: Context) -> bool:
    """Whether ``call`` converts a tensor known to be on a device to float64 (module doc)."""
    source = _converted(call, ctx)
    return source is not None and not _checks_gradients(ctx) and _on_device(source, ctx)


def _checks_gradients(ctx: Context) -> bool:
    """Whether the module names ``torch.autograd.gradcheck`` or ``gradgradcheck``."""
    if not ctx.mentions("gradcheck"):
        return False
    found = ctx.memo.get("float64.gradcheck")
    if found is None:
        found = ctx.memo["float64.gradcheck"] = any(
            isinstance(n, (ast.Name, ast.Attribute))
            and (ctx.qualname(n) or "").startswith("torch.autograd.")
            and (ctx.qualname(n) or "").endswith("gradcheck")
            for n in ast.walk(ctx.tree)
        )
    return bool(found)


def _float64(expr: ast.expr | None, ctx: Context) -> bool:
    return (
        isinstance(expr, ast.Attribute)
        and expr.attr in ("float64", "double")
        and ctx.qualname(expr) in _FLOAT64
    )


def _converted(call: ast.Call, ctx: Context) -> ast.expr | None:
    """The tensor ``call`` makes float64 of, on its own device; None if it is no such call."""
    if keyword(call, "device") is not None:
        return None  # a device named: TP108's own case
    func = call.func
    method = method_name(call)
    if isinstance(func, ast.Attribute) and method == "double" and not call.args:
        return func.value
    if isinstance(func, ast.Attribute) and method == "to":
        dtype = keyword(call, "dtype")
        if call.args == [] and dtype is not None and _float64(dtype.value, ctx):
            return func.value
        if len(call.args) == 1 and dtype is None and _float64(call.args[0], ctx):
            return func.value
        return None
    dtype = keyword(call, "dtype")
    if (
        dtype is not None
        and call.args
        and _float64(dtype.value, ctx)
        and ctx.qualname(func) in _LIKE
    ):
        return call.args[0]
    return None


def _on_device(expr: ast.expr, ctx: Context) -> bool:
    """Known on a device, directly or through a parameter every same-module call fills so."""
    if known_on_device(expr, ctx):
        return True
    for _ in range(6):  # a few hops, never a loop (`x = x.to(...)`)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if expr.func.attr not in _SAME_PLACE:
                return False
            expr = expr.func.value
            continue
        if not isinstance(expr, ast.Name):
            return False
        binding = ctx.scopes.binding_at(expr)
        if binding is not None and binding.kind is BindingKind.PARAMETER:
            return _callers_pass_device_tensors(binding.scope.node, binding.name, ctx)
        bound = bound_value(expr, ctx)
        if bound is None:
            return False
        expr = bound
    return False


def _callers_pass_device_tensors(func: ast.AST, name: str, ctx: Context) -> bool:
    """Whether ``func`` is a module-level function called in its module only, and every
    call hands ``name`` a tensor known to be on a device."""
    if not isinstance(func, _FUNCTIONS) or func not in ctx.tree.body:
        return False
    params = [p.arg for p in (*func.args.posonlyargs, *func.args.args)]
    calls = _uses(ctx).get(func.name)
    if not calls:
        return False  # never called here, or named other than in a call
    for call in calls:
        given = next((k.value for k in call.keywords if k.arg == name), None)
        if given is None and name in params and params.index(name) < len(call.args):
            given = call.args[params.index(name)]
        if given is None or isinstance(given, ast.Starred) or not known_on_device(given, ctx):
            return False
    return True


def _uses(ctx: Context) -> dict[str, list[ast.Call] | None]:
    """Each module-level function's calls by name in the file; None when the name is also
    read otherwise (a callback, ``__all__`` aside), or bound again. Once per file."""
    found = ctx.memo.get("float64.uses")
    if found is not None:
        return found  # type: ignore[return-value]
    defined = {s.name for s in ctx.tree.body if isinstance(s, _FUNCTIONS)}
    uses: dict[str, list[ast.Call] | None] = {n: [] for n in defined}
    called: set[int] = set()
    for node in ast.walk(ctx.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        listed = uses.get(node.func.id)
        if listed is not None:
            listed.append(node)
            called.add(id(node.func))
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Name) and node.id in defined and id(node) not in called:
            uses[node.id] = None  # handed on, or bound again: callers unknown
    ctx.memo["float64.uses"] = uses
    return uses
