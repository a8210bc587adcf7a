"""Where a loader's own options put a model (``from_pretrained(..., device_map=...)``).

TP501 leaves such a model where its loader placed it: ``.to()`` raises for an 8-bit
model and undoes a split over devices.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._nodes import sole_target

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.rules._port import PortFacts

__all__ = ["PLACED_BY_LOADER", "never_given_inputs", "placed_by_loader"]

# `.to()` raises for an 8-bit model and undoes a split over devices.
PLACED_BY_LOADER = (
    "this model is placed by its loader (`{placed}`): do not move it; move its "
    "inputs to `model.device` (or leave `{placed}` out and move it to `device`)"
)


# Keywords of a loader (`from_pretrained`) that place or quantize the model themselves.
_PLACEMENT = frozenset(
    {"device_map", "load_in_8bit", "load_in_4bit", "quantization_config", "max_memory",
     "offload_folder", "tp_plan"}
)  # fmt: skip


def placed_by_loader(call: ast.AST) -> str | None:
    """The option with which a loader places the model itself (``**kwargs`` may carry one)."""
    if not isinstance(call, ast.Call):
        return None
    for k in call.keywords:
        if k.arg is None:
            keys = _literal_keys(k.value)
            if keys is None:
                return "**" + ast.unparse(k.value)  # unknown contents: may carry one
            found = next((key for key in keys if key in _PLACEMENT), None)
            if found is not None:
                return f"{found}="
            continue  # `**{"torch_dtype": ...}`: every key is known, none places
        if k.arg in _PLACEMENT:
            value = k.value
            if isinstance(value, ast.Constant) and value.value in (None, False):
                continue  # `device_map=None`, `load_in_8bit=False`: nothing placed
            return f"{k.arg}="
    return None


def _literal_keys(value: ast.expr) -> list[str] | None:
    """The keys of a ``**{...}`` dict literal with string keys, else None (unknown)."""
    if not isinstance(value, ast.Dict):
        return None
    keys = [k.value for k in value.keys if isinstance(k, ast.Constant)]
    if len(keys) != len(value.keys) or not all(isinstance(k, str) for k in keys):
        return None
    return [str(k) for k in keys]


def never_given_inputs(expr: ast.AST, ctx: Context, facts: PortFacts) -> bool:
    """Whether a model bound to a name is only read for attributes (``model.config``): never
    called, never handed on, so there are no inputs to move to where its loader put it."""
    from torchport.check.port._device_flow import NOT_FORWARD  # on first use

    target = sole_target(ctx.scopes.parent(expr))
    if target is None:
        return False
    name = target.id
    reads = facts.structure.loads_of(name) if facts.structure.walked else ctx.scopes.loads_of(name)
    for read in reads:
        if ctx.scopes.resolve(name, read) is not ctx.scopes.resolve(name, target):
            continue  # another variable of that name
        up = ctx.scopes.parent(read)
        if not isinstance(up, ast.Attribute) or up.value is not read:
            return False  # called, passed on, stored: it may run
        call = ctx.scopes.parent(up)
        if isinstance(call, ast.Call) and call.func is up and up.attr not in NOT_FORWARD:
            return False  # `model.generate(x)`
    return True
