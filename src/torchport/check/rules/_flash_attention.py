"""Code that surely loads a model with FlashAttention, so needs CUDA anyway.

``from_pretrained(..., attn_implementation="flash_attention_2")`` fails without the
``flash_attn`` package and a CUDA (or ROCm) device: where that load surely runs, advice to
pick the device some other way changes nothing (sample AE's A, judged low (a):
Video-Captioning's ``demo/VLM/run_vlm.py``, its ``--device`` default ``cuda:0`` beside a
VideoLLaMA3 loaded that way). Left to a default run: a function of the module whose run
surely makes such a load (a call not under an ``if``, a loop, a conditional expression
or an ``except``; in it or in a function of the module it surely calls), and, where the
module's ``if __name__ == "__main__":`` block surely makes it, that block and every function
of the module it surely calls (``parse_args`` too). A load only on some branch
(``attn_implementation="flash_attention_2" if fast else "sdpa"``, ``if args.flash:``) or a
function the script's run may skip keeps its findings.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check.rules._test_code import main_guard

__all__ = ["surely_loads_flash_attention"]

_FLASH = frozenset({"flash_attention_2", "flash_attention_3"})
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SKIPPED = (ast.Lambda, ast.IfExp, *_DEFS, ast.ClassDef, *_COMPREHENSIONS)


def surely_loads_flash_attention(ctx: Context, node: ast.AST | None) -> bool:
    """Whether the function (or ``__main__`` block) holding ``node`` surely loads a model
    with FlashAttention, or is surely run by a ``__main__`` block that does."""
    marked = ctx.memo.get("flash_attention.marked")
    if not isinstance(marked, frozenset):
        marked = ctx.memo["flash_attention.marked"] = _marked(ctx)
    if not marked:
        return False
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (*_DEFS, ast.If)) and id(outer) in marked:
            return True
        if isinstance(outer, (*_DEFS, ast.Lambda, ast.ClassDef)):
            return False  # the innermost function decides
    return False


def _marked(ctx: Context) -> frozenset[int]:
    if "flash_attention_" not in ctx.source:
        return frozenset()
    tree = ctx.tree
    functions = {s.name: s for s in tree.body if isinstance(s, _DEFS)}
    calls = {name: list(_sure_calls(f.body)) for name, f in functions.items()}
    loading = {name for name, found in calls.items() if any(map(_flash_load, found))}
    grew = True
    while grew:
        more = {n for n, found in calls.items() if n not in loading and _calls(found) & loading}
        loading |= more
        grew = bool(more)
    marked = {id(functions[name]) for name in loading}
    for block in (s for s in tree.body if isinstance(s, ast.If) and main_guard(s)):
        found = list(_sure_calls(block.body))
        if not (any(map(_flash_load, found)) or _calls(found) & loading):
            continue
        run, todo = set(), _calls(found) & functions.keys()
        while todo:
            name = todo.pop()
            run.add(name)
            todo |= (_calls(calls[name]) & functions.keys()) - run
        marked |= {id(block), *(id(functions[name]) for name in run)}
    return frozenset(marked)


def _flash_load(call: ast.Call) -> bool:
    return any(
        k.arg == "attn_implementation"
        and isinstance(k.value, ast.Constant)
        and k.value.value in _FLASH
        for k in call.keywords
    )


def _calls(found: list[ast.Call]) -> set[str]:
    return {c.func.id for c in found if isinstance(c.func, ast.Name)}


def _sure_calls(body: list[ast.stmt]) -> Iterator[ast.Call]:
    """The calls a run of ``body`` surely makes: not under an ``if``, a loop, a ``match``,
    an ``except``, a conditional expression, the right of ``and``/``or``, a comprehension,
    a ``lambda`` or a nested ``def``."""
    for stmt in body:
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _sure_calls(stmt.body)
        elif isinstance(stmt, ast.Try):
            yield from _sure_calls(stmt.body)
            yield from _sure_calls(stmt.finalbody)
        elif isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
            yield from _calls_in(stmt)


def _calls_in(node: ast.AST) -> Iterator[ast.Call]:
    if isinstance(node, _SKIPPED):
        return
    if isinstance(node, ast.Call):
        yield node
    if isinstance(node, ast.BoolOp):
        yield from _calls_in(node.values[0])
        return
    for child in ast.iter_child_nodes(node):
        yield from _calls_in(child)
