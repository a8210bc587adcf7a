"""TP403's imports: the line that imports ``GradScaler``/``autocast`` from ``torch.cuda.amp``.

``from torch.cuda.amp import GradScaler`` then ``GradScaler("cuda")``: the call is
reported (and fixed to ``torch.amp.GradScaler(device.type)``), yet the import line is
what maintainers change when they port (nnUNet's PR #2684 changed it alone). It is
reported once, on its own line, without a fix of its own: the calls' fixes refer to
``torch.amp`` by the torch name, after which nothing reads the import and TP403's
unused-import fix removes it (so a fix here would edit the line twice). An import
that is already unused is reported once, as before, by that finding. Left alone: the
fallback of a torch without ``torch.amp`` (an ``except`` arm, the ``else`` of a version
test).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Finding, Rule
from torchport.check.rules._unused_imports import unused_imports

__all__ = ["old_amp_imports", "old_torch_arm"]

_OLD = "torch.cuda.amp"
_NAMES = frozenset({"GradScaler", "autocast"})
_IMPORTED = (
    "import `GradScaler` / `autocast` from `torch.amp` and pass them the device type: "
    "`torch.cuda.amp` is deprecated and CUDA-only"
)


def old_amp_imports(
    rule: Rule,
    node: ast.Import | ast.ImportFrom,
    ctx: Context,
    modules: frozenset[str],
    unused: str,
) -> Iterator[Finding]:
    """The unused-import finding of ``node``, else one finding for a used old-amp import."""
    found = list(unused_imports(rule, node, ctx, modules, unused))
    if found:
        yield from found
        return
    if isinstance(node, ast.ImportFrom):
        old = not node.level and node.module == _OLD and any(a.name in _NAMES for a in node.names)
    else:
        old = any(a.name == _OLD and a.asname for a in node.names)  # `import torch.cuda.amp as amp`
    if old and not old_torch_arm(ctx, node) and not _in_except_arm(ctx):
        yield ctx.finding(rule, node, message=_IMPORTED)


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
