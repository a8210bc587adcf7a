"""The copy engine: one plan per batch of tensors, then one execution.

:func:`plan_copy` looks at each distinct tensor once and decides its route:
it *stays* (already on the target with the right dtype), goes *direct* (one
``Tensor.to``), or is *staged* (written into a host staging buffer that crosses
in one copy, or, unpacked, that turns a pageable source into a pinned one).
:meth:`CopyPlan.run` issues the copies and, in the safe default mode, waits once.
``to_device``, ``DeviceLoader`` and ``pack_to_device`` all go through here, so
the device is normalised once and packability decided once per call.

Staging and packing themselves live in :mod:`torchport.hardware._packed_transfer`.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import not_

import torch

from torchport._device_types import CPU, META, MPS
from torchport.hardware._packed_transfer import (
    ALIGN,
    PACK_MIN_COUNT,
    cast_of,
    run_staged,
    same_device,
    should_pack,
    stageable,
)
from torchport.hardware._pinned import pins_for
from torchport.hardware._staging_pool import StagingPool
from torchport.hardware._sync import synchronize, wait_for_copies

__all__ = [
    "ALIGN",
    "CopyPlan",
    "Transfer",
    "copy_one",
    "copy_tensors",
    "plan_copy",
    "should_pack",
    "stageable",
]

_IS_CPU = operator.attrgetter("is_cpu")
_IS_META = operator.attrgetter("is_meta")
_DEVICE = operator.attrgetter("device")


def _plain_dense(t: torch.Tensor) -> bool:
    """A plain strided tensor whose copy into a fresh buffer means the same as ``.to``."""
    return (
        type(t) is torch.Tensor
        and t.layout == torch.strided
        and not t.requires_grad
        and not t.is_nested
        and not t.is_quantized
    )


@dataclass(frozen=True, slots=True)
class Transfer:
    """The outcome of :meth:`CopyPlan.run`.

    Attributes:
        tensors: The moved tensors, in input order (a repeated input gets the same result).
        nbytes: Bytes that crossed to the device (0 when nothing had to move).
        copies: How many copy calls were issued; a packed batch costs one.
        event: Recorded on the current stream after asynchronous copies into CUDA
            from pinned staging; ``None`` otherwise.
        fresh: Device tensors this transfer allocated on the current stream (for
            ``record_stream`` when they are handed to another stream).
        packed: Whether the staged tensors crossed in one copy.
    """

    tensors: list[torch.Tensor]
    nbytes: int
    copies: int
    event: torch.Event | None
    fresh: list[torch.Tensor]
    packed: bool


class CopyPlan:
    """How each tensor of one call reaches ``target``; decided once by :func:`plan_copy`.

    Attributes:
        target: The normalised target device.
        dtype: The cast for floating tensors, or None.
        stay: Indices of tensors known to stay where they are.
        direct: Indices of tensors handed to ``Tensor.to`` one by one. Without a cast
            or staging, this may include tensors already there (``Tensor.to``
            returns those as they are; checking each would cost as much).
        staged: Indices of tensors written into a host staging buffer.
        packed: Whether the staged tensors cross in one copy.
    """

    __slots__ = ("_first", "_tensors", "direct", "dtype", "packed", "staged", "stay", "target")

    def __init__(
        self,
        tensors: Sequence[torch.Tensor],
        target: torch.device,
        dtype: torch.dtype | None,
        first: list[int] | None,
        stay: list[int],
        direct: list[int],
        staged: list[int],
        packed: bool,
    ) -> None:
        self._tensors = tensors
        self._first = first  # index of each tensor's first occurrence; None: all distinct
        self.target = target
        self.dtype = dtype
        self.stay = stay
        self.direct = direct
        self.staged = staged
        self.packed = packed

    @property
    def noop(self) -> bool:
        """Whether nothing has to be copied."""
        return not self.direct and not self.staged

    def run(
        self,
        *,
        non_blocking: bool | None,
        pool: StagingPool | None = None,
        measure: bool = True,
    ) -> Transfer:
        """Issue the copies; returns the moved tensors.

        Synchronization with ``non_blocking=None`` ("as fast as is safe"): copies
        into accelerators are asynchronous and not waited for; copies to the CPU
        from an accelerator land in ordinary pageable memory and the host waits
        once per source device before this returns; copies to MPS end with one
        MPS synchronization. ``True``: everything asynchronous, no wait (to the
        CPU torch then returns pinned memory, and the caller must synchronize
        before reading). ``False``: every copy blocking. The host also waits on
        an earlier copy's event when the staging slot it needs is still being read.

        Args:
            non_blocking: See above.
            pool: Staging pool for staged tensors; ``None`` uses the process-wide one.
            measure: Count bytes and copies into the result (``to_device`` skips it).
        """
        tensors = self._tensors
        target = self.target
        out: list[torch.Tensor] = tensors if type(tensors) is list else list(tensors)
        if self.noop:
            return Transfer(out, 0, 0, None, [], False)
        out = out.copy() if out is tensors else out
        nb = True if non_blocking is None else non_blocking
        direct = self.direct
        sources: set[torch.device] = set()
        fresh: list[torch.Tensor] = []
        nbytes = copies = 0
        if direct:
            # `direct` is 0..n-1 exactly when every tensor moves one by one.
            everything = len(direct) == len(out) and self._first is None and not self.staged
            everything = everything and direct[0] == 0 and direct[-1] == len(out) - 1
            src = out if everything else list(map(out.__getitem__, direct))
            if non_blocking is None and target.type == CPU:
                moved = _to_host_pageable(src, self.dtype, sources)
            elif self.dtype is None:
                moved = [t.to(target, None, nb) for t in src]
            else:
                dtype = self.dtype
                moved = [t.to(target, cast_of(t, dtype), nb) for t in src]
            if everything:
                out = moved
            else:
                # Assign at C speed: the map runs setitem, the zero-length deque drains it.
                deque(map(out.__setitem__, direct, moved), maxlen=0)
            fresh = moved
            if measure:
                crossing = [t for t in src if not same_device(t.device, target) and t.numel()]
                nbytes = sum(t.numel() * t.element_size() for t in crossing)
                copies = len(crossing)
            else:
                copies = len(moved)
        event: torch.Event | None = None
        if self.staged:
            staged_bytes, staged_copies, event = run_staged(
                tensors,
                self.staged,
                target,
                self.dtype,
                packed=self.packed,
                nb=nb,
                pool=pool,
                out=out,
                fresh=fresh,
            )
            nbytes += staged_bytes
            copies += staged_copies
        if copies:
            if non_blocking is None:
                wait_for_copies(sources, target)
            elif not nb and target.type == MPS:
                synchronize(target)  # a blocking copy to MPS is visible only after this
        first = self._first
        if first is not None:
            out = list(map(out.__getitem__, first))
        return Transfer(out, nbytes, copies, event, fresh, self.packed)


def copy_one(
    t: torch.Tensor,
    target: torch.device,
    *,
    dtype: torch.dtype | None = None,
    non_blocking: bool | None = None,
    pending: set[torch.device],
) -> torch.Tensor:
    """Copy one tensor by the routes :meth:`CopyPlan.run` takes, deferring the wait.

    For callers that are handed tensors one at a time (``Module._apply``, an
    optimizer's state). With ``non_blocking=None`` the devices the host must
    wait for are added to ``pending``; call :func:`wait_for_copies` with it (and
    ``target``) once after the last copy. A floating tensor is cast to ``dtype``.
    Never waits itself, except for copies that must block (see
    :func:`_to_host_pageable`).
    """
    cast = cast_of(t, dtype)
    if non_blocking is None and target.type == CPU:
        return _to_host_pageable([t], dtype, pending)[0]
    if non_blocking is None and target.type == MPS and not same_device(t.device, target):
        pending.add(target)
    return t.to(target, cast, True if non_blocking is None else non_blocking)


def _to_host_pageable(
    src: list[torch.Tensor], dtype: torch.dtype | None, sources: set[torch.device]
) -> list[torch.Tensor]:
    """Copy to ordinary (pageable) CPU memory, asynchronously where that is safe.

    ``Tensor.to("cpu", non_blocking=True)`` from an accelerator returns *pinned*
    memory; offloading a model or returning eval outputs that way would lock a
    large share of RAM behind the caller's back. Plain dense tensors are copied
    into fresh pageable tensors with ``copy_(non_blocking=True)`` (the caller waits
    once afterwards, recorded in ``sources``); others (sparse, nested, subclasses,
    tensors that require grad and keep their autograd edge) use a blocking ``.to``.
    """
    cpu = torch.device(CPU)
    moved: list[torch.Tensor] = []
    for t in src:
        cast = cast_of(t, dtype)
        if t.is_cpu or t.is_meta:
            moved.append(t.to(cpu, cast, False))  # returns t itself when nothing changes
            continue
        sources.add(t.device)
        if _plain_dense(t):
            dst = torch.empty_like(t, dtype=cast or t.dtype, device=cpu)
            dst.copy_(t, non_blocking=True)
            moved.append(dst)
        else:
            moved.append(t.to(cpu, cast, False))
    return moved


def _on(target: torch.device) -> Callable[[torch.Tensor], bool]:
    """Whether a tensor is on the accelerator ``target`` (a device comparison)."""
    same = target.__eq__
    return lambda t: same(t.device)


def plan_copy(
    tensors: Sequence[torch.Tensor],
    target: torch.device,
    *,
    dtype: torch.dtype | None = None,
    pack: bool | None = None,
    stage_pageable: bool = False,
    distinct: bool = False,
    gather_host: bool = False,
) -> CopyPlan:
    """Decide, once, how each tensor reaches ``target``. Never synchronizes.

    Args:
        tensors: The tensors; a tensor object given twice is copied once (unless
            ``distinct`` promises there are no repeats).
        target: A device as :func:`~torchport.hardware.parse_device` returns it.
        dtype: Cast floating tensors to this dtype in the same copy.
        pack: ``True`` stages every stageable host tensor into one buffer and one
            copy; ``None`` does so where :func:`should_pack` says it pays;
            ``False`` never packs.
        stage_pageable: Unpacked, still stage pageable host tensors bound for CUDA
            through pinned memory so their copies are asynchronous (the loader's
            choice; ``to_device`` leaves them to CUDA's own staging).
        distinct: The caller guarantees no tensor object is given twice (the
            walker's output), which saves a pass.
        gather_host: With ``pack=True`` and a CPU target, gather host tensors that
            are already there into one fresh buffer too (``pack_to_device``'s
            contract); otherwise a tensor already on the target stays.
    """
    n = len(tensors)
    first: list[int] | None = None
    if not distinct and len(set(map(id, tensors))) != n:
        seen: dict[int, int] = {}
        first = [seen.setdefault(id(t), i) for i, t in enumerate(tensors)]
        unique = [i for i in range(n) if first[i] == i]
    else:
        unique = list(range(n))
    # Which tensors are already there, at C speed (no Python per tensor).
    sub = tensors if first is None else list(map(tensors.__getitem__, unique))
    kind = target.type
    if kind == CPU:
        on: Callable[[torch.Tensor], bool] = _IS_CPU
    elif kind == META:
        on = _IS_META
    else:
        on = _on(target)
    may_stage = (
        pack is True
        or stage_pageable
        or (pack is None and len(unique) >= PACK_MIN_COUNT and pins_for(target))
    )
    if dtype is None and not may_stage:
        # Only "all there" matters: otherwise every tensor goes to Tensor.to, which
        # returns one that is already there as it is. all() stops at the first miss,
        # so a batch that moves costs one check, not one per tensor.
        if all(map(on, sub)):
            return CopyPlan(tensors, target, dtype, first, unique, [], [], False)
        return CopyPlan(tensors, target, dtype, first, [], unique, [], False)
    if kind == CPU and gather_host and pack is True:
        here = [not stageable(t, dtype) and t.is_cpu and cast_of(t, dtype) is None for t in sub]
    else:
        here = list(map(on, sub))
    if dtype is not None:
        here = [h and cast_of(t, dtype) is None for h, t in zip(here, sub, strict=True)]
    if not any(here):
        stay, moving = [], unique
    elif all(here):
        stay, moving = unique, []
    else:
        stay = list(compress(unique, here))
        moving = list(compress(unique, map(not_, here)))
    if not moving or not may_stage:
        return CopyPlan(tensors, target, dtype, first, stay, moving, [], False)
    can_stage = [stageable(tensors[i], dtype) for i in moving]  # asked once per tensor
    candidates = list(compress(moving, can_stage))
    direct = list(compress(moving, map(not_, can_stage)))
    packed = False
    staged: list[int] = []
    if candidates:
        if pack is True:
            packed = True
        elif pack is None and len(candidates) >= PACK_MIN_COUNT:
            packed = should_pack([tensors[i] for i in candidates], target)
        if packed:
            staged = candidates
        elif stage_pageable and pins_for(target):
            staged = [i for i in candidates if not tensors[i].is_pinned()]
            direct = sorted(direct + [i for i in candidates if tensors[i].is_pinned()])
        else:
            direct = sorted(direct + candidates)
    return CopyPlan(tensors, target, dtype, first, stay, direct, staged, packed)


def copy_tensors(
    tensors: Sequence[torch.Tensor],
    target: torch.device,
    *,
    non_blocking: bool | None = None,
    dtype: torch.dtype | None = None,
    pack: bool | None = None,
    pool: StagingPool | None = None,
) -> Transfer:
    """Plan and run in one call; see :func:`plan_copy` and :meth:`CopyPlan.run`.

    Synchronization: as :meth:`CopyPlan.run` says for ``non_blocking``.
    """
    return plan_copy(tensors, target, dtype=dtype, pack=pack).run(
        non_blocking=non_blocking, pool=pool
    )
