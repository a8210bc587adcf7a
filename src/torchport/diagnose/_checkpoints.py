"""What ``torch.save``, ``torch.load`` and state-dict loading copy in an accelerator run.

A mixin of :class:`~torchport.diagnose._recorder.Recorder`: saving tensors the
accelerator run holds copies each to the host; ``torch.load(..., map_location=device)``
copies each loaded tensor to the device (then loading them into a model copies
nothing more); a state dict loaded into a model or optimizer on the device copies
each value there. Where the run holds what is decided in :mod:`._predicted_placement`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from types import CodeType, FrameType
from typing import Any

import torch

from torchport._origin import Origin
from torchport.diagnose import _host_work, _ops
from torchport.diagnose._callsite import DEVICE, UNKNOWN, target_of_call
from torchport.diagnose._events import (
    DATA_LOADING,
    HOST_TYPES,
    TO_DEVICE,
    TO_HOST,
    TRANSFER,
    Key,
    Row,
    Where,
)
from torchport.diagnose._predicted_placement import STATE_LOADERS, Placement, tensors_in

__all__ = ["CheckpointCounting"]

_SAVE = torch.save  # the original (the audit's wrapper stands in for it under its name)
_LOADED = "copy (loading a state dict onto the device)"


class CheckpointCounting:
    """Counts the copies of saving and loading; the recorder provides what it counts with."""

    _placement: Placement
    unpredicted: dict[str, int]
    dropped: int

    def _where(self, frame: FrameType | None) -> tuple[Where, Origin | None]:
        raise NotImplementedError

    def _count(self, key: Row, nbytes: int) -> None:
        raise NotImplementedError

    def _origin(self, code: CodeType) -> Origin:
        raise NotImplementedError

    def observe_checkpoint(
        self, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any], out: Any
    ) -> None:
        """``torch.save`` or ``torch.load`` ran: count the copies it makes in an accelerator
        run (see :mod:`._predicted_placement`); never raises."""
        try:
            placement = self._placement
            if func is _SAVE:
                obj = args[0] if args else kwargs.get("obj")
                state = _host_work.device_state(placement.on_device)
                held = [
                    t
                    for t in tensors_in(obj)
                    if placement.on_device(t) or placement.sent_before(t) or id(t) in state
                ]
                direction, label = TO_HOST, "copy (torch.save of tensors on the device)"
            else:
                named = target_of_call(sys._getframe(1), self._origin)
                if named == UNKNOWN and tensors_in(out):
                    # no map_location (or a table): the tensors go where they were saved
                    # from, which this run cannot know; say so rather than guess
                    where, _ = self._where(sys._getframe(1))
                    note = (
                        f"{where[0]}:{where[1]}: torch.load without a map_location naming "
                        "one device (tensors land where they were saved from)"
                    )
                    self.unpredicted[note] = self.unpredicted.get(note, 0) + 1
                if named != DEVICE:
                    return  # map_location="cpu": loaded on the host on every machine
                held = [t for t in tensors_in(out) if t.device.type in HOST_TYPES]
                for tensor in held:  # there now: loading them into a model copies nothing
                    placement.sent_to_device(tensor)
                direction, label = TO_DEVICE, "copy (torch.load(..., map_location=device))"
            held = [t for t in held if t.numel()]
            if not held:
                return
            where, _ = self._where(sys._getframe(1))
            phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
            key: Key = (TRANSFER, label, _ops.op_name(func), direction, True, phase)
            for tensor in held:
                self._count(key + where, tensor.numel() * tensor.element_size())
        except Exception:  # the audit must never break the program it watches
            self.dropped += 1

    def _count_loaded(
        self, value: torch.Tensor, frame: FrameType | None, *, checked: bool = False
    ) -> None:
        """A state dict's value loaded onto the device (see :mod:`._predicted_placement`), if
        torch's state-dict loading is what copies it. ``checked``: its destination is known to be
        on the device; else it is the loader's ``param`` (an optimizer's)."""
        # torch's own frames between the op and the loader: dynamo's wrappers around it
        while frame is not None and frame.f_code not in STATE_LOADERS:
            if self._origin(frame.f_code) in (Origin.USER, Origin.INSTALLED):
                return
            frame = frame.f_back
        if frame is None:
            return
        if not checked and not self._placement.loads_onto_device(
            frame.f_locals.get("param"), value
        ):
            return
        nbytes = value.numel() * value.element_size()
        if not nbytes:
            return
        where, _ = self._where(frame)
        phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
        key: Key = (TRANSFER, _LOADED, "load_state_dict", TO_DEVICE, True, phase)
        self._count(key + where, nbytes)
