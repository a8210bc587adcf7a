"""Where a file names CUDA other than through a device value: strings, ``.cuda()``, ``torch.cuda``.

A fix that changes what a device choice picks leaves these behind: the proof
in :mod:`torchport.check.semantic._following` fails on any outside the choice.
Found once per file, in one walk, and kept for that file's ``Context``.
"""

from __future__ import annotations

import ast
import weakref

from torchport.check._nodes import nodes_among

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context

__all__ = ["cuda_mentions", "snippet"]

# torch.cuda names that place data or decide on CUDA by themselves.
_CUDA_NAMES = frozenset(
    {"is_available", "device_count", "set_device", "device", "current_device", "FloatTensor",
     "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor"}
)  # fmt: skip

_FOUND: weakref.WeakKeyDictionary[Context, list[tuple[ast.AST, str]]] = weakref.WeakKeyDictionary()


# the classes the walk below looks at (the others name nothing)
_MENTIONING = frozenset({ast.Constant, ast.Call, ast.Attribute, ast.Name})


def cuda_mentions(ctx: Context) -> list[tuple[ast.AST, str]]:
    """Every node of the file that names CUDA, with why, in walk order (found once per file).

    A ``"cuda"``/``"cuda:N"`` string not compared with, a ``.cuda()`` call whose
    callee resolves to no import (a method of a value), a ``torch.cuda`` name that places data
    or decides on CUDA. Asked for every device choice of a file: a walk of the
    whole module for each made the rule quadratic in the choices.
    """
    found = _FOUND.get(ctx)
    if found is not None:
        return found
    found = []
    for node in nodes_among(ctx.tree, _MENTIONING):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if (node.value == "cuda" or node.value.startswith("cuda:")) and not isinstance(
                ctx.scopes.parent(node), ast.Compare
            ):
                found.append((node, f'`"{node.value}"` names CUDA apart from the device'))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "cuda" and ctx.qualname(node.func) is None:
                found.append((node, f"`{snippet(node, ctx)}` moves to CUDA apart from the device"))
        elif isinstance(node, (ast.Attribute, ast.Name)):
            name = ctx.qualname(node) or ""
            if name.startswith("torch.cuda.") and name.rpartition(".")[2] in _CUDA_NAMES:
                found.append(
                    (node, f"`{snippet(node, ctx)}` decides on CUDA apart from the device")
                )
    _FOUND[ctx] = found
    return found


def snippet(node: ast.AST, ctx: Context) -> str:
    """``node``'s source (or its nearest positioned ancestor's) on one line, cut at 60.

    A node over several lines shows its first line, and the lines after it while each
    line before ends in an opening bracket (``{`` alone names nothing): each joined
    stripped, with no space after the bracket."""
    while not hasattr(node, "lineno"):  # `arguments`, `keyword` without a position
        up = ctx.scopes.parent(node)
        if up is None:
            return ""
        node = up
    lines = ctx.segment(node).split("\n")
    text = lines[0].rstrip()
    for line in lines[1:]:
        if len(text) > 60 or not text.endswith(("(", "[", "{")):
            break
        text += line.strip()
    return text if len(text) <= 60 else text[:57] + "..."
