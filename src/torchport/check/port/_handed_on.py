"""What a function hands on that the flow knows by its callers, and what it hands back by item.

A wrapper handing its own ``*args`` or ``**kwargs`` on (``def f(*a): return g(*a)``,
``def f(**k): return g(**k)``) gives ``g`` what ``f``'s callers give ``f``: :func:`rest_of`
tells such a name, :func:`rest_items` what the callers hand it. A function returning a
literal tuple (``return model(x), torch.ones(2)``) hands back each item where it is:
:func:`device_items` tells which items are device values, for the names unpacking its call
(``t, w = make()``: ``t`` a device value, ``w`` not; issue 31: the pair was followed
nowhere, and ``w``'s ones were left on the CPU, unsaid), where the function makes a tensor
on the host beside a device value (a tuple of device values and numbers is left as it was).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check.port._device_flow import DeviceFlow, PortScope
from torchport.check.semantic import BindingKind, ScopeMap

__all__ = ["device_items", "rest_items", "rest_of"]


def rest_of(held: ast.expr, scopes: ScopeMap, which: str) -> ast.FunctionDef | None:
    """The enclosing function whose own ``*args`` (``which`` "vararg") or ``**kwargs``
    ("kwarg") ``held`` names, its only binding there; else None."""
    if not isinstance(held, ast.Name):
        return None
    found = scopes.bindings(held.id, held)
    if len(found) != 1 or found[0].kind is not BindingKind.PARAMETER:
        return None
    func = found[0].scope.node
    if not isinstance(func, ast.FunctionDef):
        return None
    return func if getattr(func.args, which) is found[0].node else None


def rest_items(
    func: ast.FunctionDef,
    which: str,
    sites: list[tuple[ast.Call, PortScope]] | None,
    items: Callable[[ast.expr], list[ast.expr] | None],
) -> dict[str | None, list[ast.expr]] | None:
    """What ``func``'s callers (``sites``) hand its ``*args`` (under None) or its
    ``**kwargs`` (by keyword), each argument (a starred one's items by ``items``: None where
    the code does not show them); None where the sites are not all known or one hands
    something the code does not show."""
    if sites is None:
        return None
    a = func.args
    positional = len(a.posonlyargs) + len(a.args)
    named = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    found: dict[str | None, list[ast.expr]] = {}
    for call, _ in sites:
        if which == "vararg":
            for arg in call.args[positional:] if not _starred_before(call, positional) else ():
                shown = items(arg) if isinstance(arg, ast.Starred) else [arg]
                if shown is None:
                    return None
                found.setdefault(None, []).extend(shown)
            if _starred_before(call, positional):
                return None
        else:
            for k in call.keywords:
                if k.arg is None:
                    return None  # (`f(**d)`: by d's keys, not followed here)
                if k.arg not in named:
                    found.setdefault(k.arg, []).append(k.value)
    return found


def _starred_before(call: ast.Call, positional: int) -> bool:
    """Whether a starred argument of ``call`` stands among the named positions."""
    return any(isinstance(a, ast.Starred) for a in call.args[:positional])


def device_items(flow: DeviceFlow, target: PortScope) -> tuple[bool, ...] | None:
    """Which items of the tuples a function returns are device values, where every value it
    returns is a literal tuple (list) of one length, none starred, one item a device value
    at least (``return model(x), torch.ones(2)``: ``(True, False)``); else None."""
    if not isinstance(target.node, ast.FunctionDef):
        return None
    returns: list[list[ast.expr]] = []
    for n in target.nodes:
        if isinstance(n, ast.Yield | ast.YieldFrom):
            return None
        if isinstance(n, ast.Return):
            value = n.value
            if not isinstance(value, ast.Tuple | ast.List):
                return None
            if any(isinstance(e, ast.Starred) for e in value.elts):
                return None
            returns.append(value.elts)
    if not returns or len({len(r) for r in returns}) != 1:
        return None
    flags = tuple(
        any(flow.on_device(r[i], target) for r in returns) for i in range(len(returns[0]))
    )
    if not any(flags):
        return None
    # only beside a tensor the function makes on the host (the silent class: the ones left
    # on the CPU); a tuple of device values and numbers or models is left as it was
    hosts = [e for r in returns for e, f in zip(r, flags, strict=True) if not f]
    return flags if any(_host_tensor(flow, e, target) for e in hosts) else None


def _host_tensor(flow: DeviceFlow, expr: ast.expr, scope: PortScope) -> bool:
    """Whether ``expr`` is a call of torch (``torch.ones(2)``), or a name ``scope`` binds only
    to such."""
    values = scope.values_of(expr.id) if isinstance(expr, ast.Name) else [expr]
    return bool(values) and all(
        isinstance(v, ast.Call) and (flow.ctx.qualname(v.func) or "").startswith("torch.")
        for v in values
    )
