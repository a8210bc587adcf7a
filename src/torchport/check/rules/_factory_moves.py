"""A tensor a factory makes on the host and moves right away (TP106 and TP905 report it).

:func:`created_then_moved` says whether passing ``device=`` to the factory would save a
copy, and gives the fix that does.
"""

from __future__ import annotations

import ast
import re

from torchport.check._context import Context
from torchport.check._match import (
    RANDOM_FACTORIES,
    TENSOR_FACTORIES,
    is_cpu_target,
    keyword,
    method_name,
    string_value,
)
from torchport.check._rule import Edit, Fix, FixSafety

__all__ = ["created_then_moved"]

# Factories whose values come from the host (their data argument), not computed by the factory.
_DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
# Factories whose positional arguments are all sizes (and `full`, whose first one is).
_SHAPED = frozenset(
    f"torch.{n}" for n in ("zeros", "ones", "empty", "rand", "randn", "eye", "full")
)
_DEVICE_TEXT = re.compile(r"dev|cuda|gpu|rank|accelerator", re.IGNORECASE)


def created_then_moved(node: ast.Call, ctx: Context) -> Fix | None:
    """The fix of ``node`` when it moves a tensor a factory just made where passing
    ``device=`` would save a copy (wherever it runs: TP106 and TP905 split by that), else None.
    """
    method = method_name(node)
    if method not in ("to", "cuda"):
        return None
    assert isinstance(node.func, ast.Attribute)
    made = node.func.value
    if not isinstance(made, ast.Call):
        return None
    factory = ctx.qualname(made.func)
    if factory is None or not _device_would_save_a_copy(made, factory):
        return None
    target = _moved_to(node, method, ctx)
    return None if target is None else _create_there(node, made, factory, target, ctx)


def _device_would_save_a_copy(made: ast.Call, factory: str) -> bool:
    """A factory given no device, whose values ``device=`` would make there instead."""
    if factory not in TENSOR_FACTORIES or keyword(made, "device") is not None:
        return False
    if factory in _DATA_FACTORIES or _no_elements(made, factory):
        return False  # host values cross either way, or nothing crosses: no copy saved
    if not _takes_a_device(made, factory):
        return False  # drawn from tensors it is given: it takes no `device=`, follows theirs
    if any(kw.arg is None for kw in made.keywords):
        return False  # **kwargs may already hold a device
    # drawn from a CPU generator on purpose (same numbers on every device)
    return keyword(made, "generator") is None


def _takes_a_device(made: ast.Call, factory: str) -> bool:
    """Whether this call of ``factory`` has a ``device=`` to pass.

    ``torch.bernoulli(p)`` never does, nor ``torch.normal(mean, std)`` given tensors: they
    draw where their tensor arguments are. ``torch.normal(0.0, 1.0, size)`` (numbers and a
    size) does.
    """
    if factory == "torch.bernoulli":
        return False
    if factory == "torch.normal":
        return len(made.args) >= 3 or keyword(made, "size") is not None
    return True


def _moved_to(node: ast.Call, method: str, ctx: Context) -> str | None:
    """The source of the device the tensor is moved to, when that is all the call does."""
    if method == "cuda":
        if node.args or any(kw.arg != "non_blocking" for kw in node.keywords):
            return None
        # Keep the CUDA choice: replacing it is TP101's job (and a `noqa: TP101` keeps it).
        return '"cuda"'
    moved = _device_target(node, ctx)
    return None if moved is None else ctx.segment(moved)


def _create_there(node: ast.Call, made: ast.Call, factory: str, target: str, ctx: Context) -> Fix:
    """``device=target`` given to the factory, and the move dropped."""
    args: list[ast.AST] = [*made.args, *(kw.value for kw in made.keywords)]
    if args:
        at = max(ctx.argument_end(made, a) for a in args)
        add = Edit(at, at, f", device={target}")
    else:
        at = ctx.end(made) - 1
        add = Edit(at, at, f"device={target}")
    assert isinstance(node.func, ast.Attribute)
    drop = Edit(ctx.receiver_end(node.func), ctx.end(node), "")
    if factory in RANDOM_FACTORIES:
        return Fix((add, drop), FixSafety.UNSAFE, _OTHER_GENERATOR)
    return Fix((add, drop), FixSafety.SAFE)


_OTHER_GENERATOR = (
    "the numbers are drawn by the device's generator instead of the CPU's: "
    "seeded runs get different values (and a different CPU random stream after this line)"
)


def _no_elements(made: ast.Call, factory: str) -> bool:
    """``torch.empty((n, 0))``, ``torch.zeros(0)``: a literal 0 among the sizes, nothing to copy.

    Only the arguments that are sizes count: every positional one of the shape
    factories, the first of ``full`` (the rest is its fill value).
    """
    args = made.args[:1] if factory == "torch.full" else made.args
    if factory not in _SHAPED:
        return False
    sizes = [*args, *(kw.value for kw in made.keywords if kw.arg == "size")]
    flat = [e for s in sizes for e in (s.elts if isinstance(s, (ast.Tuple, ast.List)) else [s])]
    return any(isinstance(e, ast.Constant) and type(e.value) is int and e.value == 0 for e in flat)


def _device_target(call: ast.Call, ctx: Context) -> ast.expr | None:
    """The device of ``.to(device)`` when that is all the call does, else None."""
    if len(call.args) == 1 and all(kw.arg == "non_blocking" for kw in call.keywords):
        target = call.args[0]
    elif not call.args and len(call.keywords) == 1 and call.keywords[0].arg == "device":
        target = call.keywords[0].value
    else:
        return None
    if is_cpu_target(target, ctx):
        return None
    if string_value(target) is not None:
        return target
    if isinstance(target, ast.Call):
        return target if ctx.qualname(target.func) == "torch.device" else None
    if isinstance(target, (ast.Name, ast.Attribute)) and ctx.qualname(target) is None:
        # A dtype variable would be wrong here: trust only names that say "device".
        return target if _DEVICE_TEXT.search(ctx.segment(target)) else None
    return None
