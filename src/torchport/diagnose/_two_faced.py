"""One object of the CPU run that stands for a host tensor and a device tensor of the
accelerator run at once, told apart by the name a line reads it by.

On the CPU ``y = x.cpu()`` of a tensor ``x`` the program keeps, and ``d = h.to(dev)`` of a
host tensor ``h`` it keeps, hand back their receiver: ``x`` and ``y`` (``h`` and ``d``) are
one object here and two tensors on an accelerator, ``y`` (``h``) on the host and ``x``
(``d``) on the device. The audit records the names the move's statement reads and binds
(:func:`._move_alias.move_names`) and, at each op on the object, asks which of them the
running line reads:

* the program's innermost frame at or above the op is read first: the names on its
  running line (identifiers not after a dot, from the line's text) that are bound in the
  frame to this very object; in the frame whose code made the move, those that are the
  host's names alone make it the host's tensor for the op, the device's alone the device's;
* any other frame (a helper's parameter, a frame of other code, a line that reads both or
  neither) hands the question to its caller's line, up the stack;
* a move to the device made in a frame that has ended (``batch = [t.to(dev) for t in
  batch]``, ``return h.to(dev), c.to(dev)``), or in a comprehension that has ended where
  Python runs it inline in its caller's frame (PEP 709, Python 3.12 and later; the
  comprehension's span stands for its frame): its names ended with it, and what it built
  or returned holds the device's tensors, so the object is the device's (a host tensor
  the program still reads elsewhere as the host's, ``self.h = h``, is not told apart: its
  reads are predicted as waits, as before); a move to the host there is left untold
  (noted);
* nothing decides it: :meth:`Faces.side` gives None, and the audit predicts as it did
  before it told the two apart (reads wait, a move copies) and notes the line as not
  predicted (:data:`UNTOLD`).

A name rebound later stops holding the object, and so stops counting for it. A later move
of the object binding a new name (``d2 = y.to(dev)``) adds that name to the side the move
lands on (:meth:`Faces.bind`).
"""

from __future__ import annotations

import linecache
import re
import weakref
from collections.abc import Callable
from types import CodeType, FrameType

import torch

from torchport._origin import Origin
from torchport.diagnose._callsite import instruction_span, program_frame
from torchport.diagnose._move_alias import inlined_scope

__all__ = ["DEVICE_SIDE", "HOST_SIDE", "UNTOLD", "Faces"]

HOST_SIDE, DEVICE_SIDE = "host", "device"
UNTOLD = "a tensor the program holds as both the host's and the device's (y = x.cpu() or d = \
h.to(device) of a tensor still used) is read by no name that tells which: counted as the \
device's (--device sim measures it)"

_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


class _Face:
    __slots__ = ("code", "device", "host", "placed", "ref", "result", "scope")

    def __init__(
        self,
        ref: weakref.ref[torch.Tensor],
        code: CodeType,
        scope: tuple[int, int, int, int] | None,
        result: str,
    ) -> None:
        self.ref = ref
        self.code = code
        # the span of the comprehension whose names these are, where it runs inline in a
        # frame of ``code`` (Python 3.12 and later); None: the whole frame's
        self.scope = scope
        self.host: set[str] = set()
        self.device: set[str] = set()
        self.result = result  # the side the move that made it two-faced lands on
        # whether its device side is known to be the device's (made or moved there in the
        # block); one of unknown place is read as the device's but moved as the host's
        self.placed = False


class Faces:
    """The two-faced objects of one audit (see the module docstring)."""

    def __init__(
        self, origin_of: Callable[[CodeType], Origin], note: Callable[[str], None]
    ) -> None:
        self.faces: dict[int, _Face] = {}
        self._origin = origin_of
        self._note = note  # the audit's list of what it could not predict
        # the last answer, per (object, frame, instruction): one line's ops ask many times
        self._last: tuple[int, int, int, str | None] | None = None

    def __contains__(self, tensor: object) -> bool:
        face = self.faces.get(id(tensor))
        return face is not None and face.ref() is tensor

    def add(
        self,
        tensor: torch.Tensor,
        frame: FrameType,
        host: str,
        device: str,
        result: str = "",
        *,
        placed: bool = False,
    ) -> None:
        """``tensor`` is the host's when read by the name ``host`` and the device's when
        read by ``device`` in ``frame``'s code ("" names nothing); ``result``: the side
        the move lands on (:data:`HOST_SIDE` or :data:`DEVICE_SIDE`), "" for a later name."""
        face = self.faces.get(id(tensor))
        scope = inlined_scope(frame)
        if (
            face is None
            or face.ref() is not tensor
            or face.code is not frame.f_code
            or face.scope != scope
        ):
            key = id(tensor)
            faces = self.faces

            def gone(ref: weakref.ref[torch.Tensor], key: int = key) -> None:
                found = faces.get(key)
                if found is not None and found.ref is ref:
                    del faces[key]

            try:
                face = _Face(weakref.ref(tensor, gone), frame.f_code, scope, result)
            except TypeError:  # a tensor type without weak references is not followed
                return
            self.faces[key] = face
        face.placed = face.placed or placed
        if host:
            face.device.discard(host)
            face.host.add(host)
        if device:
            face.host.discard(device)
            face.device.add(device)
        self._last = None

    def placed(self, tensor: object) -> bool:
        """Whether ``tensor``'s device side is known to be on the device."""
        face = self.faces.get(id(tensor))
        return face is not None and face.ref() is tensor and face.placed

    def bind(self, tensor: torch.Tensor, frame: FrameType, name: str, side: str) -> None:
        """A move of the two-faced ``tensor`` bound ``name`` to its result, which is
        ``tensor`` itself on this host and lands on ``side`` in the accelerator run."""
        if name:
            if side == HOST_SIDE:
                self.add(tensor, frame, name, "")
            else:
                self.add(tensor, frame, "", name)

    def side(self, tensor: object, frame: FrameType | None) -> str | None:
        """Which tensor of the accelerator run ``tensor`` is for the op running now, read
        from the program's frames at or above ``frame``; None when no line tells."""
        face = self.faces.get(id(tensor))
        if face is None or face.ref() is not tensor:
            return None
        first = program_frame(frame, self._origin)
        if first is None:
            return None
        last = self._last
        if (
            last is not None
            and last[0] == id(tensor)
            and last[1] == id(first)
            and last[2] == first.f_lasti
        ):
            return last[3]
        found = self._told(face, tensor, first)
        if found is None:
            self._note(f"{first.f_code.co_filename}:{first.f_lineno}: {UNTOLD}")
        if first.f_code is face.code:  # (a helper's frame is told by its caller's line)
            self._last = (id(tensor), id(first), first.f_lasti, found)
        return found

    def _told(self, face: _Face, tensor: object, frame: FrameType | None) -> str | None:
        seen = False
        while frame is not None:
            if frame.f_code is face.code and _within(frame, face.scope):
                seen = True
                local = frame.f_locals
                for name in _names_at(frame):  # the leftmost name holding it decides
                    if local.get(name) is tensor:
                        if name in face.host:
                            return HOST_SIDE
                        if name in face.device:
                            return DEVICE_SIDE
                        break
            frame = program_frame(frame.f_back, self._origin)
        if not seen and face.result == DEVICE_SIDE:
            # batch = [t.to(dev) for t in batch], `return h.to(dev)`: the frame whose names
            # told the two apart has ended, and what it built or returned holds the
            # device's tensors (as predicted before these objects were told apart; a host
            # tensor it also stored elsewhere, `self.h = h`, is not told)
            return DEVICE_SIDE
        return None


def _within(frame: FrameType, scope: tuple[int, int, int, int] | None) -> bool:
    """Whether the instruction ``frame`` runs lies in ``scope`` (an inlined comprehension's
    span, :func:`._move_alias.inlined_scope`); any instruction does for None."""
    if scope is None:
        return True
    span = instruction_span(frame)
    if span is None:
        return False  # no position: not known to be the comprehension's
    first, last, start, end = span
    return scope[:2] <= (first, start) and (last, end) <= scope[2:]


# (file, first line, last line, first column, end column) -> the identifiers its text
# reads, left to right (not attribute names)
_SPANS: dict[tuple[str, int, int, int, int], tuple[str, ...]] = {}


def _names_at(frame: FrameType) -> tuple[str, ...]:
    """The names the instruction ``frame`` runs reads, left to right: the text of its span
    (``y.sum()`` of ``_ = float(y.sum())``; ``d[h.long() % 16]`` of the index), or of its
    whole line where the span is not known."""
    code = frame.f_code
    line = frame.f_lineno or 0
    first, last, start, end = instruction_span(frame) or (line, line, 0, 1 << 20)
    key = (code.co_filename, first, last, start, end)
    names = _SPANS.get(key)
    if names is None:
        lines = [
            linecache.getline(code.co_filename, number, frame.f_globals).encode()
            for number in range(first, last + 1)
        ]
        if lines:  # columns count UTF-8 bytes
            lines[-1] = lines[-1][:end]
            lines[0] = lines[0][start:]
        text = b"\n".join(lines).decode(errors="replace")
        names = tuple(_NAME.findall(text.split("#", 1)[0]))
        if len(_SPANS) > 4096:
            _SPANS.clear()
        _SPANS[key] = names
    return names
