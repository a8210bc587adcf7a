"""Numbers read from the device that size the work an iteration launches next (TP202).

``num_samples = quota - counts[i].item()`` then ``x = model.sample(num_samples, ...)``:
Python needs the number now to decide how much work to queue, so accumulating on the
device cannot stand in for the read; the wait is the point, as for ``vocab[i.item()]``.
A number kept for a sink (``sizes.append(n)``, ``total += n``) or computed for a log
(``acc = ratio(correct, n)``, a name that does not count work) is not such a read.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from torchport.check._context import Context

__all__ = ["sizes_the_next_call"]

# Names and keywords that count work: `n`, `k`, `num_samples`, `n_steps`, `batch_size`,
# `length`, `max_len`; not running figures (`num_correct`, `n_loss`, `total_size`).
_COUNTS = re.compile(
    r"(n|k|num|count|size|length|len|steps)(_\w+)?|\w+_(num|n|size|len|length|count|steps)"
)
_NOT_WORK = re.compile(r"correct|right|wrong|loss|acc|hit|err|total|sum|seen|done")
# Wrappers that keep a read a number: `int(x.item())`, `max(1, x.item())`.
_NUMBER_CALLS = frozenset({"int", "round", "max", "min", "abs"})
_CONVERSIONS = frozenset({"float", "str", "bool", "repr", "format", "print", "len"})


def sizes_the_next_call(node: ast.Call, ctx: Context) -> bool:
    """Whether the ``.item()`` at ``node`` sizes a call whose result the loop keeps.

    The number, through arithmetic and ``int``/``round``/``max``/``min``/``abs``, is
    either handed straight to a call as a keyword that counts work (``num_samples=``,
    ``n=``, ``size=``) whose result is assigned, or assigned to a name that counts work,
    one of whose reads in the same loop is the first argument or such a keyword of a
    call whose result is assigned (not a conversion: ``float(n)``, ``str(n)``).
    """
    loop = ctx.loop_of(node)
    if loop is None:
        return False
    value, holder = _number_of(node, ctx)
    scopes = ctx.scopes
    if isinstance(holder, ast.keyword) and _sizes(value, holder, scopes.parent):
        return True  # `x = model.sample(num_samples=n.item())`
    if not (
        isinstance(holder, ast.Assign)
        and holder.value is value
        and len(holder.targets) == 1
        and isinstance(holder.targets[0], ast.Name)
        and _counts_work(holder.targets[0].id)
    ):
        return False
    target = holder.targets[0]
    first, last = loop.lineno, getattr(loop, "end_lineno", None) or loop.lineno  # type: ignore[attr-defined]
    scope = scopes.resolve(target.id, target)
    for read in scopes.reads_of(target.id, scope):
        if not first <= read.lineno <= last:
            continue
        if _sizes(read, scopes.parent(read), scopes.parent):
            return True
    return False


def _number_of(node: ast.Call, ctx: Context) -> tuple[ast.AST, ast.AST | None]:
    """The outermost expression that is still the number read, and what holds it."""
    child: ast.AST = node
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, ast.BinOp | ast.UnaryOp):
            child = outer
            continue
        if (
            isinstance(outer, ast.Call)
            and isinstance(outer.func, ast.Name)
            and outer.func.id in _NUMBER_CALLS
            and any(a is child for a in outer.args)
        ):
            child = outer
            continue
        return child, outer
    return child, None


def _sizes(
    value: ast.AST, holder: ast.AST | None, parent: Callable[[ast.AST], ast.AST | None]
) -> bool:
    """``value`` is the first argument, or a keyword counting work, of a call whose result
    is assigned (``holder``: the call, or the keyword holding ``value``)."""
    if isinstance(holder, ast.keyword):
        call = parent(holder)
        named = holder.arg is not None and _counts_work(holder.arg)
    else:
        call = holder
        named = isinstance(call, ast.Call) and bool(call.args) and call.args[0] is value
    if not (named and isinstance(call, ast.Call)):
        return False
    if isinstance(call.func, ast.Name) and call.func.id in _CONVERSIONS:
        return False  # `m = float(n)`: a number made from the number, no work sized
    return isinstance(parent(call), ast.Assign)  # `x, y = model.sample(n, ...)`: kept


def _counts_work(name: str) -> bool:
    lowered = name.lower()
    return _COUNTS.fullmatch(lowered) is not None and _NOT_WORK.search(lowered) is None
