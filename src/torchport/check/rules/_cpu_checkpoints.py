"""Checkpoints a file shows were saved from the CPU, for TP301 (a load needs no ``map_location``).

The file saves the very file name the load reads from tensors known on the CPU
(``torch.save(torch.zeros(3), "t.pt")`` then ``torch.load("t.pt")``). Not enough: a
class in a file naming no device that saves and restores its own ``state_dict()`` (a
shipped checkpoint may have been trained elsewhere, on a GPU).
"""

from __future__ import annotations

import ast
import weakref

from torchport.check._context import Context
from torchport.check._match import keyword
from torchport.check.semantic._residence import known_on_cpu

__all__ = ["saved_from_cpu"]


def saved_from_cpu(node: ast.Call, ctx: Context) -> bool:
    """Whether the file shows that what ``node`` (a ``torch.load``) reads was saved from the CPU."""
    return _same_file_name(node, ctx)


def _path_names(expr: ast.expr) -> set[str]:
    return {
        sub.value
        for sub in ast.walk(expr)
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and "." in sub.value
    }


def _same_file_name(node: ast.Call, ctx: Context) -> bool:
    """Whether the file saves a file name this load reads from tensors known on the CPU."""
    source = node.args[0] if node.args else keyword(node, "f")
    if source is None:
        return False
    names = _path_names(source.value if isinstance(source, ast.keyword) else source)
    if not names:
        return False
    saves = _SAVES.get(ctx)
    if saves is None:  # the file's `torch.save` calls by the file names they write, once
        saves = _SAVES[ctx] = {}
        for sub in ast.walk(ctx.scopes.tree):
            if (
                isinstance(sub, ast.Call)
                and len(sub.args) >= 2
                and isinstance(sub.func, ast.Attribute)
                and sub.func.attr == "save"
                and ctx.qualname(sub.func) == "torch.save"
            ):
                for name in _path_names(sub.args[1]):
                    saves.setdefault(name, []).append(sub)
    return any(known_on_cpu(sub.args[0], ctx) for name in names for sub in saves.get(name, ()))


_SAVES: weakref.WeakKeyDictionary[Context, dict[str, list[ast.Call]]] = weakref.WeakKeyDictionary()
