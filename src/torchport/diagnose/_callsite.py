"""What a call site names as the target of a move: the host, the program's device, or unknown.

On a CPU run every move that predicts a copy goes from ``cpu`` to ``cpu``, so the
values a move receives cannot say which way the accelerator run copies: ``device``
in ``x.to(device)`` is ``"cpu"`` here when the program picks its device with
``"cuda" if torch.cuda.is_available() else "cpu"``, and ``torch.device("cpu")`` is
what ``.to(torch.device("cpu"))`` and ``.to(device)`` both receive. The source of
the call says it: a target written as a literal (``"cpu"``, ``torch.device("cpu")``,
``.cpu()``) names the host on every machine, and one held in a variable or an
attribute (``device``, ``args.device``) is the program's device, the accelerator in
its run there. A tensor's device (``device=row.device``, ``x.to(y)``) is wherever
that tensor is: the host while a DataLoader fetches, the program's device elsewhere.

The call is read from the calling frame's current instruction (its source span,
Python 3.11's ``co_positions``), parsed once per call site and cached.
"""

from __future__ import annotations

import ast
import itertools
import linecache
from collections.abc import Callable, Mapping, Sequence
from types import CodeType, FrameType
from typing import Any

import torch

from torchport._device_types import CPU, MOVE_METHODS
from torchport._origin import Origin
from torchport.diagnose._moves import names_host

__all__ = [
    "DEVICE",
    "HOST",
    "TENSORS",
    "UNKNOWN",
    "call_source_at",
    "move_target",
    "program_moves",
    "source_at",
    "target_named_at",
    "target_of_call",
]

HOST, DEVICE, TENSORS, UNKNOWN = 1, 0, 2, -1
"""What the call names: the host, the program's device, the device of a tensor it names
(``device=row.device``, ``x.to(y)``: on the host in data loading, the program's device
elsewhere), or nothing this module can tell (no source, a target passed through
``*args``/``**kwargs``, a computed expression)."""

_USER, _INSTALLED = Origin.USER, Origin.INSTALLED  # read per frame: module names are quicker
# (code, instruction) -> (what the call names, the name of the function it calls)
_SEEN: dict[tuple[CodeType, int], tuple[int, str]] = {}
# Methods that name where they move to: .cpu() the host, the others an accelerator
_HOST_METHODS = frozenset({CPU})
_DEVICE_METHODS = MOVE_METHODS - _HOST_METHODS
_MOVES = _DEVICE_METHODS | {"to"}


def target_named_at(frame: FrameType) -> int:
    """What the call ``frame`` is making names as its target device.

    Returns:
        :data:`HOST` for a literal host device or ``.cpu()``, :data:`DEVICE` for a
        device held in a name or attribute (the program's device) or an accelerator
        method, :data:`TENSORS` for the device of a tensor bound to a name,
        :data:`UNKNOWN` otherwise.
    """
    return _call_at(frame)[0]


def _call_at(frame: FrameType) -> tuple[int, str]:
    key = (frame.f_code, frame.f_lasti)
    found = _SEEN.get(key)
    if found is None:
        try:
            found = _read(frame)
        except Exception:  # odd source or positions: the caller falls back on the values
            found = (UNKNOWN, "")
        if len(_SEEN) > 4096:  # long-running programs: a bounded cache
            _SEEN.clear()
        _SEEN[key] = found
    return found


def program_moves(frame: FrameType | None, origin_of: Callable[[CodeType], Origin]) -> bool:
    """Whether the user's line that led here is a move (``batch.to(device)`` of a
    transformers ``BatchEncoding``, whose ``.to`` moves each tensor): the program's own
    move, made through a library."""
    while frame is not None:
        if origin_of(frame.f_code) is _USER:
            return _call_at(frame)[1] in _MOVES
        frame = frame.f_back
    return False


def program_frame(
    frame: FrameType | None, origin_of: Callable[[CodeType], Origin]
) -> FrameType | None:
    """The first frame of the user's or installed code at or above ``frame`` (None: none)."""
    while frame is not None:
        origin = origin_of(frame.f_code)
        if origin is _USER or origin is _INSTALLED:
            return frame
        frame = frame.f_back
    return None


def target_of_call(frame: FrameType | None, origin_of: Callable[[CodeType], Origin]) -> int:
    """What the call that led to a move names, read at the first frame of the user's or
    installed code at or above ``frame``.

    An installed frame that only passes its arguments on (``PreTrainedModel.to(*args,
    **kwargs)``) hands the question to its caller; a user's frame has the last word.

    Args:
        frame: Where to start: the frame that called the move, or one below it.
        origin_of: Whose code a code object is (:func:`torchport._origin.code_origin`, cached).
    """
    while frame is not None:
        origin = origin_of(frame.f_code)
        if origin is _USER or origin is _INSTALLED:
            named = target_named_at(frame)
            if named != UNKNOWN or origin is _USER:
                return named
        frame = frame.f_back
    return UNKNOWN


def move_target(
    frame: FrameType | None,
    origin_of: Callable[[CodeType], Origin],
    func: Any,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> int:
    """Where a move that stays on this host goes in the accelerator run: what its call
    site names (:func:`target_of_call`, from ``frame``), else what its values say
    (:data:`HOST` or :data:`UNKNOWN`: :func:`._moves.names_host`)."""
    named = target_of_call(frame, origin_of)
    if named != UNKNOWN:
        return named
    return HOST if names_host(func, args, kwargs) else UNKNOWN


def instruction_span(frame: FrameType) -> tuple[int, int, int, int] | None:
    """The source span of the instruction ``frame`` runs: (first line, last line, first
    column, end column; columns count UTF-8 bytes), from Python 3.11's ``co_positions``;
    None where any part is missing (``-X no_debug_ranges``, generated code)."""
    code = frame.f_code
    position = next(itertools.islice(code.co_positions(), frame.f_lasti // 2, None), None)
    if position is None or None in position:
        return None
    first, last, start, end = position
    assert first is not None and last is not None and start is not None and end is not None
    return first, last, start, end


def source_at(frame: FrameType) -> tuple[ast.expr, list[str], int] | None:
    """The expression ``frame``'s current instruction evaluates (``torch.gather(x, 1, i)``,
    ``x[i]``), parsed from its source span (Python 3.11's ``co_positions``), with the lines
    of its file and the span's first line number (1-based); ``None`` where the source or
    the positions are missing. Exact where the line is one piece of a longer statement (an
    entry of a dict, an argument on its own line). Raises what parsing odd source raises."""
    code = frame.f_code
    span = instruction_span(frame)
    if span is None:
        return None
    first, last, start, end = span
    lines = linecache.getlines(code.co_filename, frame.f_globals)
    if not lines or last > len(lines):
        return None
    chunk = [line.encode() for line in lines[first - 1 : last]]  # positions count UTF-8 bytes
    if len(chunk) == 1:
        text = chunk[0][start:end]
    else:
        text = b"".join([chunk[0][start:], *chunk[1:-1], chunk[-1][:end]])
    return ast.parse(b"(" + text + b")", mode="eval").body, lines, first


def call_source_at(frame: FrameType) -> tuple[ast.Call, list[str], int] | None:
    """The call ``frame`` is making (see :func:`source_at`); ``None`` where the source or
    the positions are missing or the instruction is no call. Raises what parsing odd
    source raises."""
    found = source_at(frame)
    if found is None or not isinstance(found[0], ast.Call):
        return None
    return found[0], found[1], found[2]


def _read(frame: FrameType) -> tuple[int, str]:
    found = call_source_at(frame)
    if found is None:
        return UNKNOWN, ""
    node = found[0]
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return _named(node, frame), name


def _named(call: ast.Call, frame: FrameType) -> int:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in _HOST_METHODS:
        return HOST
    if name in _DEVICE_METHODS:
        return DEVICE
    keywords = {k.arg: k.value for k in call.keywords}
    if None in keywords:  # **kwargs: the target may be in there
        return UNKNOWN
    target = keywords.get("map_location" if name == "load" else "device")
    if target is None and name == "to" and call.args:
        target = call.args[0]
    if target is None:
        return UNKNOWN
    return _device_expression(target, frame)


def _device_expression(node: ast.expr, frame: FrameType) -> int:
    if isinstance(node, ast.Starred):
        return UNKNOWN
    if isinstance(node, ast.IfExp):
        # "cuda" if torch.cuda.is_available() else "cpu": a choice between the host and an
        # accelerator is the program's device, which the accelerator run takes
        body = _device_expression(node.body, frame)
        orelse = _device_expression(node.orelse, frame)
        if body == orelse:
            return body
        return UNKNOWN if UNKNOWN in (body, orelse) else DEVICE
    literal = _literal_type(node)
    if literal is not None:
        return HOST if literal == CPU else DEVICE
    if isinstance(node, (ast.Constant, ast.Dict, ast.Lambda, ast.List, ast.Tuple)):
        return UNKNOWN  # None, a map_location table or function: no one device
    # x.to(y) and device=x.device: wherever that tensor is
    held = node.value if isinstance(node, ast.Attribute) and node.attr == "device" else node
    if isinstance(held, ast.Name) and isinstance(_bound(frame, held.id), torch.Tensor):
        return TENSORS
    # a name, an attribute, torch.device(name), a call: the program's device
    return DEVICE


def _bound(frame: FrameType, name: str) -> object:
    """What ``name`` is bound to in ``frame`` (read, never evaluated), or ``None``."""
    for scope in (frame.f_locals, frame.f_globals):
        if name in scope:
            return scope[name]
    return None


def _literal_type(node: ast.expr) -> str | None:
    """The device type a literal names: ``"cpu"``, ``"cuda:0"``, ``torch.device("cpu", 0)``."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name != "device":
            return None
        given = (
            node.args[0]
            if node.args
            else next((k.value for k in node.keywords if k.arg == "type"), None)
        )
        if given is None:
            return None
        node = given
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split(":", 1)[0].strip()
    return None
