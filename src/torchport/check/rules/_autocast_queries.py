"""The autocast queries that name no device type, and so ask about CUDA (what TP122 reads).

``torch.is_autocast_enabled()`` with no argument, ``torch.get_autocast_gpu_dtype()``,
``torch.set_autocast_gpu_dtype(dtype)`` and ``torch.set_autocast_enabled(flag)`` with one
argument are CUDA's: on MPS, XPU or the CPU they read "autocast is off" (or set CUDA's
state) while ``torch.autocast(device.type)`` is on. Their CPU twins
(``is_autocast_cpu_enabled``, ``get_autocast_cpu_dtype``, ``set_autocast_cpu_*``) are the
CPU's by name; one is reported only as the other arm of a CUDA query (``if
torch.is_autocast_enabled(): ... elif torch.is_autocast_cpu_enabled(): ...``), where the
pair stands for "the program's device" and leaves out MPS and XPU.

The device-type spellings (``is_autocast_enabled(device_type)``,
``get_autocast_dtype(device_type)``, ``set_autocast_dtype(device_type, dtype)``,
``set_autocast_enabled(device_type, flag)``) exist from torch 2.4; the floor (2.6) has them.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import in_old_torch_fallback
from torchport.check._rule import Finding, Fix, FixSafety, Rule
from torchport.check.rules._amp_imports import old_torch_arm
from torchport.check.semantic._guards import Guard, device_guard
from torchport.check.semantic._placement import device_type_at

# CUDA's query -> (its device-type twin, how many positional arguments the CUDA form takes).
_CUDA: dict[str, tuple[str, int]] = {
    "torch.is_autocast_enabled": ("is_autocast_enabled", 0),
    "torch.get_autocast_gpu_dtype": ("get_autocast_dtype", 0),
    "torch.set_autocast_gpu_dtype": ("set_autocast_dtype", 1),
    "torch.set_autocast_enabled": ("set_autocast_enabled", 1),
}
_CPU: dict[str, str] = {
    "torch.is_autocast_cpu_enabled": "is_autocast_enabled",
    "torch.get_autocast_cpu_dtype": "get_autocast_dtype",
    "torch.set_autocast_cpu_dtype": "set_autocast_dtype",
    "torch.set_autocast_cpu_enabled": "set_autocast_enabled",
}
TAILS = frozenset(name.rsplit(".", 1)[1] for name in (*_CUDA, *_CPU))
_MODERN = frozenset(f"torch.{twin}" for twin, _ in _CUDA.values())

_CUDA_MESSAGE = (
    "pass the type of your one `device`: `{t}.{twin}(device.type{more})`; "
    "with no device type this is CUDA's autocast, off on MPS, XPU and the CPU"
)
_CPU_MESSAGE = (
    "pass the type of your one `device`: `{t}.{twin}(device.type{more})` instead of a CUDA "
    "query and a CPU one, which leave out MPS and XPU"
)
CHANGES = (
    "the query now follows the device the program picked: on MPS, XPU or the CPU it reads "
    "(or sets) that device's autocast, where it read CUDA's (off there)"
)


def autocast_query(rule: Rule, node: ast.Call, ctx: Context) -> Finding | None:
    """The finding for a device-less autocast query at ``node``, fixed where that is safe."""
    name = ctx.qualname(node.func)
    if name not in _CUDA and name not in _CPU:
        return None
    if name in _CUDA and (len(node.args) != _CUDA[name][1] or node.keywords):
        return None  # `is_autocast_enabled("cuda")`: the device-type form (TP113's)
    if _fallback(ctx) or device_guard(node, ctx) is Guard.DEVICE_TYPE:
        return None  # the spelling for old torches, or a branch for one device type
    t = ctx.torch_name()
    more = ", ..." if node.args else ""
    if name in _CPU:
        if not _beside_a_cuda_query(ctx):
            return None  # the CPU's own state, asked by name
        return ctx.finding(rule, node, message=_CPU_MESSAGE.format(t=t, twin=_CPU[name], more=more))
    twin = _CUDA[name][0]
    message = _CUDA_MESSAGE.format(t=t, twin=twin, more=more)
    return ctx.finding(rule, node, message=message, fix=_fix(node, twin, ctx))


def _fix(node: ast.Call, twin: str, ctx: Context) -> Fix | None:
    """The device-type twin called with the type of the file's one device.

    None where a CPU twin is asked in the same scope: the two answers are then kept
    apart on purpose (a record of each device's state, restored for each), and making
    CUDA's follow the program's device would restore it twice.
    """
    found, torch = device_type_at(ctx, node), ctx.torch_at(node)
    if found is None or torch is None or _asks_the_cpu_too(node, ctx):
        return None
    device_type, edits = found
    # One edit for the whole call: the target-torch gate (`_torch_api.ARGUMENT_SINCE`) reads
    # the device-type argument in the call it is given to.
    rest = ctx.source[ctx.argument_start(node, 0) : ctx.end(node)]  # "...)" or ")"
    call = f"{torch[0]}.{twin}({device_type}{', ' if node.args else ''}{rest}"
    return Fix((ctx.replace(node, call), *(edits or torch[1])), FixSafety.UNSAFE, CHANGES)


def _fallback(ctx: Context) -> bool:
    """In the arm for torches without the device-type spelling.

    ``except TypeError:`` after a ``try`` that calls it, the ``else`` of a version test,
    or the arm of a ``hasattr(torch, "get_autocast_dtype")`` test that lacks it.
    """
    if old_torch_arm(ctx) or in_old_torch_fallback(ctx, lambda c: ctx.qualname(c.func) in _MODERN):
        return True
    for outer in ctx.ancestors:
        if isinstance(outer, (ast.If, ast.IfExp)):
            test = ctx.segment(outer.test)
            if "hasattr" in test and "autocast" in test:
                return True
    return False


def _beside_a_cuda_query(ctx: Context) -> bool:
    """Whether the ``if``/``elif`` chain, conditional or ``and``/``or`` around the node asks
    CUDA's autocast too (with no device type): the pair then means "the program's device"."""
    top: ast.AST | None = None
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            break
        if isinstance(outer, (ast.If, ast.IfExp, ast.BoolOp)):
            top = outer  # the outermost: an `elif` is an `If` inside its parent's `orelse`
        elif top is not None and isinstance(outer, ast.stmt):
            break
    return top is not None and any(
        isinstance(n, ast.Call) and _cuda_query(n, ctx) for n in ast.walk(top)
    )


def _cuda_query(call: ast.Call, ctx: Context) -> bool:
    name = ctx.qualname(call.func)
    return name in _CUDA and len(call.args) == _CUDA[name][1] and not call.keywords


def _asks_the_cpu_too(node: ast.Call, ctx: Context) -> bool:
    """Whether the function (or module) around ``node`` calls a CPU twin."""
    scope: ast.AST = ctx.tree
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            scope = outer
            break
    key = f"autocast_queries.cpu_twins:{id(scope)}"  # Context.memo's: one walk per scope
    kept = ctx.memo.get(key)
    if not (isinstance(kept, tuple) and kept[0] is scope):
        calls = {
            id(n)
            for n in ast.walk(scope)
            if isinstance(n, ast.Call) and ctx.qualname(n.func) in _CPU
        }
        kept = ctx.memo[key] = (scope, calls)
    return len(kept[1]) > (id(node) in kept[1])
