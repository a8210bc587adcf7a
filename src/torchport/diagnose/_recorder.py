"""What one audit() block has seen: counts by source line, and the watchers that feed them.

A ``TorchDispatchMode`` (:class:`DispatchWatcher`) sees every aten op and asks
:mod:`._ops` whether it copies or waits; the wrappers of :mod:`._methods` report the
Python-level calls, and torchport's own movers report the copies they skip
(``torchport._skipped_copies``). All end in :class:`Recorder`, which finds the user's source
line and counts each event in its :class:`._tally.Tally` (which holds how a line is
found); saving and loading are counted by its :class:`._checkpoints.CheckpointCounter`,
what the accelerator run keeps on the host is followed by :mod:`._host_held`, and the
copies of indexing with what the host built are counted by :mod:`._host_indexing`. The
modes sit on the thread's stacks through :mod:`._mode_stacks`. Where host work
inside a training loop is set apart or left out is decided in :mod:`._host_work`; which
way a predicted copy goes, in :mod:`._callsite`; where the accelerator run holds the
model's tensors and a line's copy to the host, in :mod:`._predicted_placement`; a move's
result, in :mod:`._move_sides`; what legacy constructors made, in :mod:`._legacy_makers`.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any

import torch

from torchport._device_types import CPU
from torchport._origin import Origin
from torchport.diagnose import _host_work, _methods, _moves, _ops
from torchport.diagnose._callsite import DEVICE, HOST, move_target, program_moves
from torchport.diagnose._checkpoints import CheckpointCounter, in_state_loading
from torchport.diagnose._events import (
    DATA_LOADING,
    HOST_TYPES,
    LOADING_TO_DEVICE,
    TO_DEVICE,
    TO_HOST,
    TRANSFER,
    Row,
    route,
    skipped_wait,
)
from torchport.diagnose._host_held import HostHeld, follow_device, made_on_host
from torchport.diagnose._host_indexing import HostIndexing
from torchport.diagnose._legacy_makers import new_tensor_placed, place_fresh
from torchport.diagnose._methods import FunctionWatcher
from torchport.diagnose._mode_stacks import (
    DISPATCH_STACK,
    FUNCTION_STACK,
    insert_bottom,
    lifted,
    pop_stack,
    push_stack,
    remove,
    stack_at,
    stack_depth,
)
from torchport.diagnose._move_sides import ONE_OBJECT, host_copy_alone, moved_on_device
from torchport.diagnose._ops import OpEntry, OpKind
from torchport.diagnose._predicted_placement import Placement, copied_to_host
from torchport.diagnose._steps_aside import StepsAside
from torchport.diagnose._subclass_reads import read_owner
from torchport.diagnose._tally import Tally
from torchport.diagnose._two_faced import DEVICE_SIDE, HOST_SIDE, Faces
from torchport.diagnose._watcher import DispatchWatcher
from torchport.errors import ConfigError

__all__ = ["DATA_LOADING", "HOST_TYPES", "LOADING_TO_DEVICE", "DispatchWatcher", "Recorder"]

_HOST_TYPES = HOST_TYPES
# Origin's members as module names: a member read off the class costs a lookup per frame
_USER, _INSTALLED, _TORCHPORT = Origin.USER, Origin.INSTALLED, Origin.TORCHPORT
_HOST_SIDE, _MODULE_MOVE, _TORCH = Origin.HOST_SIDE, Origin.MODULE_MOVE, Origin.TORCH
# Callers whose no-op moves of host tensors predict a copy on an accelerator; installed
# code moving to the program's device (a BatchEncoding's .to(device)) copies there too
_PREDICTS = frozenset({_USER, _MODULE_MOVE, _INSTALLED})

# Formatting a torch.device costs microseconds; each device is named once
_DEVICE_FACTS: dict[torch.device, tuple[str, bool]] = {}


class Recorder:
    """Accumulates counts for one audit() block; shared by its two watchers."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.steps = 0
        self.recorded_steps = 0
        self.tally = Tally()
        self.local = _methods.QuietCount()  # per thread: inside a watched call, last host copy
        # the tally's bound methods, looked up once: the per-event path calls them
        self._where = self.tally.where
        self._count = self.tally.count
        self._origin = self.tally.origin
        self._mode: DispatchWatcher | None = None
        # what a predicted module move sent, and which way (tied weights copy once)
        self._placement = Placement()
        self.checkpoints = CheckpointCounter(self.tally, self._placement)
        self.closed = False
        self.forked = False  # this is a child forked from the audited process
        self._step_hooks: list[Any] = []
        self.steps_aside = StepsAside()  # torch's optimizer steps run without the function mode
        self._fmode: FunctionWatcher | None = None
        self._threads_at_open: set[int] = set()
        self._started_at_open = 0
        self.elsewhere = 0  # other threads that ran meanwhile: not watched
        # objects standing for a host and a device tensor, told apart by name
        self.faces = Faces(self._origin, self.tally.note_unpredicted)
        self.held = HostHeld(self.faces, HOST_SIDE)  # what the accelerator run keeps on the host
        # what it holds on the device: made or moved there, computed from those
        self.device_only = HostHeld(self.faces, DEVICE_SIDE)
        self.host_indexing = HostIndexing(self.held, self._where, self._count, self._count_read)

    # -- the block and its modes ---------------------------------------------------
    def open(self) -> None:
        """The block starts: hear what torchport's movers skip, and optimizer steps."""
        _methods.open_block(self)
        self._step_hooks = _host_work.watch_optimizer_steps()
        self._step_hooks += self.steps_aside.hooks(self.local)
        _methods.OTHER_THREADS.open()
        self._threads_at_open = _methods.OTHER_THREADS.alive()
        self._started_at_open = _methods.OTHER_THREADS.started

    def close(self) -> None:
        _methods.close_block(self)
        threads = _methods.OTHER_THREADS
        started = threads.started - self._started_at_open
        self.elsewhere = len(self._threads_at_open | threads.alive()) + started
        _methods.OTHER_THREADS.close()
        for handle in self._step_hooks:
            handle.remove()
        self._step_hooks = []
        _host_work.forget_steps()

    def start(self) -> None:
        _methods.watch(self)
        fmode = FunctionWatcher(self)
        # At the bottom of the function-mode stack: the program's own modes (the redirect
        # of `run --audit`) rewrite a call first, and the audit sees the call that runs
        insert_bottom(fmode, FUNCTION_STACK)
        self._fmode = fmode
        mode = DispatchWatcher(self)
        mode.__enter__()  # type: ignore[no-untyped-call]
        self._mode = mode
        self.steps_aside.watch(fmode, mode)

    def stop(self) -> None:
        self.steps_aside.watch(None, None)
        if self._mode is not None:
            mode, self._mode = self._mode, None
            mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
            fmode, self._fmode = self._fmode, None
            if fmode is not None:
                remove(fmode, FUNCTION_STACK)
            _methods.unwatch(self)

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """Lift this audit's modes off the calling thread's stacks for the block (modes
        entered above them stay, in order; on exit the stacks are as before)."""
        with lifted(self._fmode, FUNCTION_STACK), lifted(self._mode, DISPATCH_STACK):
            yield

    def lift(self) -> object | None:
        """Pop this audit's dispatch mode if it is on top of the stack; the token restores it."""
        mode = self._mode
        depth = stack_depth()
        if mode is None or depth == 0 or stack_at(depth - 1) is not mode:
            return None
        pop_stack(None)  # None: the user-mode stack, where audit's mode lives
        return mode

    def restore(self, token: object) -> None:
        """Push back what :meth:`lift` popped."""
        push_stack(token)  # type: ignore[arg-type]  # the mode lift() popped

    def leave_after_fork(self) -> None:
        """In a forked child (a DataLoader worker): stop watching, for good (its work is
        not the audited process's and its report is never read), at full speed."""
        self.forked = True
        self.tally.lock = threading.Lock()  # another thread may have held it at the fork
        _methods.close_block(self)
        mode, self._mode = self._mode, None
        fmode, self._fmode = self._fmode, None
        if mode is None:
            return
        remove(mode, DISPATCH_STACK)
        if fmode is not None:
            remove(fmode, FUNCTION_STACK)
        _methods.unwatch(self)

    def step_ended(self) -> None:  # the optimizer step the function mode was lifted for
        self.steps_aside.ended()

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        if self.closed:
            raise ConfigError("report.step() was called after its tp.audit() block ended")
        if self.forked:
            yield
            return
        sampled = self.steps % self.every == 0
        self.steps += 1
        if not sampled:
            yield
            return
        self.recorded_steps += 1
        if self._mode is not None:  # every == 1, or a step inside a recorded step
            yield
            return
        self.start()
        try:
            yield
        finally:
            self.stop()

    # -- recording -----------------------------------------------------------------
    def observe_python(
        self,
        func: Any,
        entry: OpEntry,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        out: Any,
    ) -> None:
        """Record a watched Python-level call that has run; never raises."""
        try:
            if entry.kind is _MAKES:
                # a factory that names no device, or names the host at its call site
                named = HOST
                if kwargs.get("device") is not None:
                    named = move_target(sys._getframe(1), self._origin, func, args, kwargs)
                if named == HOST:
                    self.held.add(out)
                elif named == DEVICE:  # made on the program's device: .to() copies nothing
                    self.device_only.add(out)
                return
            if entry.transfer:
                if func in _CREATES and made_on_host(func, args, kwargs):
                    self.held.add(out)
                    return
                if func is _NEW_TENSOR and new_tensor_placed(
                    args, kwargs, out, self.held, self.device_only
                ):
                    return
                where, caller = self._where(sys._getframe(1))
                moved = _moves.transfer_of(func, args, kwargs, out)
                if moved is None:
                    return
                src, dst, nbytes = moved
                phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
                if src != dst:
                    # a real copy the dispatch level never sees: torch.tensor(data, device=)
                    copied_to_host(self.local, where if dst.type in _HOST_TYPES else None, out)
                    way = route(src, dst)
                    row = Row(TRANSFER, entry.label, _ops.op_name(func), way, False, phase, where)
                    self._count(row, nbytes)
                    return
                if not nbytes:
                    return  # an empty tensor's move copies nothing
                if caller is _HOST_SIDE and src.type in _HOST_TYPES:
                    # an optimizer's state loaded next to its parameter
                    self.checkpoints.count_loaded(args[0], sys._getframe(1))
                    return
                if src.type not in _HOST_TYPES or caller not in _PREDICTS:
                    # a no-op on the accelerator itself, or torch's own bookkeeping moves
                    # (clip_grad_norm_'s norms), which copy nothing on an accelerator either
                    return
                named = HOST
                if func is not _CPU_METHOD:
                    named = move_target(sys._getframe(1), self._origin, func, args, kwargs)
                to_host = named == HOST
                if func in _CREATES and to_host:
                    data = args[0] if args else None
                    if not isinstance(data, torch.Tensor) or data in self.held:
                        self.held.add(out)  # torch.tensor(data, device="cpu"): the host's
                        return
                    # torch.as_tensor(x, device="cpu") of a device x: a move to the host
                frame, sides = sys._getframe(1), (self.held, self.device_only, self._origin)
                host_copy = args[0] in self.held  # (a lend below ends that for this line)
                if to_host and args[0] in self.held:
                    if not phase:  # (data loading's are listed apart)
                        return  # .cpu() of what the accelerator run holds on the host
                elif to_host and caller is _MODULE_MOVE and out is args[0]:
                    # model.to("cpu"): the module's own tensors are the host's from now on
                    self.device_only.discard(out)
                    self.held.add(out)
                elif to_host:
                    if not host_copy_alone(*sides, frame, args[0], out):
                        self.tally.note_unpredicted(f"{where.file}:{where.line}: {ONE_OBJECT}")
                elif moved_on_device(*sides, frame, func in _CREATES, args[0], out, named):
                    return  # on the device already: no copy
                if phase and named == DEVICE:
                    # a DataLoader's collate_fn sending the batch to the program's device:
                    # device work, though data loading made it
                    phase = LOADING_TO_DEVICE
                if caller is _MODULE_MOVE:
                    if self._placement.moved_before(args[0], to_host):
                        return
                elif not to_host and func not in _CREATES:
                    if not host_copy and self._placement.on_device(args[0]):
                        # Variable(m.buf).cuda(), p.detach().to(dev): the data of a
                        # module's tensor a module move sent there; on the device already
                        return
                    if caller is _USER or program_moves(sys._getframe(1), self._origin):
                        self._placement.sent_to_device(args[0])
                    elif self._placement.sent_before(args[0]):
                        return  # a library moving what the program moved: already there
                # a read of this copy on the same line is the copy's own (.cpu().numpy())
                copied_to_host(self.local, where if to_host else None, out)
                direction = TO_HOST if to_host else TO_DEVICE
                row = Row(TRANSFER, entry.label, _ops.op_name(func), direction, True, phase, where)
                for part in _moves.copies_of(args[0], nbytes):  # a sparse tensor's parts
                    self._count(row, part)
                return
            if self.device_only.watched():  # x[mask] of a device x: the device's (quiet ops)
                follow_device(self.device_only, args, out)
            tensor = args[0] if args and isinstance(args[0], torch.Tensor) else None
            if self.host_indexing.indexed_on_host(func, args, out, sys._getframe(1)):
                return
            self._count_read(func, entry, tensor, sys._getframe(1), host_side=True)
        except Exception:  # the audit must never break the program it watches
            self.tally.dropped += 1

    def observe_host_index(self, func: Any, args: tuple[Any, ...], out: Any) -> None:
        """Count copies of indexing with what the host built (._host_indexing); never raises."""
        try:
            if self.device_only.watched():  # x[[0, 1]] of a device x: the device's
                follow_device(self.device_only, args, out)
            self.host_indexing.observe(func, args, sys._getframe(1))
        except Exception:  # the audit must never break the program it watches
            self.tally.dropped += 1

    def observe_skipped(self, tensors: Iterable[Any] | None, device: torch.device, by: str) -> None:
        """Count copies a torchport mover skipped (tensors already on a host ``device``), or a
        wait a stand-in skipped (``tensors`` None); never raises. Copies count for the whole
        block: sampled, a batch handed over between steps counts if the next is recorded."""
        try:
            if device.type not in _HOST_TYPES or self.forked:
                return
            if tensors is None:  # a wait skipped (torch.cuda.synchronize): one while recorded
                if self._mode is not None:
                    self._count(skipped_wait(by, str(device), self._where(sys._getframe(1))[0]), 0)
                return
            if self._mode is None and not (self.every > 1 and self.steps % self.every == 0):
                return  # between a sampled audit's steps: the batch is the next step's
            where, _ = self._where(sys._getframe(1))
            phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
            row = Row(
                TRANSFER, f"copy (batch handed over by {by})", by, TO_DEVICE, True, phase, where
            )
            copied_to_host(self.local, None, None)
            for tensor in tensors:
                if isinstance(tensor, torch.Tensor) and tensor.device == device:
                    self._count(row, tensor.numel() * tensor.element_size())
        except Exception:  # the audit must never break the program it watches
            self.tally.dropped += 1

    def observe_aten(
        self,
        func: Any,
        entry: OpEntry,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        out: Any,
    ) -> None:
        """Record an aten op that has run, if its arguments give it that cost; never raises."""
        try:
            if entry.applies is not None and not entry.applies(args, kwargs):
                if (
                    func is _COPY
                    and self._placement.copied_in_from_host(args, self.held)
                    and not in_state_loading(sys._getframe(1))  # (which counts its own)
                ):
                    nbytes = args[1].numel() * args[1].element_size()
                    self._count_to_device("copy (copy_)", "copy_", sys._getframe(1), nbytes)
                elif func is _COPY and self._placement.loads_onto_device(args[0], args[1]):
                    self.checkpoints.count_loaded(args[1], sys._getframe(1), checked=True)
                elif self.held.watched():
                    self.host_indexing.copied_from_host(func, args, kwargs, sys._getframe(1))
                return
            if entry.transfer:
                moved = _moves.transfer_of(func, args, kwargs, out)
                if moved is None or moved[0] == moved[1] or not moved[2]:
                    return  # no move, or an empty tensor's: nothing is copied
                src, dst, nbytes = moved
                label = entry.label
                if _moves.non_blocking(func, args, kwargs):
                    label += ", non_blocking"
                where, _ = self._where(sys._getframe(1))
                copied_to_host(self.local, where if dst.type in _HOST_TYPES else None, out)
                # A real copy is device work wherever it runs, data loading included
                phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
                way = route(src, dst)
                self._count(
                    Row(TRANSFER, label, _ops.op_name(func), way, False, phase, where), nbytes
                )
                return
            tensor = None
            for arg in args:
                if isinstance(arg, torch.Tensor):
                    tensor = arg
                    break
            if self.host_indexing.expanded_on_host(func, args, kwargs, tensor, sys._getframe(1)):
                return  # nonzero ran on the host
            self._count_read(func, entry, tensor, sys._getframe(1), host_side=True)
        except Exception:  # the audit must never break the program it watches
            self.tally.dropped += 1

    def _count_to_device(self, label: str, name: str, frame: FrameType, nbytes: int) -> None:
        """Count a copy to the device made at ``frame``'s line (data loading's set apart)."""
        where, _ = self._where(frame)
        phase = DATA_LOADING if _host_work.loading(sys._getframe(1)) else ""
        self._count(Row(TRANSFER, label, name, TO_DEVICE, True, phase, where), nbytes)

    def _count_read(
        self,
        func: Any,
        entry: OpEntry,
        tensor: torch.Tensor | None,
        frame: FrameType | None,
        *,
        host_side: bool,
    ) -> None:
        """Count a sync of ``tensor`` at the first user frame at or above ``frame``: the
        per-event path of both watchers, the cheap steps inline (a call costs 100 ns here).
        ``host_side``: leave out host tensors read by torch's host-side code (optimizer
        step counters, data loading), which stay on the CPU by accelerator parameters too.
        """
        device = tensor.device if tensor is not None else _CPU
        if tensor is not None and device.type in _HOST_TYPES:  # a device subclass's own read?
            device = (tensor := read_owner(frame, self._origin, tensor)).device
        facts = _DEVICE_FACTS.get(device)
        if facts is None:
            facts = _DEVICE_FACTS[device] = (str(device), device.type in _HOST_TYPES)
        phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
        if facts[1] and not phase and tensor is not None and tensor in self.held:
            return  # a tensor the accelerator run holds on the host: reading it waits for nothing
        where, caller = self._where(frame)
        if (
            host_side
            and facts[1]
            and (caller is _HOST_SIDE or (caller is _TORCH and self.tally.host_side_below(frame)))
            and _host_work.is_host_state(tensor)
        ):
            return
        local = self.local
        copied = local.host_copy
        if copied is not None:
            if copied[1] == where.line and copied[0] == where.file:
                if facts[1] and tensor is not None and id(tensor) in local.host_ids:  # type: ignore[operator]
                    return  # reading what this line just copied to the host: part of that copy
            else:
                local.host_copy = local.host_ids = None
        nbytes = 0
        if tensor is not None:
            whole = _ops.READS.get(id(func))
            if whole is not None:
                nbytes = tensor.element_size() * (tensor.numel() if whole else 1)
        named = _ops.NAMES.get(id(func))
        name = named[1] if named is not None else _ops.op_name(func)
        row = Row(entry.kind_name, entry.label, name, facts[0], facts[1], phase, where)
        self._count(row, nbytes)

    def observe_made_on_host(self, out: Any) -> None:
        """``torch.from_numpy`` made ``out``: the host's in the accelerator run too."""
        try:
            self.held.add(out)
        except Exception:  # the audit must never break the program it watches
            self.tally.dropped += 1

    def observe_fresh(self, func: Any, out: Any) -> None:
        """A fresh aten op (:data:`._legacy_makers.FRESH_OPS`) no watched call owns made
        ``out``: placed as the accelerator run places it (:func:`._legacy_makers.place_fresh`),
        and the copy of ``x.new([1, 2])``'s data to a device ``x`` counted; never raises."""
        try:
            frame = sys._getframe(1)
            if place_fresh(func, out, frame, self._origin, self.held, self.device_only):
                nbytes = out.numel() * out.element_size()
                self._count_to_device(_NEW_DATA, "Tensor.new", frame, nbytes)
        except Exception:  # the audit must never break the program it watches
            self.tally.dropped += 1

    def observe_checkpoint(
        self, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any], out: Any
    ) -> None:
        """``torch.save`` or ``torch.load`` ran (:mod:`._checkpoints`); never raises."""
        self.checkpoints.observe(func, args, kwargs, out)


_CPU = torch.device(CPU)
# the originals (the audit's wrappers stand in for them under their names)
_CPU_METHOD = torch.Tensor.cpu
_CREATES = frozenset({torch.tensor, torch.as_tensor, torch.asarray})
_NEW_TENSOR = torch.Tensor.new_tensor
_NEW_DATA = "copy (tensor.new(data))"
_MAKES = OpKind.NEITHER  # the entries of factories that make their tensors on the host
_COPY = torch.ops.aten.copy_.default
