"""TP120's chains: a device picked by availability tests of some accelerators, else the CPU.

``if torch.cuda.is_available(): ... elif torch.xpu.is_available(): ... else: device = "cpu"``
(argonne-lcf's ``pytorch_xpu.py``, held-out set b31ah) and ``"cuda" if torch.cuda.is_available()
else "mps" if torch.backends.mps.is_available() else "cpu"`` test CUDA and one more accelerator:
on an accelerator they leave out the program runs on the CPU, as TP109's CUDA-or-CPU idiom does on
both. A chain testing CUDA, MPS and XPU each is what TP120 advises and is left alone; so is a
chain testing CUDA alone (TP109's), one not testing CUDA (``"mps" if torch.backends.mps...
else "cpu"``, often under ``if not torch.cuda.is_available():``, where leaving CUDA out is
right), one whose tests ask anything else (a flag, an option, ``torch.accelerator``), and one
with no ``else`` (what the device was before is the program's). The CPU fallback is read
wherever a branch binds the CPU to a name of its own (:func:`sets_the_cpu`, which TP120's
one-armed ``if not torch.cuda.is_available():`` asks too): plainly, or as one item of an
unpacked tuple (``device, n = "cpu", 0``, ``return "cpu", 0``, ``("cpu", 0)`` ending the
nested conditional).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import is_cpu_target
from torchport.check.semantic._residence import bound_value

__all__ = ["partial_chain", "sets_the_cpu", "unpacks_the_cpu"]

# torch's availability tests, by the accelerator each asks about
_TESTS = {
    "torch.cuda.is_available": "CUDA",
    "torch.backends.mps.is_available": "MPS",
    "torch.mps.is_available": "MPS",
    "torch.xpu.is_available": "XPU",
}
_EACH = ("CUDA", "MPS", "XPU")


def partial_chain(node: ast.If | ast.IfExp, ctx: Context) -> tuple[str, str] | None:
    """(the accelerators tested, those left out) where ``node`` heads such a chain."""
    parent = ctx.parent
    if isinstance(node, ast.If) and isinstance(parent, ast.If) and parent.orelse == [node]:
        return None  # an `elif`: its chain is judged at its head
    if isinstance(node, ast.IfExp) and isinstance(parent, ast.IfExp) and parent.orelse is node:
        return None
    tested: list[str] = []
    link: ast.If | ast.IfExp = node
    while True:
        which = _accelerator(link.test, ctx)
        if which is None:
            return None  # a flag, an option, `torch.accelerator`: the program's own test
        tested.append(which)
        if isinstance(link, ast.IfExp):
            if isinstance(link.orelse, ast.IfExp):
                link = link.orelse
                continue
            if not (is_cpu_target(link.orelse, ctx) or unpacks_the_cpu(link.orelse, ctx)):
                return None  # (`("cpu", 0)`: a pair unpacked where the chain is bound)
            break
        rest = link.orelse
        if len(rest) == 1 and isinstance(rest[0], ast.If):
            link = rest[0]
            continue
        if not any(sets_the_cpu(s, ctx) for s in rest):
            return None  # no `else`, or one that is not the CPU
        break
    elsewhere = _picked_beside(node, ctx)
    left = [a for a in _EACH if a not in tested and a not in elsewhere]
    if not left or set(tested) == {"CUDA"} or "CUDA" not in tested:
        return None  # each tested (TP120's advice), CUDA alone (TP109's), or CUDA not at all
    return " and ".join(dict.fromkeys(tested)), " or ".join(left)


def _picked_beside(head: ast.If | ast.IfExp, ctx: Context) -> set[str]:
    """The accelerators another test in the chain's function (or module) picks a device by:
    ``if torch.backends.mps.is_available(): return "mps"`` before it, ``if ... and
    torch.xpu.is_available(): device = "xpu"`` after it (a branch that binds or returns)."""
    scope = next(
        (
            a
            for a in reversed(ctx.ancestors)
            if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)
        ),
        ctx.ancestors[0] if ctx.ancestors else head,
    )
    key = f"partial_chains.picked:{id(scope)}"  # Context.memo's: one walk per scope
    kept = ctx.memo.get(key)
    if not (isinstance(kept, tuple) and kept[0] is scope):
        kept = ctx.memo[key] = (scope, *_picks(scope, ctx))
    _, by_node, counts = kept
    own = by_node.get(id(head), ())
    return {which for which, count in counts.items() if count > (which in own)}


def _picks(scope: ast.AST, ctx: Context) -> tuple[dict[int, frozenset[str]], dict[str, int]]:
    """Each test in ``scope`` that picks a device (a branch that binds or returns), by ``id``,
    with the accelerators it asks about; and for each accelerator, how many tests ask."""
    by_node: dict[int, frozenset[str]] = {}
    counts: dict[str, int] = {}
    for node in ast.walk(scope):
        if not isinstance(node, ast.If | ast.IfExp):
            continue
        if isinstance(node, ast.If) and not any(
            isinstance(s, ast.Assign | ast.AnnAssign | ast.Return) for s in node.body
        ):
            continue
        found = frozenset(
            which
            for call in ast.walk(node.test)
            if isinstance(call, ast.Call) and (which := _TESTS.get(ctx.qualname(call.func) or ""))
        )
        by_node[id(node)] = found
        for which in found:
            counts[which] = counts.get(which, 0) + 1
    return by_node, counts


def _accelerator(test: ast.expr, ctx: Context, hops: int = 2) -> str | None:
    """The accelerator ``test`` asks about: its availability call, alone or ``and``-ed with
    a guard (``hasattr(torch, "xpu") and torch.xpu.is_available()``), or a name bound to it."""
    if isinstance(test, ast.Call):
        return _TESTS.get(ctx.qualname(test.func) or "")
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        found = {a for a in (_accelerator(v, ctx, hops) for v in test.values) if a}
        guards = [v for v in test.values if _accelerator(v, ctx, hops) is None]
        if len(found) == 1 and all(_a_guard(g) for g in guards):
            return found.pop()
        return None
    if isinstance(test, ast.Name) and hops > 0:
        bound = bound_value(test, ctx)
        return None if bound is None else _accelerator(bound, ctx, hops - 1)
    return None


def _a_guard(expr: ast.expr) -> bool:
    """``hasattr(torch, "xpu")``, ``hasattr(torch.backends, "mps")``: asks only that it exists."""
    return (
        isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "hasattr"
    )


def sets_the_cpu(stmt: ast.stmt, ctx: Context, *, returns: bool = True) -> bool:
    """``x = "cpu"``, ``self.device = torch.device("cpu")``, ``return "cpu"`` (``returns``),
    or the CPU bound by unpacking (``device, n = "cpu", 0``, ``return "cpu", 0``): until
    d31ai an unpacking ``else`` was not read, and its chain stayed silent (issue 31)."""
    kinds = (ast.Assign, ast.AnnAssign, ast.Return) if returns else (ast.Assign, ast.AnnAssign)
    if not isinstance(stmt, kinds) or stmt.value is None:
        return False
    if is_cpu_target(stmt.value, ctx):
        return True
    if isinstance(stmt, ast.Return):
        return unpacks_the_cpu(stmt.value, ctx)
    return isinstance(stmt, ast.Assign) and any(
        _binds_a_cpu_item(t, stmt.value, ctx) for t in stmt.targets
    )


def unpacks_the_cpu(value: ast.expr, ctx: Context) -> bool:
    """``"cpu", 0`` (a tuple or list one item of which is plainly the CPU)."""
    return isinstance(value, ast.Tuple | ast.List) and any(
        is_cpu_target(e, ctx) for e in value.elts
    )


def _binds_a_cpu_item(target: ast.expr, value: ast.expr, ctx: Context) -> bool:
    """Whether ``target = value`` unpacks ``value``'s items into targets of their own, one of
    them plainly the CPU: item by item at the same length, nested (``(device, n), m =
    ("cpu", 0), 0``), or around one starred target (``device, *rest = "cpu", 0, 0``: the items
    before it by position, those after it from the end). k31ak: the nested and starred forms
    were not read, and their chains stayed silent."""
    if not (isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List)):
        return False
    if any(isinstance(e, ast.Starred) for e in value.elts):
        return False
    stars = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
    if len(stars) > 1 or len(value.elts) < len(target.elts) - len(stars):
        return False
    if not stars and len(value.elts) != len(target.elts):
        return False
    star = stars[0] if stars else len(target.elts)
    after = len(target.elts) - star - 1 if stars else 0
    pairs = [*zip(target.elts[:star], value.elts[:star], strict=True)]
    if after:
        pairs += zip(target.elts[-after:], value.elts[-after:], strict=True)
    return any(
        _binds_a_cpu_item(t, v, ctx)
        if isinstance(t, ast.Tuple | ast.List)
        else is_cpu_target(v, ctx)
        for t, v in pairs
    )
