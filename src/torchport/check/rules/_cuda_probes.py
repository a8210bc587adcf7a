"""A runtime probe whose subject is CUDA: a throwaway tensor made on ``"cuda"`` to see that
CUDA works, after the probe's own ``torch.cuda.is_available()``.

Held-out sample AD, pos 67 and 93, judged low (b): robot_sf's ``classify_cuda_runtime()``
(``torch.zeros((1,), device="cuda")`` and ``torch.cuda.synchronize()`` after ``if not
available: return ...``, classifying whether CUDA's driver works) and the fake-video
refactor's ``probe_cuda()`` (``torch.ones((2, 2), device="cuda")`` and a matmul under ``if
report["cuda_available"]:``). Their question is CUDA's own health: on another accelerator
the honest answer is "CUDA unavailable", which they give already, and moving the tensor to
``torch.accelerator`` would make them report another device's health as CUDA's. TP101
leaves such a ``device="cuda"`` when all of this holds (any doubt: reported):

* the function holding it (the innermost) is named for a probe of CUDA: among the words of
  its name (split at ``_`` and at a lower-to-upper case change) are ``cuda`` and one of
  :data:`PROBE_WORDS`;
* it takes nothing from its caller but constants: every parameter (``self`` of a method
  aside) has a constant default, so no model, batch or size reaches it;
* the ``"cuda"`` is the ``device=`` of a torch tensor factory (:data:`_FACTORIES`) whose
  other arguments are constants or tuples and lists of constants: a tensor of the probe's
  own, no data;
* the function calls ``torch.cuda.is_available()`` on a line before it (its own test; what
  follows it depends on that answer).

Kept: a probe moving a model or data (``model.to("cuda")``), a tensor sized by a variable, a
function of another name (``run_cuda``, ``probe_cudagraph``), a probe with a parameter
without a default, and a probe that never asks ``is_available()`` first.
"""

from __future__ import annotations

import ast
import re

from torchport.check._context import Context
from torchport.check._match import dotted_parts
from torchport.check.semantic._residence import bound_value

__all__ = ["PROBE_WORDS", "probes_cuda"]

PROBE_WORDS = frozenset(
    {"probe", "classify", "check", "verify", "smoke", "diagnose", "usable", "health", "sanity"}
)
_FACTORIES = frozenset(
    f"torch.{n}" for n in ("zeros", "ones", "empty", "full", "rand", "randn", "tensor", "eye")
)
_DTYPES = frozenset(
    f"torch.{n}" for n in ("float32", "float16", "bfloat16", "float64", "int64", "int32")
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def probes_cuda(node: ast.AST, ctx: Context) -> bool:
    """Whether the CUDA at ``node`` (a ``"cuda"`` argument, or the call given it) is a probe's
    own tensor (the module docstring)."""
    chain = list(ctx.ancestors)
    call = node if isinstance(node, ast.Call) else None
    if call is None:
        while chain and isinstance(chain[-1], ast.keyword):
            chain.pop()
        call = chain[-1] if chain and isinstance(chain[-1], ast.Call) else None
    func = next((a for a in reversed(chain) if isinstance(a, _FUNCTIONS)), None)
    if call is None or func is None or not _probe_name(func.name):
        return False
    if not _constant_parameters(func) or not _own_tensor(call, ctx):
        return False
    return any(
        isinstance(sub, ast.Call)
        and _torch_name(sub.func, ctx) == "torch.cuda.is_available"
        and sub.lineno < call.lineno
        for sub in ast.walk(func)
    )


def _probe_name(name: str) -> bool:
    words = {w.lower() for part in name.split("_") for w in _WORD.findall(part)}
    return "cuda" in words and bool(words & PROBE_WORDS)


def _constant_parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every parameter (``self``/``cls`` first aside) has a constant default; no ``*args``."""
    args = func.args
    if args.vararg is not None or args.kwarg is not None:
        return False
    positional = [*args.posonlyargs, *args.args]
    if positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    defaults = args.defaults[len(args.defaults) - len(positional) :] if positional else []
    if len(defaults) != len(positional):
        return False
    given = [*defaults, *args.kw_defaults]
    if len(args.kw_defaults) != len(args.kwonlyargs) or any(d is None for d in given):
        return False
    return all(isinstance(d, ast.Constant) for d in given)


def _own_tensor(call: ast.Call, ctx: Context) -> bool:
    """A torch factory given ``device="cuda"`` and otherwise only constants."""
    if _torch_name(call.func, ctx) not in _FACTORIES:
        return False
    device = [k for k in call.keywords if k.arg == "device"]
    if len(device) != 1 or not isinstance(device[0].value, ast.Constant):
        return False
    if device[0].value.value != "cuda":
        return False
    others = [*call.args, *(k.value for k in call.keywords if k.arg != "device")]
    return all(k.arg is not None for k in call.keywords) and all(_constant(a, ctx) for a in others)


def _torch_name(expr: ast.expr, ctx: Context) -> str | None:
    """The qualified name, or, for a chain on a name bound to ``importlib.import_module(
    "<module>")`` (robot_sf's way of keeping torch optional), that module's dotted name."""
    name = ctx.qualname(expr)
    if name is not None:
        return name
    parts = dotted_parts(expr)
    if parts is None:
        return None
    root = expr
    while isinstance(root, ast.Attribute):
        root = root.value
    assert isinstance(root, ast.Name)
    bound = bound_value(root, ctx)
    if not (isinstance(bound, ast.Call) and len(bound.args) == 1 and not bound.keywords):
        return None
    module = bound.args[0]
    if ctx.qualname(bound.func) != "importlib.import_module" or not isinstance(
        module, ast.Constant
    ):
        return None
    return ".".join([str(module.value), *parts[1:]])


def _constant(value: ast.expr, ctx: Context) -> bool:
    """A constant, a negated one, a tuple or list of such, or a torch dtype."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        return _constant(value.operand, ctx)
    if isinstance(value, (ast.Tuple, ast.List)):
        return all(_constant(e, ctx) for e in value.elts)
    return isinstance(value, ast.Attribute) and _torch_name(value, ctx) in _DTYPES
