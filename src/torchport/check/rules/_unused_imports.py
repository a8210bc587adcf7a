"""Imports a fix leaves unused: found through the scope model, removed whole or in part."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Edit, Finding, Fix, FixSafety, Rule

__all__ = ["read", "unused_imports"]


def unused_imports(
    rule: Rule,
    node: ast.Import | ast.ImportFrom,
    ctx: Context,
    modules: frozenset[str],
    message: str,
) -> Iterator[Finding]:
    """A finding for names ``node`` imports from ``modules`` that nothing reads.

    Its fix (safe) removes them, or the whole statement when none is left.
    """
    if isinstance(node, ast.ImportFrom):
        if node.level or node.module not in modules or any(a.name == "*" for a in node.names):
            return
    elif not any(a.name in modules and a.asname for a in node.names):
        return  # `import torch.cuda.amp` binds `torch` itself
    aliases = node.names
    unused = [
        a
        for a in aliases
        if (isinstance(node, ast.ImportFrom) or (a.name in modules and a.asname))
        and not read(a.asname or a.name, ctx)
    ]
    if not unused:
        return
    kept = [a for a in aliases if a not in unused]
    fix = None
    if kept:
        if node.lineno == node.end_lineno and ctx.owns_lines(node):
            names = ", ".join(ast.unparse(a) for a in kept)
            head = f"from {node.module} import " if isinstance(node, ast.ImportFrom) else "import "
            fix = Fix((ctx.replace(node, head + names),), FixSafety.SAFE)
    else:
        fix = Fix((_remove(node, ctx),), FixSafety.SAFE)
    yield ctx.finding(rule, node, message=message, fix=fix)


def read(name: str, ctx: Context) -> bool:
    """Whether any scope reads ``name``, or a string names it (``__all__``): then it stays."""
    scopes = ctx.scopes
    if any(name in scope.reads for scope in scopes.scopes.values()):
        return True
    return ctx.mentions(f'"{name}"') or ctx.mentions(f"'{name}'")


def _remove(node: ast.stmt, ctx: Context) -> Edit:
    """Delete ``node``: its lines when it has them to itself and is not alone in its block."""
    parent = ctx.scopes.parent(node)
    block = next(
        (
            b
            for f in ("body", "orelse", "finalbody", "handlers")
            if isinstance(b := getattr(parent, f, None), list) and any(s is node for s in b)
        ),
        [],
    )
    if len(block) > 1 and ctx.owns_lines(node):
        starts = ctx._line_starts()
        last = node.end_lineno or node.lineno
        end = starts[last + 1] if last + 1 < len(starts) else len(ctx.source)
        return Edit(starts[node.lineno], end, "")
    return ctx.replace(node, "pass")  # a statement stays where one is needed
