"""What ``torch.save``, ``torch.load`` and state-dict loading copy in an accelerator run.

Held by the audit's recorder (:mod:`._recorder`), counting into its tally: saving tensors the
accelerator run holds copies each to the host; ``torch.load(..., map_location=device)``
copies each loaded tensor to the device (then loading them into a model copies
nothing more); a state dict loaded into a model or optimizer on the device copies
each value there. Where the run holds what is decided in :mod:`._predicted_placement`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from types import FrameType
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
    Row,
)
from torchport.diagnose._predicted_placement import STATE_LOADERS, Placement, tensors_in
from torchport.diagnose._tally import Tally

__all__ = ["CheckpointCounter", "in_state_loading"]

_SAVE = torch.save  # the original (the audit's wrapper stands in for it under its name)
_LOADED = "copy (loading a state dict onto the device)"


class CheckpointCounter:
    """Counts the copies of saving and loading into ``tally``, by where ``placement``
    says the accelerator run holds each tensor."""

    def __init__(self, tally: Tally, placement: Placement) -> None:
        self._tally = tally
        self._placement = placement

    def observe(self, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any], out: Any) -> None:
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
                named = target_of_call(sys._getframe(1), self._tally.origin)
                if named == UNKNOWN and tensors_in(out):
                    # no map_location (or a table): the tensors go where they were saved
                    # from, which this run cannot know; say so rather than guess
                    where, _ = self._tally.where(sys._getframe(1))
                    self._tally.note_unpredicted(
                        f"{where.file}:{where.line}: torch.load without a map_location naming "
                        "one device (tensors land where they were saved from), so not counted"
                    )
                if named != DEVICE:
                    return  # map_location="cpu": loaded on the host on every machine
                held = [t for t in tensors_in(out) if t.device.type in HOST_TYPES]
                for tensor in held:  # there now: loading them into a model copies nothing
                    placement.sent_to_device(tensor)
                direction, label = TO_DEVICE, "copy (torch.load(..., map_location=device))"
            held = [t for t in held if t.numel()]
            if not held:
                return
            where, _ = self._tally.where(sys._getframe(1))
            phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
            row = Row(TRANSFER, label, _ops.op_name(func), direction, True, phase, where)
            for tensor in held:
                self._tally.count(row, tensor.numel() * tensor.element_size())
        except Exception:  # the audit must never break the program it watches
            self._tally.dropped += 1

    def count_loaded(
        self, value: torch.Tensor, frame: FrameType | None, *, checked: bool = False
    ) -> None:
        """A state dict's value loaded onto the device (see :mod:`._predicted_placement`), if
        torch's state-dict loading is what copies it. ``checked``: its destination is known to be
        on the device; else it is the loader's ``param`` (an optimizer's)."""
        # torch's own frames between the op and the loader: dynamo's wrappers around it
        while frame is not None and frame.f_code not in STATE_LOADERS:
            if self._tally.origin(frame.f_code) in (Origin.USER, Origin.INSTALLED):
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
        where, _ = self._tally.where(frame)
        phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
        self._tally.count(
            Row(TRANSFER, _LOADED, "load_state_dict", TO_DEVICE, True, phase, where), nbytes
        )


def in_state_loading(frame: FrameType | None) -> bool:
    """Whether torch's state-dict loading made this copy: where its destination lives is
    :mod:`._predicted_placement`'s to tell (:meth:`.CheckpointCounter.count_loaded`)."""
    while frame is not None:
        if frame.f_code in STATE_LOADERS:
            return True
        frame = frame.f_back
    return False
