"""Host copies that feed a drawing or an image file in the same iteration (TP202).

``img = imgs[i].cpu().numpy()`` then ``cv2.rectangle(img, ...)`` or
``visualize_assign(img, boxes, save_name)``: OpenCV, PIL, matplotlib and imageio
draw on host arrays, so the copy is the drawing's input, needed in this iteration;
collecting on the device and copying once after the loop would only move the wait.
A drawing call is one of those libraries' (``cv2.*``, ``PIL.*``, ``matplotlib.*``,
``imageio.*``, ``skimage.*``), a method that writes or shows an image (``.imwrite``,
``.imsave``, ``.imshow``, ``.savefig``), or a function named for drawing
(``draw_boxes``, ``visualize_assign``, ``plot_mask``, ``annotate``; not ``render``,
which an environment has too).
"""

from __future__ import annotations

import ast
import re

from torchport.check._context import Context

__all__ = ["drawn_on_the_host"]

_LIBRARIES = frozenset({"cv2", "PIL", "matplotlib", "imageio", "skimage"})
_METHODS = frozenset({"imwrite", "imsave", "imshow", "savefig", "fromarray", "show"})
_NAMED = re.compile(r"draw|visuali[sz]|plot|annotat|imwrite|imsave|imshow", re.I)
# What may sit between the read and its use: `.numpy()`, `.copy()`, `[0]`, `.astype(...)`.
_THROUGH = (ast.Attribute, ast.Subscript)


def drawn_on_the_host(node: ast.Call, ctx: Context) -> bool:
    """Whether the host copy at ``node`` goes into a drawing call in the same iteration."""
    child: ast.AST = node
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, ast.Call) and outer.func is not child:
            # an argument: of a drawing call (the copy is its input), or of anything else
            return _draws(outer, ctx) and any(a is child for a in _arguments(outer))
        if isinstance(outer, ast.Assign):
            if outer.value is not child or len(outer.targets) != 1:
                return False
            target = outer.targets[0]
            return isinstance(target, ast.Name) and _later_drawn(target.id, outer, ctx)
        if not isinstance(outer, (*_THROUGH, ast.Call)):
            return False
        child = outer
    return False


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(k.value for k in call.keywords)]


def _later_drawn(name: str, stmt: ast.Assign, ctx: Context) -> bool:
    """Whether a later statement of the loop hands ``name`` to a drawing call."""
    loop = ctx.loop_of(stmt)
    if loop is None:
        return False
    for sub in ast.walk(loop):
        if (
            isinstance(sub, ast.Call)
            and sub.lineno > stmt.lineno
            and any(isinstance(a, ast.Name) and a.id == name for a in _arguments(sub))
            and _draws(sub, ctx)
        ):
            return True
    return False


def _draws(call: ast.Call, ctx: Context) -> bool:
    func = call.func
    qualname = ctx.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
    if qualname is not None and qualname.partition(".")[0] in _LIBRARIES:
        return True
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in _METHODS or bool(_NAMED.search(name))
