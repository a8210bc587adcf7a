"""What one audit() block has seen: counts by source line, and the watchers that feed them.

A ``TorchDispatchMode`` (:class:`DispatchWatcher`) sees every aten op and asks
:mod:`._ops` whether it copies or waits; the wrappers of :mod:`._methods` report the
Python-level calls, and torchport's own movers report the copies they skip
(``torchport._skipped_copies``). All end in :class:`Recorder`, which finds the user's source
line by walking ``sys._getframe`` with a per-code-object cache of whose each frame is
(``traceback.extract_stack`` would read every frame's source), and counts small
summaries only: op, device, bytes, line. No tensor outlives its op.

The line an event is charged to is the user's: the first frame up the stack that is
neither torch's, torchport's nor installed code's (the standard library, packages in
``site-packages``); the innermost installed line it went through is kept beside it
(``model.to(device)`` through transformers' ``PreTrainedModel.to``). Where host work
inside a training loop is set apart or left out is decided in :mod:`._host_work`; which
way a predicted copy goes, in :mod:`._callsite`; where the accelerator run holds the
model's tensors and a line's copy to the host, in :mod:`._predicted_placement`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import CodeType, FrameType
from typing import Any

import torch

from torchport._device_types import CPU
from torchport._origin import Origin, code_origin
from torchport.diagnose import _host_work, _methods, _ops
from torchport.diagnose._callsite import DEVICE, HOST, UNKNOWN, program_moves, target_of_call
from torchport.diagnose._checkpoints import CheckpointCounting
from torchport.diagnose._events import (
    DATA_LOADING,
    HOST_TYPES,
    LOADING_TO_DEVICE,
    TO_DEVICE,
    TO_HOST,
    TRANSFER,
    Key,
    Row,
    Where,
)
from torchport.diagnose._methods import FunctionWatcher
from torchport.diagnose._ops import OpEntry
from torchport.diagnose._predicted_placement import (
    Placement,
    copied_to_host,
)
from torchport.diagnose._watcher import DispatchWatcher
from torchport.errors import ConfigError

__all__ = ["DATA_LOADING", "HOST_TYPES", "LOADING_TO_DEVICE", "DispatchWatcher", "Recorder"]

_HOST_TYPES = HOST_TYPES
_NO_CALLER: Where = ("<backward/C++>", 0, "", "", 0)
# Callers whose no-op moves of host tensors predict a copy on an accelerator; installed
# code moving to the program's device (a BatchEncoding's .to(device)) copies there too
# Origin's members as module names: a member read off the class costs a lookup per frame
_USER, _INSTALLED, _TORCHPORT = Origin.USER, Origin.INSTALLED, Origin.TORCHPORT
_HOST_SIDE, _MODULE_MOVE = Origin.HOST_SIDE, Origin.MODULE_MOVE
_PREDICTS = frozenset({_USER, _MODULE_MOVE, _INSTALLED})

# Formatting a torch.device costs microseconds; each device and route is named once
_DEVICE_FACTS: dict[torch.device, tuple[str, bool]] = {}
_ROUTES: dict[tuple[torch.device, torch.device], str] = {}


def _route(src: torch.device, dst: torch.device) -> str:
    route = _ROUTES.get((src, dst))
    if route is None:
        route = _ROUTES[(src, dst)] = f"{src}→{dst}"
    return route


class Recorder(CheckpointCounting):
    """Accumulates counts for one audit() block; shared by its two watchers."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.steps = 0
        self.recorded_steps = 0
        self.counts: dict[Row, list[int]] = {}
        self._lock = threading.Lock()
        self.local = _methods.QuietCount()  # per thread: inside a watched call, last host copy
        self._origins: dict[CodeType, Origin] = {}
        self._mode: DispatchWatcher | None = None
        # Parameters and buffers a predicted module move has sent, and which way: tied
        # weights, and a model moved twice, are copied once on an accelerator
        self._placement = Placement()
        self.closed = False
        self.forked = False  # this is a child forked from the audited process
        self.dropped = 0  # ops the audit failed to describe; see guarded_observe
        self._step_hooks: list[Any] = []
        self._fmode: FunctionWatcher | None = None
        self._threads_at_open: set[int] = set()
        self._started_at_open = 0
        self.elsewhere = 0  # other threads that ran meanwhile: not watched
        self.unpredicted: dict[str, int] = {}  # what the audit could not predict, and how often

    # -- the block and its modes ---------------------------------------------------
    def open(self) -> None:
        """The audit block starts: hear what torchport's movers skip, in this thread, and
        which optimizer steps (see :func:`._host_work.is_host_state`)."""
        _methods.open_block(self)
        self._step_hooks = _host_work.watch_optimizer_steps()
        _methods.OTHER_THREADS.open()
        self._threads_at_open = _methods.OTHER_THREADS.alive()
        self._started_at_open = _methods.OTHER_THREADS.started

    def close(self) -> None:
        """The audit block ended."""
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
        # At the bottom of the function-mode stack: the program's own modes (torchport's
        # redirect under `run --audit`) rewrite a call first, and the audit sees the call
        # that really runs (x.to("cuda") redirected to the target)
        _insert_bottom(fmode, _FUNCTION_STACK)
        self._fmode = fmode
        mode = DispatchWatcher(self)
        mode.__enter__()  # type: ignore[no-untyped-call]
        self._mode = mode

    def stop(self) -> None:
        if self._mode is not None:
            mode, self._mode = self._mode, None
            mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
            fmode, self._fmode = self._fmode, None
            if fmode is not None:
                _remove(fmode, _FUNCTION_STACK)
            _methods.unwatch(self)

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """Lift this audit's modes off the calling thread's stacks for the block.

        Modes entered above them stay, in their order; on exit the stacks are as before.
        """
        with _lifted(self._fmode, _FUNCTION_STACK), _lifted(self._mode, _DISPATCH_STACK):
            yield

    def lift(self) -> object | None:
        """Pop this audit's dispatch mode if it is on top of the stack; the token restores it."""
        mode = self._mode
        depth = _stack_depth()
        if mode is None or depth == 0 or _stack_at(depth - 1) is not mode:
            return None
        _pop_stack(None)  # None: the user-mode stack, where audit's mode lives
        return mode

    def restore(self, token: object) -> None:
        """Push back what :meth:`lift` popped."""
        _push_stack(token)  # type: ignore[arg-type]  # the mode lift() popped

    def leave_after_fork(self) -> None:
        """In a forked child (a DataLoader worker): stop watching, for good.

        What the child does is not the audited process's work, and the child's copy of
        this report is never read; the mode comes off this thread's stack and the
        wrappers go when no other audit needs them, so the child runs at full speed.
        """
        self.forked = True
        self._lock = threading.Lock()  # another thread may have held it at the fork
        _methods.close_block(self)
        mode, self._mode = self._mode, None
        fmode, self._fmode = self._fmode, None
        if mode is None:
            return
        _remove(mode, _DISPATCH_STACK)
        if fmode is not None:
            _remove(fmode, _FUNCTION_STACK)
        _methods.unwatch(self)

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
    def _where(self, frame: FrameType | None) -> tuple[Where, Origin | None]:
        """Where the event is charged, and the origin of the code that made the call
        (the first frame that is not torchport's).

        Where: the first user frame at or above ``frame``, with the innermost installed
        frame passed on the way (file, line; empty when none). With no user frame above,
        the innermost installed frame itself, else ``<backward/C++>``.
        """
        origins = self._origins
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
                    return (code.co_filename, frame.f_lineno or 0, code.co_name, "", 0), caller
                return (
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
            return (code.co_filename, via.f_lineno or 0, code.co_name, "", 0), caller
        return _NO_CALLER, caller

    def _count(self, key: Row, nbytes: int) -> None:
        with self._lock:
            slot = self.counts.get(key)
            if slot is None:
                self.counts[key] = [1, nbytes]
            else:
                slot[0] += 1
                slot[1] += nbytes

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
            if entry.transfer:
                where, caller = self._where(sys._getframe(1))
                moved = _ops.transfer_of(func, args, kwargs, out)
                if moved is None:
                    return
                src, dst, nbytes = moved
                phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
                if src != dst:
                    # a real copy the dispatch level never sees: torch.tensor(data, device=)
                    copied_to_host(self.local, where if dst.type in _HOST_TYPES else None, out)
                    key: Key = (
                        TRANSFER,
                        entry.label,
                        _ops.op_name(func),
                        _route(src, dst),
                        False,
                        phase,
                    )
                    self._count(key + where, nbytes)
                    return
                if not nbytes:
                    return  # an empty tensor's move copies nothing
                if caller is _HOST_SIDE and src.type in _HOST_TYPES:
                    # an optimizer's state loaded next to its parameter
                    self._count_loaded(args[0], sys._getframe(1))
                    return
                if src.type not in _HOST_TYPES or caller not in _PREDICTS:
                    # a no-op on the accelerator itself, or torch's own bookkeeping moves
                    # (clip_grad_norm_'s norms), which copy nothing on an accelerator either
                    return
                named = HOST if func is _CPU_METHOD else self._named(func, args, kwargs)
                to_host = named == HOST
                if func in _CREATES and to_host:
                    return  # torch.tensor(data, device="cpu"): on the host on every machine
                if phase and named == DEVICE:
                    # a DataLoader's collate_fn sending the batch to the program's device:
                    # device work, though data loading made it
                    phase = LOADING_TO_DEVICE
                if caller is _MODULE_MOVE:
                    if self._placement.moved_before(args[0], to_host):
                        return
                elif not to_host and func not in _CREATES:
                    if caller is _USER or program_moves(sys._getframe(1), self._origin):
                        self._placement.sent_to_device(args[0])
                    elif self._placement.sent_before(args[0]):
                        return  # a library moving what the program moved: already there
                # a read of this copy on the same line is the copy's own (.cpu().numpy())
                copied_to_host(self.local, where if to_host else None, out)
                key = (
                    TRANSFER,
                    entry.label,
                    _ops.op_name(func),
                    TO_HOST if to_host else TO_DEVICE,
                    True,
                    phase,
                )
                self._count(key + where, nbytes)
                return
            tensor = args[0] if args and isinstance(args[0], torch.Tensor) else None
            self._count_read(func, entry, tensor, sys._getframe(1), host_side=True)
        except Exception:  # the audit must never break the program it watches
            self.dropped += 1

    def observe_host_index(self, func: Any, nbytes: int) -> None:
        """Count the copy of an index built on the host (``v[:, [-1]]``, ``x[array]``) to
        the indexed tensor's device in an accelerator run; never raises."""
        try:
            where, _ = self._where(sys._getframe(1))
            phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
            key: Key = (TRANSFER, _HOST_INDEX, _ops.op_name(func), TO_DEVICE, True, phase)
            self._count(key + where, nbytes)
        except Exception:  # the audit must never break the program it watches
            self.dropped += 1

    def _named(self, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> int:
        """Where a move that stays on this host goes in the accelerator run: what its call
        site names (:func:`._callsite.target_of_call`), else what its values say
        (:data:`._callsite.HOST` or :data:`._callsite.UNKNOWN`)."""
        named = target_of_call(sys._getframe(2), self._origin)
        if named != UNKNOWN:
            return named
        return HOST if _ops.names_host(func, args, kwargs) else UNKNOWN

    def _origin(self, code: CodeType) -> Origin:
        origin = self._origins.get(code)
        if origin is None:
            origin = self._origins[code] = code_origin(code)
        return origin

    def observe_skipped(self, tensors: Iterable[Any], device: torch.device, by: str) -> None:
        """Count copies a torchport mover skipped (tensors already on ``device``); never raises.

        On a host device each is a copy an accelerator run makes; elsewhere a tensor
        already on the device is not copied there either. Heard for the whole block:
        with sampling, a batch handed over between steps is kept when the next step is
        one that is recorded.
        """
        try:
            if device.type not in _HOST_TYPES or self.forked:
                return
            if self._mode is None and not (self.every > 1 and self.steps % self.every == 0):
                # between steps of a sampled audit: the batch goes to the next step, which
                # is recorded only if it is sampled
                return
            where, _ = self._where(sys._getframe(1))
            key: Key = (
                TRANSFER,
                f"copy (batch handed over by {by})",
                by,
                TO_DEVICE,
                True,
                DATA_LOADING if _host_work.loading(sys._getframe()) else "",
            )
            row = key + where
            copied_to_host(self.local, None, None)
            for tensor in tensors:
                if isinstance(tensor, torch.Tensor) and tensor.device == device:
                    self._count(row, tensor.numel() * tensor.element_size())
        except Exception:  # the audit must never break the program it watches
            self.dropped += 1

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
                if func is _COPY and self._placement.loads_onto_device(args[0], args[1]):
                    self._count_loaded(args[1], sys._getframe(1), checked=True)
                return
            if entry.transfer:
                moved = _ops.transfer_of(func, args, kwargs, out)
                if moved is None or moved[0] == moved[1] or not moved[2]:
                    return  # no move, or an empty tensor's: nothing is copied
                src, dst, nbytes = moved
                label = entry.label
                if _ops.non_blocking(func, args, kwargs):
                    label += ", non_blocking"
                where, _ = self._where(sys._getframe(1))
                copied_to_host(self.local, where if dst.type in _HOST_TYPES else None, out)
                # A real copy is device work wherever it runs, data loading included
                phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
                key: Key = (TRANSFER, label, _ops.op_name(func), _route(src, dst), False, phase)
                self._count(key + where, nbytes)
                return
            tensor = None
            for arg in args:
                if isinstance(arg, torch.Tensor):
                    tensor = arg
                    break
            self._count_read(func, entry, tensor, sys._getframe(1), host_side=False)
        except Exception:  # the audit must never break the program it watches
            self.dropped += 1

    def _count_read(
        self,
        func: Any,
        entry: OpEntry,
        tensor: torch.Tensor | None,
        frame: FrameType | None,
        *,
        host_side: bool,
    ) -> None:
        """Count a sync of ``tensor`` at the first user frame at or above ``frame``.

        The per-event path of both watchers: device facts, the stack walk, read size,
        op name and the count, with the cheap steps written inline (each helper call
        costs a hundred ns or more here). ``host_side``: leave out host tensors read by
        torch's host-side code (optimizer step counters, data loading), which stay on
        the CPU next to accelerator parameters too.
        """
        device = tensor.device if tensor is not None else _CPU
        facts = _DEVICE_FACTS.get(device)
        if facts is None:
            facts = _DEVICE_FACTS[device] = (str(device), device.type in _HOST_TYPES)
        where, caller = self._where(frame)
        if host_side and facts[1] and caller is _HOST_SIDE and _host_work.is_host_state(tensor):
            return
        local = self.local
        copied = local.host_copy
        if copied is not None:
            if copied[1] == where[1] and copied[0] == where[0]:
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
        phase = DATA_LOADING if _host_work.loading(sys._getframe()) else ""
        self._count((entry.kind_name, entry.label, name, facts[0], facts[1], phase, *where), nbytes)

    def rows(self) -> list[tuple[str, str, str, str, bool, str, str, int, str, str, int, int, int]]:
        """What was counted: (kind, label, op, device, would_sync, phase, file, line,
        function, via file, via line, count, bytes), one per key, in no particular order."""
        with self._lock:
            return [(*key, count, nbytes) for key, (count, nbytes) in self.counts.items()]


def _leave_in_child() -> None:
    """After a fork, in the child: the audits of the forking thread stop there."""
    for observer in _methods.observers_here():
        if isinstance(observer, Recorder):
            observer.leave_after_fork()


if hasattr(os, "register_at_fork"):  # POSIX; DataLoader workers fork by default on Linux
    os.register_at_fork(after_in_child=_leave_in_child)


_CPU = torch.device(CPU)
_HOST_INDEX = "copy (index built on the host from a list or NumPy array)"
# the originals (the audit's wrappers stand in for them under their names)
_CPU_METHOD = torch.Tensor.cpu
_CREATES = frozenset({torch.tensor, torch.as_tensor, torch.asarray})
_COPY = torch.ops.aten.copy_.default
# The dispatch-mode stack, read and changed directly: lift() runs per watched call
_stack_depth = torch._C._len_torch_dispatch_stack
_stack_at = torch._C._get_dispatch_stack_at
_pop_stack = torch._C._pop_torch_dispatch_stack
_push_stack = torch._C._push_on_torch_dispatch_stack


class _Stack:
    """One of the calling thread's mode stacks, read and changed through torch's C calls."""

    def __init__(self, size: Any, at: Any, pop: Any, push: Any) -> None:
        self.size, self.at, self.pop, self.push = size, at, pop, push

    def modes(self) -> list[Any]:
        return [self.at(i) for i in range(self.size())]


_DISPATCH_STACK = _Stack(
    _stack_depth, _stack_at, lambda: _pop_stack(None), _push_stack
)  # None: the user-mode stack, where audit's mode lives
_FUNCTION_STACK = _Stack(
    torch._C._len_torch_function_stack,
    torch._C._get_function_stack_at,
    torch._C._pop_torch_function_stack,
    torch._C._push_on_torch_function_stack,
)


def _remove(mode: Any, stack: _Stack) -> list[Any]:
    """Take ``mode`` out of ``stack``, leaving the modes above it in order; returns them
    (outermost first), or ``[]`` when ``mode`` is not there."""
    if not any(m is mode for m in stack.modes()):
        return []
    above: list[Any] = []
    while (top := stack.pop()) is not mode:
        above.append(top)
    above.reverse()
    for other in above:
        stack.push(other)
    return above


def _insert_bottom(mode: Any, stack: _Stack) -> None:
    """Put ``mode`` under every mode on ``stack``, the others kept in their order."""
    above: list[Any] = []
    while stack.size():
        above.append(stack.pop())
    stack.push(mode)
    for other in reversed(above):
        stack.push(other)


@contextlib.contextmanager
def _lifted(mode: Any, stack: _Stack) -> Iterator[None]:
    """``mode`` off ``stack`` for the block, back in its place after."""
    if mode is None or not any(m is mode for m in stack.modes()):
        yield
        return
    above = _remove(mode, stack)
    try:
        yield
    finally:
        for _ in above:
            stack.pop()
        stack.push(mode)
        for other in above:
            stack.push(other)
