"""The state of one walk over one file, as the rules see it.

The engine creates one :class:`Context` per file, and for every node it runs the
rules registered for the node's type first, then calls :meth:`Context.enter`,
walks the children, and calls :meth:`Context.leave`. So while a rule looks at a
node, ``ctx.ancestors`` holds the nodes that enclose it (innermost last), not
the node itself.

(Minimal version: the rules issue grows this into the full API: qualified names
through import aliases, bindings, loop depth, edit builders.)
"""

from __future__ import annotations

import ast

from torchport.check._rule import Finding, Fix, Rule


class Context:
    """Where the walk is in one file, and how to report and fix things there."""

    def __init__(self, source: str, path: str, tree: ast.Module) -> None:
        self.source = source
        self.path = path
        self.tree = tree
        self.ancestors: list[ast.AST] = []

    def enter(self, node: ast.AST) -> None:
        self.ancestors.append(node)

    def leave(self, node: ast.AST) -> None:
        self.ancestors.pop()

    def finding(self, rule: Rule, node: ast.AST, *, message: str | None = None, fix: Fix | None = None) -> Finding:
        """A finding of ``rule`` spanning ``node``."""
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        return Finding(
            path=self.path,
            line=line,
            col=col + 1,
            end_line=getattr(node, "end_lineno", None) or line,
            end_col=(getattr(node, "end_col_offset", None) or col) + 1,
            code=rule.code,
            name=rule.name,
            message=message or rule.message,
            fix=fix,
        )
