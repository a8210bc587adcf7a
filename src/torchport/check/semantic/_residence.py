"""Where a value lives: on the CPU, on a device, or unknown.

Rules ask this only once they are about to report. Known on the CPU: ``.cpu()``
results, ``torch.tensor(...)`` or ``torch.linspace(...)`` with no ``device=``,
``torch.from_numpy``, NumPy values, and functions of those. Known on a device:
``.cuda()``, ``.to(device)``, ``device=`` factories, the ``torch.cuda`` tensor
types, and what a model moved to a device returns. A call keeps its first
argument's place, and a field of its output lives there too (``out.logits``; not a
fact such as ``out.shape``). A ``torch.device`` object is
recognised apart (``x.device``, ``torch.device(...)``), since comparing one with
a string is always False. Unknown is the common answer, and rules stay silent
then.

Names are followed through the scope analysis (:func:`bound_value`, built on
``ctx.scopes``) a few hops at most, never in a loop; a name no single binding reaches
(bound in both arms of an ``if``, or unpacked) lives where every binding of it agrees
it does (:func:`_every_binding`).
"""

from __future__ import annotations

import ast

from torchport.check._patterns import lazy_pattern
from torchport.check.semantic._binding import BindingKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context

__all__ = [
    "CPU_FACTORIES",
    "bound_value",
    "known_device_object",
    "known_on_cpu",
    "known_on_device",
]

_HOPS = 4
# Factories that make a tensor on the CPU unless given `device=`.
CPU_FACTORIES = frozenset(
    f"torch.{n}"
    for n in (
        "tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "linspace",
        "logspace", "eye", "rand", "randn", "randint", "randperm", "from_numpy",
        "Tensor", "FloatTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor",
        "DoubleTensor", "HalfTensor",
    )
)  # fmt: skip
# Methods whose result lives where their receiver does.
_SAME_PLACE = frozenset(
    {"detach", "clone", "float", "double", "half", "long", "int", "bool", "squeeze",
     "unsqueeze", "view", "reshape", "flatten", "contiguous", "sum", "mean", "permute",
     "transpose", "t", "argmax", "argmin", "max", "min", "abs", "sqrt", "exp", "log",
     "softmax", "sigmoid", "round", "numpy", "narrow", "eq", "ne", "gt", "lt", "ge", "le",
     "any", "all", "norm", "prod", "cumsum", "sort", "argsort", "type_as", "expand",
     "repeat", "split", "chunk", "unbind", "masked_select", "nonzero", "item"}
)  # fmt: skip


def _target_of_to(call: ast.Call) -> ast.expr | None:
    """The device argument of ``x.to(...)`` (positional or ``device=``), if any."""
    if call.args:
        return call.args[0]
    for kw in call.keywords:
        if kw.arg == "device":
            return kw.value
    return None


def _names_cpu(expr: ast.expr | None, ctx: Context) -> bool:
    if isinstance(expr, ast.Constant):
        return expr.value == "cpu"
    return (
        isinstance(expr, ast.Call)
        and ctx.qualname(expr.func) == "torch.device"
        and bool(expr.args)
        and isinstance(expr.args[0], ast.Constant)
        and expr.args[0].value == "cpu"
    )


_DTYPES = frozenset(
    {"float16", "float32", "float64", "bfloat16", "half", "float", "double", "int8", "uint8",
     "int16", "int32", "int64", "long", "bool", "complex64", "complex128", "dtype"}
)  # fmt: skip


def _dtype_like(expr: ast.expr | None, ctx: Context) -> bool:
    """``torch.float16``, ``x.dtype``: a cast, not a device move."""
    if isinstance(expr, ast.Attribute):
        return expr.attr in _DTYPES or (ctx.qualname(expr) or "").startswith("torch.")
    return False


def _placement(expr: ast.expr, ctx: Context, depth: int = 0, unions: int = 0) -> str | None:
    """``"cpu"``, ``"device"`` or None (unknown), following a few bindings and method calls.

    A call of a model moved to a device, or of a model or torch function whose
    first argument is known to be on a device, is taken to return a tensor on
    that device (``net(x)`` after ``net = Net().cuda()``; ``model(x.to(device))``).
    """
    for _ in range(12):
        if isinstance(expr, ast.Name):
            bound = bound_value(expr, ctx)
            if bound is None:
                return _every_binding(expr, ctx, depth, unions)
            expr = bound
            continue
        if isinstance(expr, ast.Subscript):
            expr = expr.value  # `x[i]` lives where `x` does
            continue
        if isinstance(expr, ast.BinOp):
            expr = expr.left
            continue
        if isinstance(expr, (ast.List, ast.Tuple, ast.ListComp)):
            return None
        if isinstance(expr, ast.Attribute):
            if expr.attr in ("data", "grad", "T", "mT", "real"):
                expr = expr.value
                continue
            return _output_field(expr, ctx, depth, unions)
        if not isinstance(expr, ast.Call):
            return None
        name = ctx.qualname(expr.func)
        if name is not None:
            if name.startswith(("numpy.", "np.")):
                return "cpu"
            if name.startswith("torch.cuda.") and name.endswith("Tensor"):
                return "device"  # `torch.cuda.FloatTensor(...)`
            if name in CPU_FACTORIES:
                device = next((k.value for k in expr.keywords if k.arg == "device"), None)
                if device is None or _names_cpu(device, ctx):
                    return "cpu"
                return "device"
            return _follows_argument(expr, ctx, depth, unions)
        func = expr.func
        if not isinstance(func, ast.Attribute):
            return _follows_argument(expr, ctx, depth, unions)
        method = func.attr
        if method == "cpu":
            return "cpu"
        if method == "cuda":
            return "device"
        if method == "to":
            target = _target_of_to(expr)
            if _names_cpu(target, ctx):
                return "cpu"
            if target is None or _dtype_like(target, ctx):
                expr = func.value
                continue
            return "device"
        if method not in _SAME_PLACE:
            return _follows_argument(expr, ctx, depth, unions)
        expr = func.value
    return None


def _follows_argument(call: ast.Call, ctx: Context, depth: int, unions: int = 0) -> str | None:
    """Where ``call``'s first argument lives (a function keeps its input's device), if known.

    Three calls deep at most: ``torch.chunk(model(torch.cat([x, y])).logits, 2)`` (MMaDA).
    """
    if depth >= 3:
        return None
    if (
        isinstance(call.func, ast.Name)
        and _placement(call.func, ctx, depth + 1, unions) == "device"
    ):
        return "device"  # `net(x)` after `net = Net().cuda()`: a model moved to the device
    if not call.args or isinstance(call.args[0], ast.Starred):
        return None
    first = call.args[0]
    if isinstance(first, (ast.List, ast.Tuple)) and first.elts:
        first = first.elts[0]  # `torch.cat([a, b])`
    # `xyxy2xywh(torch.tensor(b))` stays on the CPU
    return _placement(first, ctx, depth + 1, unions)


# A tensor's or an output's attributes that are facts about it, not tensors.
_FACTS = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad", "is_leaf",
     "names", "nbytes", "itemsize", "grad_fn", "is_sparse", "is_quantized", "is_meta"}
)  # fmt: skip
# Methods that return the module they are called on (`model.to(dev).config` is a module's).
_SELF = frozenset(
    {"to", "cuda", "cpu", "eval", "train", "float", "half", "double", "bfloat16", "type",
     "requires_grad_", "share_memory", "apply", "xpu", "mps"}
)  # fmt: skip


def _output_field(attr: ast.Attribute, ctx: Context, depth: int, unions: int) -> str | None:
    """``out.logits`` with ``out = model(x)``: a field of a call's output lives where the
    output does (a call keeps its input's device, :func:`_follows_argument`; a tensor
    method's result, ``x.max(0).values``, its receiver's).

    Only a field of what a call returns (through a few names), never of a module that
    ``.to(...)`` or ``.eval()`` hands back (``model.config``), never a fact (``out.shape``).
    """
    if attr.attr in _FACTS:
        return None
    value = attr.value
    for _ in range(_HOPS):
        if not isinstance(value, ast.Name):
            break
        bound = bound_value(value, ctx)
        if bound is None:
            return None
        value = bound
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Attribute) and ctx.qualname(func) is None:
        if func.attr in _SELF:
            return None
        if func.attr in _SAME_PLACE:
            return _placement(value, ctx, depth, unions)  # `x.max(0).values`: x's place
    return _follows_argument(value, ctx, depth, unions)


def _every_binding(name: ast.Name, ctx: Context, depth: int, unions: int) -> str | None:
    """Where ``name`` lives when no single binding reaches it (``if c: l = a`` ``else: l =
    b``) or it was unpacked (``a, b = torch.chunk(x, 2)``): where every binding of it in
    its scope puts it when they all agree, whichever of them ran; None when any is unknown
    or they differ.

    An unpacked element lives where the unpacked value does, as ``x[i]`` lives where ``x``
    does. A binding with no value (a parameter, a loop target) is unknown.
    """
    if unions >= 2:
        return None  # (not `may_hold_a_value`: it does not count unpacked names)
    found = ctx.scopes.bindings(name.id, name)
    if not found or len(found) > 4:
        return None
    places = set()
    for binding in found:
        value = binding.value
        if value is None:
            holder = ctx.scopes.parent(binding.node)
            assign = ctx.scopes.parent(holder) if isinstance(holder, ast.Tuple) else None
            value = assign.value if isinstance(assign, ast.Assign) else None
        if value is None or any(
            isinstance(n, ast.Name) and n.id == name.id for n in ast.walk(value)
        ):
            return None  # unknown, or read from itself (`x = x.to(...)`)
        places.add(_placement(value, ctx, depth, unions + 1))
    return places.pop() if len(places) == 1 else None


def bound_value(name: ast.Name, ctx: Context) -> ast.expr | None:
    """The expression ``name`` holds at that node, when one is known.

    The binding the read sees (:meth:`ScopeMap.binding_at`): ``x = value``
    gives ``value``; a ``for`` or comprehension target gives the iterable
    (iterating over a tensor yields rows that live where the tensor does).
    None when the name may hold different values there.
    """
    if not ctx.may_hold_a_value(name.id):
        return None  # no binding anywhere gives it one: the scope pass's answer too
    scopes = ctx.scopes
    binding = scopes.binding_at(name)
    if binding is None:
        return None
    if binding.value is not None:
        return binding.value
    if binding.kind is BindingKind.LOOP:
        holder = scopes.parent(binding.node)
        if isinstance(holder, (ast.For, ast.AsyncFor, ast.comprehension)):
            return holder.iter if holder.target is binding.node else None
    return None


# Receivers whose `.device` is often a string in real code (configs, argparse results).
_SETTINGS = lazy_pattern(
    r"^(self|.*args|opts?|.*cfg|.*config|conf|.*hparams|.*params|.*options|.*settings)$"
)


def known_device_object(expr: ast.expr, ctx: Context) -> bool:
    """Whether ``expr`` is certainly a ``torch.device`` (never a string).

    ``torch.device(...)``, a tensor's or a parameter's ``.device`` (``x.device``,
    ``next(model.parameters()).device``; not ``self.device`` or ``args.device``,
    which are often strings), ``torch.accelerator.current_accelerator()``, or a
    name bound to one of these.
    """
    for _ in range(_HOPS):
        if isinstance(expr, ast.Name):
            bound = bound_value(expr, ctx)
            if bound is None:
                return False
            expr = bound
            continue
        if isinstance(expr, ast.Attribute) and expr.attr == "device":
            from torchport.check.semantic._string_fields import string_device_receiver

            if string_device_receiver(expr.value, ctx):  # (imported on first use: start-up)
                return False  # its class (or argparse) says the field is a string
            base = expr.value
            while isinstance(base, ast.Attribute):
                base = base.value
            return not (isinstance(base, ast.Name) and _SETTINGS.match(base.id))
        if isinstance(expr, ast.Call):
            return ctx.qualname(expr.func) in (
                "torch.device",
                "torch.accelerator.current_accelerator",
            )
        return False
    return False


def known_on_cpu(expr: ast.expr, ctx: Context) -> bool:
    """Whether ``expr`` certainly evaluates to a CPU tensor (or a NumPy value)."""
    return _placement(expr, ctx) == "cpu"


def known_on_device(expr: ast.expr, ctx: Context) -> bool:
    """Whether ``expr`` was last moved to, or made on, a device other than the CPU."""
    return _placement(expr, ctx) == "device"
