"""An audit's counts by source line, and the stack walk that finds each event's line.

The line an event is charged to is the user's: the first frame up the stack that is
neither torch's, torchport's nor installed code's (the standard library, packages in
``site-packages``); the innermost installed line it went through is kept beside it
(``model.to(device)`` through transformers' ``PreTrainedModel.to``). The walk reads
``sys._getframe`` with a per-code-object cache of whose each frame is
(``traceback.extract_stack`` would read every frame's source). Only small summaries are
kept: op, device, bytes, line; no tensor outlives its op.
"""

from __future__ import annotations

import threading
from types import CodeType, FrameType

from torchport._origin import Origin, code_origin
from torchport.diagnose._events import Counted, Row, Where

__all__ = ["Tally"]

_NO_CALLER = Where("<backward/C++>", 0, "")

# Origin's members as module names: a member read off the class costs a lookup per frame
_USER, _INSTALLED, _TORCHPORT = Origin.USER, Origin.INSTALLED, Origin.TORCHPORT


class Tally:
    """Counts of one audit block, by :class:`Row`, and what it could not describe."""

    def __init__(self) -> None:
        self.counts: dict[Row, list[int]] = {}
        self.lock = threading.Lock()
        self.origins: dict[CodeType, Origin] = {}
        self.dropped = 0  # events the audit failed to describe (the program ran on)
        self.unpredicted: dict[str, int] = {}  # what it could not predict, and how often

    def origin(self, code: CodeType) -> Origin:
        """Whose code this is (:class:`~torchport._origin.Origin`), asked once per code object."""
        origin = self.origins.get(code)
        if origin is None:
            origin = self.origins[code] = code_origin(code)
        return origin

    def host_side_below(self, frame: FrameType | None) -> bool:
        """Whether torch's host-side code made the call that reached ``frame`` through
        other torch code only (a step counter read through torch's compile wrappers:
        ``_get_value`` under ``torch._dynamo``'s disable decorator on torch 2.6)."""
        while frame is not None:
            seen = self.origin(frame.f_code)
            if seen is Origin.HOST_SIDE:
                return True
            if seen is not Origin.TORCH and seen is not _TORCHPORT:
                return False
            frame = frame.f_back
        return False

    def where(self, frame: FrameType | None) -> tuple[Where, Origin | None]:
        """Where the event is charged, and the origin of the code that made the call
        (the first frame that is not torchport's).

        Where: the first user frame at or above ``frame``, with the innermost installed
        frame passed on the way. With no user frame above, the innermost installed frame
        itself, else ``<backward/C++>``.
        """
        origins = self.origins
        caller: Origin | None = None
        via: FrameType | None = None
        while frame is not None:
            code = frame.f_code
            origin = origins.get(code)
            if origin is None:
                origin = origins[code] = code_origin(code)
            if caller is None and origin is not _TORCHPORT:
                caller = origin
            if origin is _USER:
                if via is None:
                    return Where(code.co_filename, frame.f_lineno or 0, code.co_name), caller
                return Where(
                    code.co_filename,
                    frame.f_lineno or 0,
                    code.co_name,
                    via.f_code.co_filename,
                    via.f_lineno or 0,
                ), caller
            if origin is _INSTALLED and via is None:
                via = frame
            frame = frame.f_back
        if via is not None:
            code = via.f_code
            return Where(code.co_filename, via.f_lineno or 0, code.co_name), caller
        return _NO_CALLER, caller

    def count(self, row: Row, nbytes: int) -> None:
        """One more ``row``, of ``nbytes``."""
        with self.lock:
            slot = self.counts.get(row)
            if slot is None:
                self.counts[row] = [1, nbytes]
            else:
                slot[0] += 1
                slot[1] += nbytes

    def note_unpredicted(self, note: str) -> None:
        """Something seen that the audit cannot predict for an accelerator run."""
        self.unpredicted[note] = self.unpredicted.get(note, 0) + 1

    def rows(self) -> list[Counted]:
        """What was counted, one record per row, in no particular order."""
        with self.lock:
            return [Counted(row, count, nbytes) for row, (count, nbytes) in self.counts.items()]
