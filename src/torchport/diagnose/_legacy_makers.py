"""Which Python call made a tensor that no function mode saw being made: the legacy constructors.

``torch.LongTensor(n)``, ``torch.FloatTensor([1.0, 2.0])``, ``torch.Tensor(3)`` and
``x.new(3)`` reach no ``TorchFunctionMode`` as calls of their own (the typed classes are
C types; ``Tensor.new`` reaches one, but as an unwatched method): the audit's dispatch
mode sees only the aten op inside, ``aten::empty.memory_format`` for sizes or
``aten::lift_fresh`` for data, with no tensor argument that says where the accelerator
run makes the result. The user's call says it:

* a typed class of the host (``torch.LongTensor`` ... ``torch.BoolTensor``, and
  ``torch.Tensor`` while the default device is the CPU's) makes its tensor on the host in
  every run, so ``ids = torch.LongTensor(n)`` then ``ids[i] = number`` per word copies
  nothing there;
* ``x.new(...)`` makes its tensor on ``x``'s device, wherever ``x`` is held.

The call is read from the first frame of the user's or installed code at or above the
op (its current instruction's source span, :func:`._callsite.call_source_at`), and its
callee is looked up by name, never evaluated: a module's attribute, a local or global
name, a module's (``nn.Module``'s) parameters, buffers and attributes, an instance's own
``__dict__``. Anything else (a subscript, a call's result, ``torch.cuda.LongTensor``,
which the CUDA stand-ins make on the run's device) is :data:`UNKNOWN`, and the audit
leaves the tensor's place unknown, as before.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Callable, Mapping, Sequence
from types import CodeType, FrameType
from typing import Any

import torch

from torchport._device_types import CPU
from torchport._origin import Origin
from torchport.diagnose._callsite import call_source_at, program_frame
from torchport.diagnose._host_held import HostHeld

__all__ = ["FRESH_OPS", "HOST", "RECEIVER", "UNKNOWN", "made_by"]

HOST, RECEIVER, UNKNOWN = 1, 2, -1
"""What made the tensor: a typed class of the host, ``x.new(...)`` of the tensor returned
beside it, or a call this module cannot tell."""

FRESH_OPS = frozenset(
    {
        id(torch.ops.aten.empty.memory_format),  # torch.LongTensor(n), x.new(n)
        id(torch.ops.aten.lift_fresh.default),  # torch.LongTensor([1, 2]), x.new([1, 2])
    }
)
"""The aten ops (by ``id``) in which a legacy constructor hands over its new tensor."""

_HOST_TYPES: frozenset[object] = frozenset({
    torch.DoubleTensor, torch.FloatTensor, torch.HalfTensor, torch.BFloat16Tensor,
    torch.LongTensor, torch.IntTensor, torch.ShortTensor, torch.CharTensor, torch.ByteTensor,
    torch.BoolTensor,
})  # fmt: skip
_NEW = "new"
# (code, instruction) -> the callee expression of the call made there, or None
_SEEN: dict[tuple[CodeType, int], ast.expr | None] = {}
_MISSING = object()


def made_by(
    frame: FrameType | None, origin_of: Callable[[CodeType], Origin]
) -> tuple[int, torch.Tensor | None]:
    """What made the tensor of a fresh aten op (:data:`FRESH_OPS`) that no watched call
    owns: ``(HOST, None)`` for a typed class of the host, ``(RECEIVER, x)`` for
    ``x.new(...)``, else ``(UNKNOWN, None)``.

    Args:
        frame: The frame the op was seen in, or one below the program's call.
        origin_of: Whose code a code object is (:func:`torchport._origin.code_origin`, cached).
    """
    frame = program_frame(frame, origin_of)
    if frame is None:
        return UNKNOWN, None
    key = (frame.f_code, frame.f_lasti)
    if key in _SEEN:
        callee = _SEEN[key]
    else:
        try:
            found = call_source_at(frame)
        except Exception:  # odd source or positions: unknown
            found = None
        callee = found[0].func if found is not None else None
        if len(_SEEN) > 4096:  # long-running programs: a bounded cache
            _SEEN.clear()
        _SEEN[key] = callee
    if callee is None:
        return UNKNOWN, None
    if isinstance(callee, ast.Attribute) and callee.attr == _NEW:
        receiver = _looked_up(callee.value, frame)
        if isinstance(receiver, torch.Tensor):
            return RECEIVER, receiver
        return UNKNOWN, None
    made = _looked_up(callee, frame)
    if made is torch.Tensor:
        # torch.Tensor(3) follows the default tensor type (torch.set_default_tensor_type)
        on_host = torch.get_default_device().type == CPU
        return (HOST, None) if on_host else (UNKNOWN, None)
    try:
        return (HOST, None) if made in _HOST_TYPES else (UNKNOWN, None)
    except TypeError:  # an unhashable callee is no typed class
        return UNKNOWN, None


def _looked_up(node: ast.expr, frame: FrameType) -> object:
    """The object ``node`` names in ``frame``, found without running the program's code
    (no call, no property of an arbitrary object); :data:`_MISSING` when it cannot be."""
    if isinstance(node, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, vars(builtins)):
            if node.id in scope:
                return scope[node.id]
        return _MISSING
    if not isinstance(node, ast.Attribute):
        return _MISSING
    owner = _looked_up(node.value, frame)
    name = node.attr
    if isinstance(owner, types.ModuleType):
        return getattr(owner, name, _MISSING)
    if isinstance(owner, torch.nn.Module):
        for table in ("_parameters", "_buffers", "_modules"):
            held = vars(owner).get(table)
            if held is not None and name in held:
                return held[name]
    try:
        own = vars(owner)
    except TypeError:  # no instance dictionary (a tensor, a number)
        return _MISSING
    return own.get(name, _MISSING)


_LIFT_FRESH = torch.ops.aten.lift_fresh.default


def place_fresh(
    func: Any,
    out: Any,
    frame: FrameType | None,
    origin_of: Callable[[CodeType], Origin],
    held: HostHeld,
    device_only: HostHeld,
) -> bool:
    """Follow ``out``, made by a fresh aten op (:data:`FRESH_OPS`) no watched call owns, as
    the accelerator run places it: a typed class of the host (``torch.LongTensor(n)``)
    makes it on the host there too, ``x.new(...)`` on ``x``'s side. True when its data
    was copied from the host to the device on the way (``x.new([1, 2])``, as
    ``x.new_tensor``): the caller counts that copy."""
    made, receiver = made_by(frame, origin_of)
    if made == HOST:
        held.add(out)
        return False
    if receiver is None or not isinstance(out, torch.Tensor):
        return False
    if receiver in held:
        held.add(out)
        return False
    if receiver in device_only:
        device_only.add(out)
    return func is _LIFT_FRESH and out.numel() > 0


def new_tensor_placed(
    args: Sequence[Any], kwargs: Mapping[str, Any], out: Any, held: HostHeld, device_only: HostHeld
) -> bool:
    """``x.new_tensor(data)`` naming no device makes its tensor on ``x``'s side: on the
    host for an ``x`` held there (no copy: True); on the device for one held there
    (followed; the copy of ``data`` is counted by the caller: False)."""
    if kwargs.get("device") is not None or not args:
        return False
    data = args[1] if len(args) > 1 else kwargs.get("data")
    if isinstance(data, torch.Tensor):
        return False  # copied from wherever data is: the move's own rules
    if args[0] in held:
        held.add(out)
        return True
    if args[0] in device_only:
        device_only.add(out)
    return False
