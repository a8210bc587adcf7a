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
    "UNDECIDED",
    "explicit_weights_only",
    "indirect_load",
    "is_load",
    "truth",
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


UNDECIDED = "undecided"  # a spelling that may be torch.load, which the checker cannot settle
_PARTIALS = frozenset({"functools.partial"})
_DEPTH = 4  # aliases of aliases followed this far
_LOAD_KEYWORDS = frozenset({"weights_only", "map_location", "pickle_module", "mmap"})


def indirect_load(
    call: ast.Call, ctx: Context, names: frozenset[str] = LOADS
) -> tuple[str, list[ast.keyword]] | None:
    """What ``call`` loads with when it reaches one of ``names`` other than by its name.

    Followed: a name bound to it (``ld = torch.load; ld(f)``), ``getattr(torch,
    "load")``, ``functools.partial(torch.load, ...)`` called at once or through a
    name, and these within each other. Returns the qualified name and the keywords
    the load gets (a partial's first, then the call's), ``(UNDECIDED, [])`` for a
    ``getattr`` of torch with a computed name, or None.
    """
    return _callee(call.func, ctx, names, call.keywords, 0)


def _callee(
    expr: ast.expr,
    ctx: Context,
    names: frozenset[str],
    keywords: list[ast.keyword],
    depth: int,
) -> tuple[str, list[ast.keyword]] | None:
    if depth > _DEPTH:
        return None
    if isinstance(expr, (ast.Name, ast.Attribute)):
        name = ctx.qualname(expr)
        if name in names:
            return (name, keywords) if depth else None  # (a direct call is the caller's)
        if isinstance(expr, ast.Name) and name is None:
            bound = ctx.binding(expr.id)
            if bound is not None:
                return _callee(bound, ctx, names, keywords, depth + 1)
        return None
    if not isinstance(expr, ast.Call):
        return None
    func = expr.func
    if ctx.qualname(func) in _PARTIALS and expr.args:
        return _callee(expr.args[0], ctx, names, [*expr.keywords, *keywords], depth + 1)
    if isinstance(func, ast.Name) and func.id == "getattr" and ctx.binding("getattr") is None:
        if len(expr.args) < 2:
            return None
        owner = ctx.qualname(expr.args[0])
        attr = expr.args[1]
        if owner is None:
            return None
        if isinstance(attr, ast.Name) and isinstance(bound := ctx.binding(attr.id), ast.Constant):
            attr = bound  # `name = "load"; getattr(torch, name)`
        if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
            full = f"{owner}.{attr.value}"
            return (full, keywords) if full in names else None
        # A computed name of torch's (`getattr(torch, name)`) is a load only maybe: said
        # when the call passes what a load takes; a dtype or a tensor type is no load.
        prefixes = {n.rpartition(".")[0] for n in names}
        load_like = any(k.arg in _LOAD_KEYWORDS for k in keywords)
        return (UNDECIDED, []) if owner in prefixes and load_like else None
    return None


def truth(expr: ast.expr, ctx: Context, depth: int = 0) -> bool | None:
    """The truth of an expression the checker can work out (a constant, ``not``, ``bool(0)``,
    a name bound to one of those); None when it cannot (``None`` itself is None: the default)."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, ast.Constant):
        return None if expr.value is None else bool(expr.value)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        inner = truth(expr.operand, ctx, depth + 1)
        return None if inner is None else not inner
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "bool"
        and ctx.binding("bool") is None
        and len(expr.args) == 1
        and not expr.keywords
    ):
        return truth(expr.args[0], ctx, depth + 1)
    if isinstance(expr, ast.Name):
        bound = ctx.binding(expr.id)
        return None if bound is None else truth(bound, ctx, depth + 1)
    return None


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
    bound = ctx.binding(name) if isinstance(expr, ast.Name) else None
    if isinstance(bound, ast.Call):
        qualified = ctx.qualname(bound.func)
        if qualified is not None:
            return qualified.startswith("torch.nn.") and qualified[9:10].isupper()
        callee = _identifier(bound.func) or ""
        return bool(_MODULE.match(callee)) or callee.endswith(("Net", "Model", "Module"))
    return False
