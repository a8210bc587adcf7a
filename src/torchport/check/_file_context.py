"""The :class:`Context` a file's check walks with: a project view's, made of its parse.

A project view reads each module it reaches through a ``Context`` of it
(``port/_project.module_facts``). When that module's own check comes later in the run, its
parse is the view's (``_syntax.keep_parsed``), and so is its ``Context``: the statement
facts, the named and star imports read from other files and the scope map of the same
text, made once. What making it read of other files (``_listing.note``) is noted again in
the check's own record, as making it there would have noted it. Taken only where the
check's path is the real path the view made it for (no link between them).
"""

from __future__ import annotations

import os

from torchport.check._context import Context
from torchport.check._listing import recorded, span, still
from torchport.check._syntax import adopt_scopes, offer_scopes

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    import ast

__all__ = ["file_context", "view_context"]

_MADE = "context.made"  # Context.memo's key: what making it noted, and in which span


def view_context(source: str, path: str, tree: ast.Module) -> Context:
    """A ``Context`` of the module at the real path ``path`` for a project view, which the
    module's own check may take later (:func:`file_context`)."""
    with recorded() as made:
        ctx = Context(source, path, tree)
    ctx.memo[_MADE] = (made, span())
    return ctx


def file_context(
    source: str, path: str, tree: ast.Module, target_torch: tuple[int, int] | None
) -> Context:
    """The ``Context`` the check of ``tree`` (``source``, at ``path``) walks with."""
    kept = adopt_scopes(tree)
    if isinstance(kept, Context):
        made = kept.memo.get(_MADE)
        if (
            isinstance(made, tuple)
            and kept.source == source
            and os.path.abspath(path) == kept.path
            and still(made[0], made[1])  # (and noted again, in the check's own record)
        ):
            kept.memo.clear()  # (what the view worked out with it: not the check's)
            kept.path, kept.target_torch = path, target_torch
            return kept
        kept = kept.built_scopes  # its scope map, as a view that kept only that
    if kept is not None:
        offer_scopes(tree, kept)
    return Context(source, path, tree, target_torch=target_torch)
