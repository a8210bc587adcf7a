"""Files a ``torch.load`` reads that the same program wrote, as a cache of what it builds, for
TP301 (benchmarks/RESULTS.md, issue 34, branch k34: its judged rows in other code over samples
A-T). Like the caches ``_loading.written_by_this_run`` knows (``if exists(p): torch.load(p)``
with ``torch.save(..., p)`` in the ``else``), the file comes from this program, which builds
what it holds when it is missing:

* ``x = torch.load(p)`` in a ``try`` whose function saves ``x`` itself to the same path (the
  same expression, however it is spaced) in a handler of that ``try`` or after it: ``try: x =
  torch.load(p)`` / ``except: pass`` / ``if x is None: x = build(); torch.save(x, p)``.
  Another value saved there (``torch.save(model.state_dict(), p)``: a checkpoint a later run
  resumes from), another path, a save only before the ``try`` or in another function is not
  this;
* a PyG dataset's processed files (``torch.load(self.processed_paths[i])`` in a class deriving
  from a ``torch_geometric.data`` dataset whose own ``process()`` writes them with
  ``torch.save``): PyG runs ``process()`` when they are missing, from the raw files.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import keyword

__all__ = ["cached_here"]


def cached_here(node: ast.Call, ctx: Context) -> bool:
    """Whether the file ``node`` (a ``torch.load``) reads is the program's own cache."""
    source = node.args[0] if node.args else getattr(keyword(node, "f"), "value", None)
    if source is None:
        return False
    return _tried_then_saved(node, source, ctx) or _processed_file(source, ctx)


def _saves(tree: ast.AST, name: str, path: ast.expr, ctx: Context, after: int = 0) -> bool:
    """Whether ``tree`` holds ``torch.save(<name>, <path>)`` on a line after ``after``, the
    path the same expression (``same_tree``: ``ast.dump`` would leave a reference cycle)."""
    from torchport.check.port._device_name import same_tree  # on first use

    return any(
        isinstance(sub, ast.Call)
        and len(sub.args) >= 2
        and sub.lineno > after
        and isinstance(sub.args[0], ast.Name)
        and sub.args[0].id == name
        and same_tree(sub.args[1], path)
        and ctx.qualname(sub.func) == "torch.save"
        for sub in ast.walk(tree)
    )


def _tried_then_saved(node: ast.Call, source: ast.expr, ctx: Context) -> bool:
    """``name = torch.load(p)`` in a ``try`` body whose handlers, or its function after it,
    save ``name`` to ``p``."""
    chain = ctx.ancestors
    bound = chain[-1] if chain else None
    if not (
        isinstance(bound, ast.Assign)
        and bound.value is node
        and len(bound.targets) == 1
        and isinstance(bound.targets[0], ast.Name)
    ):
        return False
    name, path = bound.targets[0].id, source
    tries: list[ast.Try] = []
    for i in range(len(chain) - 1, 0, -1):
        outer = chain[i]
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return any(
                any(_saves(h, name, path, ctx) for h in t.handlers)
                or _saves(outer, name, path, ctx, after=t.end_lineno or t.lineno)
                for t in tries
            )
        if isinstance(outer, (ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(outer, ast.Try) and any(stmt is chain[i + 1] for stmt in outer.body):
            tries.append(outer)
    return False


_PYG = "torch_geometric.data"


def _processed_file(source: ast.expr, ctx: Context) -> bool:
    """``self.processed_paths[...]`` in a PyG dataset class whose ``process()`` saves them."""
    inner = source.value if isinstance(source, ast.Subscript) else source
    if not (
        isinstance(inner, ast.Attribute)
        and inner.attr == "processed_paths"
        and isinstance(inner.value, ast.Name)
        and inner.value.id == "self"
    ):
        return False
    cls = next((a for a in reversed(ctx.ancestors) if isinstance(a, ast.ClassDef)), None)
    if cls is None or not any(
        (ctx.qualname(base) or "").startswith(f"{_PYG}.") for base in cls.bases
    ):
        return False
    process = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "process"), None
    )
    inside = list(ast.walk(process)) if process is not None else []
    return any(
        isinstance(sub, ast.Call) and ctx.qualname(sub.func) == "torch.save" for sub in inside
    ) and any(isinstance(sub, ast.Attribute) and sub.attr == "processed_paths" for sub in inside)
