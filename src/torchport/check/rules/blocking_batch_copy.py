"""TP203 blocking-batch-copy: ``batch.to(device)`` in a loader loop without ``non_blocking``."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import add_keyword, is_cpu_target, keyword, method_name
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._index_copies import copies_a_list_index
from torchport.check.rules._loops import graph_features, rebound_in_the_body
from torchport.check.rules._read_back import read_back_next

_LOADER = re.compile(r"loader|batches", re.IGNORECASE)
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip"})
_DATALOADER = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")


class BlockingBatchCopy(Rule):
    """## What it does
    Finds `.to(device)` of the batch variables of a loop over a data loader
    without `non_blocking=True`.

    ## Why is this bad?
    A blocking host-to-device copy makes the CPU wait for the transfer before
    it can launch the step's kernels, so copy and compute never overlap. With
    `pin_memory=True` in the loader and `non_blocking=True` here, the copy runs
    asynchronously on the device's queue and the next batch's preparation
    proceeds meanwhile.
    Not reported for a graph's features (DGL's `g.ndata["feat"].to(device)`,
    `.edata`): a loader pins a batch's tensors, not a `DGLGraph`'s, so
    `non_blocking=True` overlaps nothing there; nor for a tensor indexed with a list of ints
    (`x[idx].to(device)`, `idx = list(range(n))`): a new tensor nobody pinned. Nor for a copy
    bound to a name the next
    statement only reads back to the host (`labels.tolist()`): it waits for it at once.

    ## Fix safety
    The fix adds `non_blocking=True`. The copy is then ordered on the device's
    stream, which is safe for the device-side code that follows; it is unsafe
    only if the host tensor is modified in place before the copy completes.
    """

    code = "TP203"
    name = "blocking-batch-copy"
    intent = Intent.SPEED
    default_contexts = frozenset({"code", "bench"})  # judged: check/_default_scope.py
    message = "pass `non_blocking=True` (and pin the loader's memory) so copies overlap compute"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = frozenset({"to"})
    valid = (
        "for x, y in loader:\n    x = x.to(device, non_blocking=True)\n",
        "for x in xs:\n    x = x.to(device)\n",
        'for x, y in loader:\n    y = y.to("cpu")\n',
        # Moved again after a move: already on the device (a no-op copy), not the batch.
        "for x, y in loader:\n"
        "    x = x.to(device, non_blocking=True)\n"
        "    if use_cuda:\n"
        "        x = x.to(device)\n",
        # Rebuilt on the host first: a new tensor the loader never pinned.
        "for x, y in loader:\n    x = augment(x)\n    out = model(x.to(device))\n",
    )
    invalid = (
        Example(
            "for i, (x, y) in enumerate(train_loader):\n    x, y = x.to(device), y.to(device)\n",
            fixed="for i, (x, y) in enumerate(train_loader):\n"
            "    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n",
            count=2,
        ),
        Example(
            "for batch in loader:\n    out = model(batch['x'].to(device))\n",
            fixed="for batch in loader:\n"
            "    out = model(batch['x'].to(device, non_blocking=True))\n",
        ),
        # Rebound on one branch only: it may still be the loader's batch.
        Example(
            "for x, y in loader:\n    if aug:\n        x = augment(x)\n    x = x.to(device)\n",
            fixed="for x, y in loader:\n    if aug:\n        x = augment(x)\n"
            "    x = x.to(device, non_blocking=True)\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if not _a_blocking_move_kept(node, ctx):
            return
        assert isinstance(node.func, ast.Attribute)
        if graph_features(node.func.value) or copies_a_list_index(node.func.value, ctx):
            return  # a DGL graph's features, a list-indexed copy: nothing pinned, no overlap
        root = _root_name(node.func.value)
        if root is None or not _a_batch_of_a_loader(root, node, ctx) or read_back_next(node, ctx):
            return  # not the batch, or read back to the host at once: nothing to overlap
        fix = Fix((add_keyword(node, "non_blocking=True", ctx),), FixSafety.UNSAFE, _RACE)
        yield ctx.finding(self, node, fix=fix)


def _a_blocking_move_kept(node: ast.Call, ctx: Context) -> bool:
    """``x.to(device)`` without ``non_blocking``, to a device, its result kept.

    Not to the CPU, not a cast to a dtype, not a discarded ``batch.to(device)`` (which
    moves in place).
    """
    if method_name(node) != "to" or keyword(node, "non_blocking") is not None:
        return False
    target = node.args[0] if node.args else None
    return not (
        target is None
        or is_cpu_target(target, ctx)
        or (ctx.qualname(target) or "").startswith("torch.")
        or "dtype" in ctx.segment(target).lower()  # `x.to(weight_dtype)`: a cast
        or isinstance(ctx.parent, ast.Expr)  # a discarded `batch.to(device)`: in place
    )


def _root_name(expr: ast.expr) -> ast.Name | None:
    """The name under subscripts and attributes: ``batch`` of ``batch["x"].ids``."""
    while isinstance(expr, (ast.Subscript, ast.Attribute)):
        expr = expr.value
    return expr if isinstance(expr, ast.Name) else None


def _a_batch_of_a_loader(root: ast.Name, node: ast.Call, ctx: Context) -> bool:
    """``root`` is bound by the ``for`` over a data loader that holds ``node``.

    Not where the file hands the loader to ``accelerator.prepare(loader)``: its
    batches come on the device.
    """
    loop = ctx.loop_of(node)
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not _is_loader(loop.iter, ctx):
        return False
    if _placed_by_prepare(loop.iter, ctx):
        return False
    bound = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    return root.id in bound and not rebound_in_the_body(root, loop, ctx)


_RACE = (
    "the copy now overlaps the host: if the batch's host tensor is changed in place "
    "before the copy finishes, the device sees the changed values"
)


def _unwrapped(expr: ast.expr) -> ast.expr:
    """The iterable inside ``enumerate(...)``, ``tqdm(...)`` and the like."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.args:
        if expr.func.id not in _WRAPPERS:
            break
        expr = expr.args[0]
    return expr


def _is_loader(expr: ast.expr, ctx: Context) -> bool:
    expr = _unwrapped(expr)
    if isinstance(expr, ast.Name):
        bound = ctx.value_of(expr)
        if isinstance(bound, ast.Call) and ctx.qualname(bound.func) in _DATALOADER:
            return True
        return bool(_LOADER.search(expr.id)) and not _host_list(bound, ctx)
    if isinstance(expr, ast.Attribute):
        return bool(_LOADER.search(expr.attr))
    return False


def _host_list(value: ast.expr | None, ctx: Context, depth: int = 0) -> bool:
    """Whether ``value`` is a list the program builds itself, where nothing pins the batches.

    ``batches = [...]``, or the call of a function of this module whose every
    ``return`` gives such a list (``batches = []``, appended to, returned).
    """
    if isinstance(value, (ast.List, ast.ListComp)):
        return True
    if isinstance(value, ast.Name) and depth < 2:
        return _host_list(ctx.value_of(value), ctx, depth + 1)
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)) or depth:
        return False
    made = ctx.scopes.binding_at(value.func)
    if made is None or not isinstance(made.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    returns = [r.value for r in ast.walk(made.node) if isinstance(r, ast.Return)]
    return bool(returns) and all(_host_list(r, ctx, 1) for r in returns)


def _placed_by_prepare(loader: ast.expr, ctx: Context) -> bool:
    """Whether the file hands the loader to a ``prepare(...)`` (Accelerate places its batches)."""
    loader = _unwrapped(loader)
    name = loader.id if isinstance(loader, ast.Name) else getattr(loader, "attr", None)
    if name is None or not ctx.mentions(".prepare("):
        return False
    for call in ast.walk(ctx.tree):
        if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "prepare":
            for arg in call.args:
                if getattr(arg, "id", getattr(arg, "attr", None)) == name:
                    return True
    return False
