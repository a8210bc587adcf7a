"""What the checkpoint-loading rules (TP302, TP304-TP309) share: which calls load, and how.

``torch.load`` is also reachable as ``torch.serialization.load``; the hub's
``load_state_dict_from_url`` also as ``torch.utils.model_zoo.load_url``.
"""

from __future__ import annotations

import ast
import re

from torchport.check._context import Context
from torchport.check._match import called, keyword

__all__ = [
    "HUB_LOADS",
    "LOADS",
    "LOAD_ATTRS",
    "explicit_weights_only",
    "is_load",
    "unpacks",
    "whole_module",
]

LOADS = frozenset({"torch.load", "torch.serialization.load"})
HUB_LOADS = frozenset({"torch.hub.load_state_dict_from_url", "torch.utils.model_zoo.load_url"})
# The method names any of those calls ends in (`torch.load`, `hub.load_state_dict_from_url`).
LOAD_ATTRS = frozenset({"load", "load_state_dict_from_url", "load_url"})


def is_load(call: ast.Call, ctx: Context, names: frozenset[str] = LOADS) -> bool:
    """Whether ``call`` calls one of ``names`` (``torch.load`` and its alias by default)."""
    return called(call, ctx, LOAD_ATTRS) in names


def explicit_weights_only(call: ast.Call) -> bool | None:
    """The truth of a constant ``weights_only=`` (``0`` is False); else None."""
    flag = keyword(call, "weights_only")
    if flag is None or not isinstance(flag.value, ast.Constant):
        return None
    return bool(flag.value.value) if flag.value.value is not None else None


def unpacks(call: ast.Call) -> bool:
    """Whether ``call`` passes ``*args`` or ``**kwargs`` (which may hold anything)."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(
        kw.arg is None for kw in call.keywords
    )


# Names that hold a whole module (`model`, `net2`, `teacher_model`), not its weights.
_MODULE = re.compile(
    r"^(?:\w+_)?(model|net|network|module|encoder|decoder|backbone|classifier|generator"
    r"|discriminator|policy|critic|actor)s?\d*$",
    re.IGNORECASE,
)
_WEIGHTS = re.compile(r"state|dict|sd$|ckpt|checkpoint|weight|param|tensor|path|file|url|name")


def _identifier(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def whole_module(expr: ast.expr, ctx: Context) -> bool:
    """A careful guess that ``expr`` is a whole ``nn.Module`` (not its ``state_dict()``).

    By name (``model``, ``teacher_net``, ``self.encoder``; never ``model_state``)
    or by binding (``model = Net()``, ``torch.nn.Linear(...)``).
    """
    name = _identifier(expr)
    if name is None or _WEIGHTS.search(name.lower()):
        return False
    if _MODULE.match(name):
        return True
    bound = ctx.value_of(expr) if isinstance(expr, ast.Name) else None
    if isinstance(bound, ast.Call):
        qualified = ctx.qualname(bound.func)
        if qualified is not None:
            return qualified.startswith("torch.nn.") and qualified[9:10].isupper()
        callee = _identifier(bound.func) or ""
        return bool(_MODULE.match(callee)) or callee.endswith(("Net", "Model", "Module"))
    return False
