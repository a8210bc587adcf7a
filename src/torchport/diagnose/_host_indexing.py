"""The copies of indexing with what the host built, in the accelerator run a CPU run predicts.

On an accelerator, ``x[index]`` and ``x[index] = v`` of a tensor on the device copy to the
device what the host made for them: an index torch builds from a list or a NumPy array
(``v[:, [-1]]``), an index tensor or a mask the program made on the host (``x[hi]``; a
host mask's positions after ``nonzero`` runs there), and the number or one-element host
tensor assigned where ``index_put_`` takes it (:func:`._indexing.assigned_number_bytes`).
:class:`HostIndexing` counts them for one audit, charged to the user's line; what is held
on the host is :mod:`._host_held`'s to say, and each count goes to the audit's tally.
A copy from a tensor held on the host into one on the device (``dev_x.copy_(host_t)``)
is counted here too, the way ``index_put_`` copies its host value.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any

import torch

from torchport.diagnose import _host_work, _indexing, _ops
from torchport.diagnose._checkpoints import in_state_loading
from torchport.diagnose._events import DATA_LOADING, TO_DEVICE, TRANSFER, Row, Where
from torchport.diagnose._host_held import HostHeld
from torchport.diagnose._ops import OpEntry

__all__ = ["HostIndexing"]

# Where: the tally's stack walk; Count: the tally's count; Read: the recorder's count of a
# host wait (func, entry, tensor, frame, host_side=...)
_Where = Callable[[FrameType | None], tuple[Where, Any]]
_Count = Callable[[Row, int], None]
_Read = Callable[..., None]


class HostIndexing:
    """Counts the copies of one audit's indexing with what the host built."""

    def __init__(self, held: HostHeld, where: _Where, count: _Count, read: _Read) -> None:
        self._held = held  # what the accelerator run keeps on the host
        self._where = where
        self._count = count
        self._read = read

    def observe(self, func: Any, args: tuple[Any, ...], frame: FrameType | None) -> None:
        """Count the copies of indexing with what was built on the host in an accelerator
        run: an index from a list or an array (``v[:, [-1]]``, ``x[array]``), index tensors
        held on the host, and the number of ``x[index] = number``
        (:func:`._indexing.assigned_number_bytes`), each to the indexed tensor's device,
        unless that tensor is the host's too.

        Args:
            func: ``Tensor.__getitem__`` or ``Tensor.__setitem__``, which has run.
            args: Its arguments.
            frame: The frame that made the call (the user's line is found at or above it).
        """
        held = self._held
        if args[0] in held:
            return  # indexing a tensor the accelerator run holds on the host
        where, _ = self._where(frame)
        phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
        name = _ops.op_name(func)
        value = args[2] if len(args) > 2 else None
        if isinstance(value, torch.Tensor):  # a one-element value made on the host
            assigned = value.element_size() if value.numel() == 1 and value in held else 0
        else:
            assigned = _indexing.assigned_number_bytes(args, on_host=held.__contains__)
            if _indexing.assigns_number_by_mask(args) and held.masks_on_host(args[1]):
                assigned = args[0].element_size()  # index_put_ with a host mask
        parts = _indexing.host_index_parts(args[1])
        parts += [(n, False) for n in held.index_bytes(args[1])]
        fills = func is _SETITEM and _fills_by_host_mask(args, parts, held)
        if fills:
            assigned = 0  # x[bool list] = host value: masked_fill_ reads it, copies nothing
        for label, nbytes in [(_HOST_INDEX, n) for n, _ in parts] + [(_ASSIGNED, assigned)]:
            if nbytes:
                self._count(Row(TRANSFER, label, name, TO_DEVICE, True, phase, where), nbytes)
        index = args[1]
        parts_of = index if type(index) is tuple else ()
        if any(map(_indexing.advances, parts_of)):  # else the select's .item() is recorded
            for part in parts_of:
                if _ITEM_ENTRY and _indexing.selects(part) and part not in held:
                    # m[t1, idx] = 1.0: ATen selects by a 0-dim integer tensor's .item(),
                    # a wait on the device (this call's own ops are not recorded)
                    self._read(_ITEM, _ITEM_ENTRY, part, frame, host_side=False)
        if any(is_mask for _, is_mask in parts) and not fills:
            # a bool list or array is a mask on the device: expanding it waits there
            self._read(func, _ops.METHOD_TABLE[func], args[0], frame, host_side=False)

    def indexed_on_host(
        self, func: Any, args: Sequence[Any], out: Any, frame: FrameType | None
    ) -> bool:
        """Whether a watched call that has run is ``x[...]`` (``= v``) that waits for nothing
        in the accelerator run, its copies counted: ``x`` held on the host (the result is
        the host's too), a one-element value held there through a device mask
        (``masked_fill_``), or a mask held there (:meth:`observe_host_mask`)."""
        held = self._held
        if func not in _INDEXING or not held.watched():
            return False
        held.follow(args, out)  # x[mask] of a host tensor: the host's too
        if held.mask_on_host(func, args):
            return True
        if args[0] not in held and held.masks_on_host(args[1]):
            # x[host_mask]: nonzero runs on the host, its positions are copied
            self.observe_host_mask(func, args, frame)
            return True
        return False

    def expanded_on_host(
        self,
        func: Any,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        tensor: torch.Tensor | None,
        frame: FrameType | None,
    ) -> bool:
        """Whether an aten ``index``/``index_put_`` that has run indexes a device ``tensor``
        with masks held on the host: ``nonzero`` ran on the host (no wait), and the copies
        are counted (:meth:`copied_from_host`)."""
        held = self._held
        if (
            func in _ATEN_INDEXING
            and held.watched()
            and len(args) > 1
            and tensor is not None
            and tensor not in held
            and held.masks_on_host(args[1])
        ):
            self.copied_from_host(func, args, kwargs, frame)
            return True
        return False

    def copied_from_host(
        self, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any], frame: FrameType | None
    ) -> None:
        """Count the copies an aten op makes from tensors the accelerator run holds on the
        host into one on the device (:meth:`._host_held.HostHeld.copied_from_host`: index
        tensors, a one-element value, ``copy_``), except a state dict's loading."""
        copies = [n for n in self._held.copied_from_host(func, args, kwargs) if n]
        if copies and not in_state_loading(frame):
            where, _ = self._where(frame)
            phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
            name = _ops.op_name(func)
            for nbytes in copies:
                self._count(Row(TRANSFER, _FROM_HOST, name, TO_DEVICE, True, phase, where), nbytes)

    def observe_host_mask(self, func: Any, args: Sequence[Any], frame: FrameType | None) -> None:
        """``x[host_mask]`` (``= v``) of a tensor on the device: the mask's positions, and
        a value made on the host (a number, a one-element tensor held there), are copied
        to the device; ``index_put_`` cannot run as ``masked_fill_`` with a host mask.

        Args:
            func: ``Tensor.__getitem__`` or ``Tensor.__setitem__``, which has run.
            args: Its arguments.
            frame: The frame that made the call.
        """
        where, _ = self._where(frame)
        phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
        name = _ops.op_name(func)
        sizes = [(_HOST_INDEX, n) for n in self._held.index_bytes(args[1])]
        if func is _SETITEM and len(args) > 2:
            value = args[2]
            if isinstance(value, (bool, int, float, complex)):
                sizes.append((_ASSIGNED, args[0].element_size()))
            elif isinstance(value, torch.Tensor) and value.numel() == 1 and value in self._held:
                sizes.append((_ASSIGNED, value.element_size()))
        for label, nbytes in sizes:
            if nbytes:
                self._count(Row(TRANSFER, label, name, TO_DEVICE, True, phase, where), nbytes)


def _fills_by_host_mask(
    args: tuple[Any, ...], parts: list[tuple[int, bool]], held: HostHeld
) -> bool:
    """``x[bool list] = number`` (or a one-element value held on the host): the list is the
    lone advanced index, a mask on the device, so ``index_put_`` runs as ``masked_fill_``
    (no wait; ints and slices beside it make a view first)."""
    if len(args) < 3 or len(parts) != 1 or not parts[0][1]:
        return False
    index = args[1]
    for part in index if type(index) is tuple else (index,):
        if isinstance(part, (torch.Tensor, bool)):
            return False  # a second advanced index
    value = args[2]
    return not isinstance(value, torch.Tensor) or (value.numel() == 1 and value in held)


_HOST_INDEX = "copy (index built on the host from a list or NumPy array)"
_ASSIGNED = "copy (the value of x[index] = v, made on the host)"
_FROM_HOST = "copy (a tensor made on the host, into one on the device)"
_SETITEM = torch.Tensor.__setitem__
_INDEXING = frozenset({torch.Tensor.__getitem__, _SETITEM})
_ATEN_INDEXING = frozenset(
    {
        torch.ops.aten.index.Tensor,
        torch.ops.aten.index_put_.default,
        torch.ops.aten.index_put.default,
        torch.ops.aten._index_put_impl_.default,
    }
)
_ITEM = torch.ops.aten._local_scalar_dense.default
_ITEM_ENTRY: OpEntry | None = _ops.aten_entry(_ITEM)
