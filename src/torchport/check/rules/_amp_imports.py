"""The line that imports ``GradScaler``/``autocast`` from ``torch.cuda.amp`` (TP408, TP403).

``from torch.cuda.amp import GradScaler`` then ``GradScaler("cuda")``: TP403 reports the
call (and fixes it to ``torch.amp.GradScaler(device.type)``), yet the import line is what
maintainers change when they port (nnUNet's PR #2684 changed it alone). TP408 reports that
line once when its names are used, without a fix of its own: the calls' fixes refer to
``torch.amp`` by the torch name, after which nothing reads the import and TP403's
unused-import fix removes it (so a fix here would edit the line twice). An unused import
is TP403's finding alone. Left alone: the fallback of a torch without ``torch.amp`` (an
``except`` arm, the ``else`` of a version test). :func:`old_torch_arm` is TP403's too.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.rules._unused_imports import read

__all__ = ["IMPORTED", "old_torch_arm", "used_old_amp_import"]

_OLD = "torch.cuda.amp"
_NAMES = frozenset({"GradScaler", "autocast"})
IMPORTED = (
    "use `torch.amp`'s `GradScaler` / `autocast` (with the device type) in this import: "
    "`torch.cuda.amp` is deprecated and CUDA-only"
)


def used_old_amp_import(node: ast.Import | ast.ImportFrom, ctx: Context) -> bool:
    """Whether ``node`` imports ``GradScaler``/``autocast`` from ``torch.cuda.amp`` (or the
    module under an alias), something reads them, and it is no old torch's fallback."""
    if isinstance(node, ast.ImportFrom):
        names = [a for a in node.names if a.name in _NAMES]
        if node.level or node.module != _OLD or not names:
            return False
    else:
        names = [a for a in node.names if a.name == _OLD and a.asname]  # `import ... as amp`
        if not names:
            return False
    bound = node.names if isinstance(node, ast.ImportFrom) else names
    if not all(read(a.asname or a.name, ctx) for a in bound):
        return False  # a name unused: TP403's unused-import finding is this line's
    return not old_torch_arm(ctx, node) and not _in_except_arm(ctx)


def _in_except_arm(ctx: Context) -> bool:
    """Inside an ``except`` handler: ``try: from torch.amp import ... except ImportError: ...``."""
    return any(isinstance(outer, ast.ExceptHandler) for outer in ctx.ancestors)


def old_torch_arm(ctx: Context, node: ast.AST | None = None) -> bool:
    """The ``else`` of a torch version test: the fallback for torches without ``torch.amp``.

    ``node``: the node asked about, when it may be a statement of that ``else`` itself.
    """
    child: ast.AST | None = node
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.If, ast.IfExp)) and child is not outer.test:
            orelse = outer.orelse if isinstance(outer.orelse, list) else [outer.orelse]
            if any(s is child for s in orelse) and "version" in ctx.segment(outer.test):
                return True
        child = outer
    return False
