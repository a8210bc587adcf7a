"""Fixtures shared by the checker's fact tests (guards, residence)."""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest

from torchport.check._context import Context

ExprAt = Callable[[str, str], tuple[ast.expr, Context]]


def _expr_at(source: str, marker: str) -> tuple[ast.expr, Context]:
    """The expression ``marker(...)``'s argument, with a Context whose ancestors lead to it.

    Facts such as "is this node behind a device check" are asked mid-walk, where
    ``ctx.ancestors`` holds the enclosing nodes; this rebuilds that state for one node.
    """
    tree = ast.parse(source)
    ctx = Context(source, "<test>", tree)
    found: list[tuple[ast.expr, list[ast.AST]]] = []

    def visit(node: ast.AST, chain: list[ast.AST]) -> None:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == marker
            and node.args
        ):
            found.append((node.args[0], [*chain, node]))
        for child in ast.iter_child_nodes(node):
            visit(child, [*chain, node])

    visit(tree, [])
    assert len(found) == 1, f"{marker} appears {len(found)} times"
    expr, chain = found[0]
    ctx.ancestors = chain
    return expr, ctx


@pytest.fixture
def expr_at() -> ExprAt:
    """:func:`_expr_at`: find ``HERE(expr)`` in a source and the walk state around it."""
    return _expr_at
