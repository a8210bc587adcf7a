"""Whether a move to the host that hands back its own receiver leaves a device tensor behind.

On an accelerator ``t.cpu()`` (``t.to("cpu")``, ``t.to(torch.device("cpu"))``) makes a new
host tensor and leaves ``t`` on the device. On the CPU run that predicts it, the call
hands back ``t`` itself: one object stands for two tensors of the accelerator run, and
the audit cannot tell a read of the host copy (no wait) from a read of ``t`` (a wait).

The object is the host copy alone when nothing but the result can reach ``t`` after the
statement, which the call site and the calling frame say:

* the receiver is a temporary: an expression that is no name, attribute or subscript
  (``(pred == gt).cpu()``, ``model(x).to("cpu")``) and whose value no local name of
  the calling frame holds (``x.float().cpu()`` of a float ``x`` is ``x`` itself, still
  the device's);
* the statement rebinds the receiver's only name: ``z = z.cpu()``, where no other local
  name holds the same tensor.

Anything else (``y = x.cpu()``, ``self.buf.cpu()``, ``batch[0].cpu()``, a receiver passed
in as a parameter) stays unknown: the audit then keeps predicting the wait for reads of
the object, as it did for every such move before. What a closure, a container or another
frame holds is not looked for; a temporary that one of them also holds is taken for the
host copy.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from types import CodeType, FrameType

from torchport._origin import Origin
from torchport.diagnose._callsite import call_source_at

__all__ = ["only_the_host_copy"]

_USER, _INSTALLED = Origin.USER, Origin.INSTALLED
# (code, instruction) -> the receiver's name when the statement rebinds it ("" when it is a
# temporary), or None when the receiver is a name, attribute or subscript the statement keeps
_SEEN: dict[tuple[CodeType, int], str | None] = {}
_KEPT = (ast.Name, ast.Attribute, ast.Subscript, ast.Starred)


def only_the_host_copy(
    frame: FrameType | None, origin_of: Callable[[CodeType], Origin], tensor: object
) -> bool:
    """Whether ``tensor``, which a move to the host handed back as itself, is the host copy
    alone in the accelerator run (see the module docstring).

    Args:
        frame: The frame that called the move, or one below it; the first frame of the
            user's or installed code at or above it is read.
        origin_of: Whose code a code object is (:func:`torchport._origin.code_origin`, cached).
        tensor: The move's receiver (and result).
    """
    while frame is not None:
        origin = origin_of(frame.f_code)
        if origin is _USER or origin is _INSTALLED:
            break
        frame = frame.f_back
    if frame is None:
        return False
    key = (frame.f_code, frame.f_lasti)
    if key in _SEEN:
        rebound = _SEEN[key]
    else:
        try:
            rebound = _read(frame)
        except Exception:  # odd source or positions: unknown, the wait is predicted
            rebound = None
        if len(_SEEN) > 4096:  # long-running programs: a bounded cache
            _SEEN.clear()
        _SEEN[key] = rebound
    if rebound is None:
        return False
    holders = [name for name, value in frame.f_locals.items() if value is tensor]
    return holders == ([rebound] if rebound else [])


def _read(frame: FrameType) -> str | None:
    found = call_source_at(frame)
    if found is None:
        return None
    call, lines, first = found
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    if not isinstance(receiver, _KEPT):
        return ""  # a temporary
    if not isinstance(receiver, ast.Name):
        return None
    # z = z.cpu(): the statement on the call's line whose value is this call
    wanted = ast.dump(call)
    for statement in ast.parse(lines[first - 1].strip()).body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == receiver.id
            and ast.dump(statement.value) == wanted
        ):
            return receiver.id
    return None
