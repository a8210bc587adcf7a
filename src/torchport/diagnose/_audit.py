"""audit(): count every host<->device copy and every host synchronization, by source line.

Two watchers share one recorder. A ``TorchDispatchMode`` sees every aten op,
including those run by autograd and optimizers, and asks :mod:`._ops` whether it
copies or waits. Python-level tensor calls that never reach the dispatcher as one
op (``.tolist()``, ``.numpy()``, printing, ``x.to(device)`` of a CPU tensor) are
seen by wrappers that :mod:`._methods` puts on just those callables (cheaper than a
``TorchFunctionMode``, which would sit in front of every call); while one of those
runs, the aten ops inside it are not counted again. Both record small summaries
only (op, device, bytes, source line); no tensor outlives its op.

Per op, the fast path is one dict lookup. The source line is resolved only for
ops that count, by walking ``sys._getframe`` with a per-code-object cache of which
frames are internal (``traceback.extract_stack`` would read every frame's source).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import linecache
import os
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any, cast

import torch
from torch import nn
from torch.utils._python_dispatch import (
    TorchDispatchMode,
    _get_current_dispatch_mode_stack,
    _pop_mode,
    _push_mode,
)

import torchport
from torchport.diagnose import _methods, _ops
from torchport.diagnose._ops import OpEntry, OpKind
from torchport.diagnose._strict import is_out_of_memory, note_oom
from torchport.errors import ConfigError

__all__ = ["AuditEntry", "AuditReport", "audit"]

# Devices whose scalar reads cost no wait: the audit still lists them, labelled
# as points that would synchronize on an accelerator.
_HOST_TYPES = frozenset({"cpu", "meta"})


@dataclass
class AuditEntry:
    """One kind of copy or sync at one source line, with how often it happened.

    Attributes:
        kind: ``"transfer"``, ``"sync"`` or ``"shape sync"`` (an op whose output
            size depends on the data, so the host waits to learn it).
        label: What happened, e.g. ``"scalar read (.item())"``.
        op: The aten op or tensor method, e.g. ``"aten::_to_copy"``, ``"Tensor.item"``.
        device: For a transfer, the direction (``"cpu→cuda:0"``); for a sync, the
            device of the tensor read.
        would_sync: True for an entry that costs nothing on this host device (CPU)
            but would on an accelerator: a sync there, or, for a transfer, a copy
            (``x.to(device)`` and ``out.cpu()`` return a CPU tensor unchanged).
        file: The user's source file (the first frame outside torch and torchport).
        line: Its line number.
        function: The function holding that line.
        code: The line's text, stripped.
        count: How many times it happened.
        bytes: Bytes copied in total (transfers, predicted copies and reads to Python;
            0 when unknown).
    """

    kind: str
    label: str
    op: str
    device: str
    would_sync: bool
    file: str
    line: int
    function: str
    code: str
    count: int = 0
    bytes: int = 0

    @property
    def where(self) -> str:
        """``file:line``."""
        return f"{self.file}:{self.line}"


@dataclass
class AuditReport:
    """What :func:`audit` saw: plain data, filled in when the block exits.

    Attributes:
        entries: One per (kind, op, device, source line), most bytes then most
            calls first.
        every: The sampling period given to :func:`audit`.
        steps: Steps marked with :meth:`step`.
        recorded_steps: Steps that were recorded (all of them when ``every == 1``).
        dropped: Ops the audit saw but failed to describe (a bug to report; the
            program itself ran on unchanged).
    """

    entries: list[AuditEntry] = field(default_factory=list)
    every: int = 1
    steps: int = 0
    recorded_steps: int = 0
    dropped: int = 0
    _recorder: _Recorder | None = field(default=None, repr=False, compare=False)

    @property
    def transfers(self) -> list[AuditEntry]:
        """The entries that copy between devices, or would on an accelerator (``would_sync``)."""
        return [e for e in self.entries if e.kind == OpKind.TRANSFER.value]

    @property
    def syncs(self) -> list[AuditEntry]:
        """The entries where the host waits (or would wait, on an accelerator)."""
        return [e for e in self.entries if e.kind != OpKind.TRANSFER.value]

    @property
    def total_bytes(self) -> int:
        """Bytes copied between devices in all (not counting predicted copies)."""
        return sum(e.bytes for e in self.transfers if not e.would_sync)

    @property
    def would_copy_bytes(self) -> int:
        """Bytes a CPU run did not copy but an accelerator run would (``x.to(device)``, ...)."""
        return sum(e.bytes for e in self.transfers if e.would_sync)

    @property
    def total_count(self) -> int:
        """Copies and syncs in all."""
        return sum(e.count for e in self.entries)

    def step(self) -> contextlib.AbstractContextManager[None]:
        """Mark one step (say, one training iteration) as ``with report.step(): ...``.

        With ``audit(every=N)``, only the first of every N steps is recorded and
        nothing outside step blocks is (a block that marks no step at all ends
        with a warning, and its report says so); with ``every=1`` steps are only
        counted.

        Raises:
            ConfigError: When called after the ``audit()`` block ended.
        """
        if self._recorder is None:
            raise ConfigError(
                "report.step() was called after its tp.audit() block ended; call it inside "
                "the block: with tp.audit(every=N) as report: ... with report.step(): ..."
            )
        return self._recorder.step()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: the entries, the sampling and the totals."""
        return {
            "entries": [dataclasses.asdict(e) for e in self.entries],
            "every": self.every,
            "steps": self.steps,
            "recorded_steps": self.recorded_steps,
            "dropped": self.dropped,
            "total_bytes": self.total_bytes,
            "total_count": self.total_count,
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """The report as JSON text; :meth:`from_json` reads it back."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditReport:
        """Rebuild a report from :meth:`to_dict` output (totals are recomputed)."""
        return cls(
            entries=[AuditEntry(**e) for e in data["entries"]],
            every=int(data["every"]),
            steps=int(data["steps"]),
            recorded_steps=int(data["recorded_steps"]),
            dropped=int(data.get("dropped", 0)),
        )

    @classmethod
    def from_json(cls, text: str) -> AuditReport:
        """Rebuild a report from :meth:`to_json` output."""
        return cls.from_dict(json.loads(text))

    # Drawing lives in ._report; these delegate so that print(report) shows the table.
    def __rich__(self) -> Any:
        from torchport.diagnose._report import render

        return render(self)

    def __str__(self) -> str:
        from torchport.diagnose._report import render_text

        return render_text(self)


# (kind, label, op, device, would_sync) + where (file, line, function)
_Key = tuple[str, str, str, str, bool]


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__ or "")) + os.sep
# Torch code whose tensors live on the host by design, on every machine: the
# optimizers' step counters (unless capturable/fused) and the data loading
# machinery (sampler permutations, worker seeds, collation). The learning-rate
# schedulers are not: ReduceLROnPlateau.step(loss) reads the user's loss, on the
# device in a GPU run.
_HOST_SIDE_DIRS = tuple(
    os.path.join(_TORCH_DIR, *parts) + os.sep for parts in (("optim",), ("utils", "data"))
)
_USER_READS_IN_TORCH = frozenset(
    {
        os.path.join(_TORCH_DIR, "optim", "lr_scheduler.py"),
        os.path.join(_TORCH_DIR, "optim", "swa_utils.py"),
    }
)
_OWN_DIR = os.path.dirname(os.path.abspath(torchport.__file__ or "")) + os.sep
_USER, _TORCH, _HOST_SIDE, _OWN, _MODULE_MOVE = 0, 1, 2, 3, 4

# The functions nn.Module.to() and .cpu() apply to each parameter and buffer: a move
# of the model, so on a CPU run their per-tensor no-op .to() predicts a real copy.
# Other torch code's .to() of host tensors (clip_grad_norm_'s norms) predicts none.
_MODULE_MOVES = frozenset(
    const
    for method in (nn.Module.to, nn.Module.cpu)
    for const in method.__code__.co_consts
    if isinstance(const, CodeType)
)


# Frames between the caller and a watcher that belong to the call itself: the
# dispatch of __torch_function__ and the Python-defined tensor methods it wraps.
_MACHINERY = frozenset(
    code
    for code in (
        getattr(torch.overrides.handle_torch_function, "__code__", None),
        getattr(torch._ops.OpOverload.__call__, "__code__", None),
        *(getattr(f, "__code__", None) for f in _ops.watched_methods()),
    )
    if code is not None
)


def _origin(code: CodeType) -> int:
    name = code.co_filename
    if name.startswith(_OWN_DIR) or code in _MACHINERY:
        return _OWN
    if code in _MODULE_MOVES:
        return _MODULE_MOVE
    if name.startswith(_HOST_SIDE_DIRS) and name not in _USER_READS_IN_TORCH:
        return _HOST_SIDE
    return _TORCH if name.startswith(_TORCH_DIR) else _USER


_Where = tuple[str, int, str]
_NO_CALLER: _Where = ("<backward/C++>", 0, "")
_TRANSFER = OpKind.TRANSFER.value
# Callers whose no-op moves of host tensors predict a copy on an accelerator
_PREDICTS = frozenset({_USER, _MODULE_MOVE})

# Formatting a torch.device costs microseconds; each device and route is named once
_DEVICE_FACTS: dict[torch.device, tuple[str, bool]] = {}
_ROUTES: dict[tuple[torch.device, torch.device], str] = {}


def _device_facts(device: torch.device) -> tuple[str, bool]:
    """The device's name and whether it is a host device (a read there waits for nothing)."""
    facts = _DEVICE_FACTS.get(device)
    if facts is None:
        facts = _DEVICE_FACTS[device] = (str(device), device.type in _HOST_TYPES)
    return facts


def _route(src: torch.device, dst: torch.device) -> str:
    route = _ROUTES.get((src, dst))
    if route is None:
        route = _ROUTES[(src, dst)] = f"{src}→{dst}"
    return route


class _Recorder:
    """Accumulates counts for one audit() block; shared by its two watchers."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.steps = 0
        self.recorded_steps = 0
        self.counts: dict[tuple[str, str, str, str, bool, str, int, str], list[int]] = {}
        self._lock = threading.Lock()
        self.local = _methods.QuietCount()  # per thread: inside a watched Python-level call
        self._origins: dict[CodeType, int] = {}
        self._mode: _DispatchWatcher | None = None
        self.closed = False
        self.dropped = 0  # ops the audit failed to describe; see guarded_observe

    # -- modes on and off -------------------------------------------------------
    def start(self) -> None:
        _methods.watch(self)
        mode = _DispatchWatcher(self)
        mode.__enter__()  # type: ignore[no-untyped-call]
        self._mode = mode

    def stop(self) -> None:
        if self._mode is not None:
            mode, self._mode = self._mode, None
            mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
            _methods.unwatch(self)

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """Lift this audit's dispatch mode off the calling thread's stack for the block.

        Modes entered above it stay, in their order; on exit the stack is as before.
        """
        mode = self._mode
        if mode is None or not any(m is mode for m in _get_current_dispatch_mode_stack()):
            yield
            return
        above: list[Any] = []
        while (top := _pop_mode()) is not mode:
            above.append(top)
        for other in reversed(above):
            _push_mode(other)
        try:
            yield
        finally:
            for _ in above:
                _pop_mode()
            _push_mode(mode)
            for other in reversed(above):
                _push_mode(other)

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
        _push_stack(cast(TorchDispatchMode, token))

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        if self.closed:
            raise ConfigError("report.step() was called after its tp.audit() block ended")
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
    def _where(self) -> tuple[_Where, int | None]:
        """The first user frame above the op, and the origin of the code that made the call."""
        frame: FrameType | None = sys._getframe(2)
        origins = self._origins
        caller: int | None = None
        while frame is not None:
            code = frame.f_code
            origin = origins.get(code)
            if origin is None:
                origin = origins[code] = _origin(code)
            if caller is None and origin != _OWN:
                caller = origin
            if origin == _USER:
                return (code.co_filename, frame.f_lineno or 0, code.co_name), caller
            frame = frame.f_back
        return _NO_CALLER, caller

    def _count(self, key: tuple[str, str, str, str, bool, str, int, str], nbytes: int) -> None:
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
            where, caller = self._where()
            if entry.transfer:
                moved = _ops.transfer_of(func, args, kwargs, out)
                if moved is None:
                    return
                src, dst, nbytes = moved
                predicted = src == dst
                if predicted and (src.type not in _HOST_TYPES or caller not in _PREDICTS):
                    # a no-op on the accelerator itself, or torch's own bookkeeping moves
                    # (clip_grad_norm_'s norms), which copy nothing on an accelerator either
                    return
                key: _Key = (
                    _TRANSFER,
                    entry.label,
                    _ops.op_name(func),
                    _route(src, dst),
                    predicted,
                )
                self._count(key + where, nbytes)
                return
            tensor = args[0] if args and isinstance(args[0], torch.Tensor) else None
            name, host = _device_facts(tensor.device if tensor is not None else _CPU)
            if host and caller == _HOST_SIDE:
                # torch.optim's step counters and torch.utils.data's sampler tensors
                # stay on the CPU by design, next to CUDA parameters too, so reading
                # one predicts no wait on an accelerator.
                return
            nbytes = _ops.read_bytes(func, tensor) if tensor is not None else 0
            self._count(
                (entry.kind_name, entry.label, _ops.op_name(func), name, host, *where), nbytes
            )
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
                return
            if entry.transfer:
                moved = _ops.transfer_of(func, args, kwargs, out)
                if moved is None or moved[0] == moved[1]:
                    return
                src, dst, nbytes = moved
                label = entry.label
                if _ops.non_blocking(func, args, kwargs):
                    label += ", non_blocking"
                where, _ = self._where()
                key: _Key = (_TRANSFER, label, _ops.op_name(func), _route(src, dst), False)
                self._count(key + where, nbytes)
                return
            # aten ops arrive through torch's wrappers, so host-side callers are not
            # told apart here; only Python-level calls name their caller exactly.
            tensor = None
            for arg in args:
                if isinstance(arg, torch.Tensor):
                    tensor = arg
                    break
            name, host = _device_facts(tensor.device if tensor is not None else _CPU)
            nbytes = _ops.read_bytes(func, tensor) if tensor is not None else 0
            where, _ = self._where()
            sync: _Key = (entry.kind_name, entry.label, _ops.op_name(func), name, host)
            self._count(sync + where, nbytes)
        except Exception:  # the audit must never break the program it watches
            self.dropped += 1

    def report_into(self, report: AuditReport) -> None:
        with self._lock:
            items = list(self.counts.items())
        entries = []
        for (kind, label, op, device, host, file, line, function), (count, nbytes) in items:
            code = linecache.getline(file, line).strip() if line else ""
            entries.append(
                AuditEntry(kind, label, op, device, host, file, line, function, code, count, nbytes)
            )
        entries.sort(key=lambda e: (-e.bytes, -e.count, e.file, e.line, e.label))
        report.entries = entries
        report.dropped = self.dropped
        report.steps = self.steps
        report.recorded_steps = self.recorded_steps if self.steps else 0


_CPU = torch.device("cpu")
_ATEN_TABLE = _ops.ATEN_TABLE
_BY_ID = _ATEN_TABLE  # its dict face: id(overload) -> (overload, entry)
# The dispatch-mode stack, read and changed directly: lift() runs per watched call
_stack_depth = torch._C._len_torch_dispatch_stack
_stack_at = torch._C._get_dispatch_stack_at
_pop_stack = torch._C._pop_torch_dispatch_stack
_push_stack = torch._C._push_on_torch_dispatch_stack


class _DispatchWatcher(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Sees every aten op of the block; counts the ones the op table knows."""

    def __init__(self, recorder: _Recorder) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._recorder = recorder
        self._local = recorder.local

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        # per-op hot path: one call, one dict hit
        if kwargs:
            out = func(*args, **kwargs)
        else:
            out = func(*args)
            kwargs = {}
        found = _BY_ID.get(id(func))
        entry = found[1] if found is not None else _ATEN_TABLE.entry(func)
        if entry is not None and not self._local.quiet:
            self._recorder.observe_aten(func, entry, args, kwargs, out)
        return out


@contextlib.contextmanager
def audit(*, every: int = 1) -> Iterator[AuditReport]:
    """Count host<->device copies and host syncs inside the block, by source line.

    Copies between any two different devices count (``cpu→meta`` too). Scalar
    reads and data-dependent shapes count on every device; on the CPU they are
    marked ``would_sync``: free here, a wait on an accelerator. So are the copies
    a CPU run skips but an accelerator run makes: ``x.to(device)`` and
    ``out.cpu()`` of a CPU tensor, ``model.to(device)``, ``t.new_tensor(data)``,
    ``torch.tensor``/``as_tensor``/``asarray`` with a ``device=`` (listed with their
    bytes). The audit itself never synchronizes; it only watches the program do
    so. The report is filled in when the block exits::

        with tp.audit() as report:
            train_one_epoch()
        print(report)

    Watching costs a few microseconds per aten op (PyTorch's dispatch-mode
    machinery, mostly), which shows on small, op-bound steps, and about ten more
    per recorded event; other Python-level calls cost nothing extra. For long
    runs, record one step in N; the other steps run unwatched::

        with tp.audit(every=10) as report:
            for batch in loader:
                with report.step():
                    train_step(batch)

    Only the thread that entered the block is watched, plus autograd's worker
    threads, which inherit its modes (their ops have no Python caller and are
    listed under ``<backward/C++>``). Reads made by ``torch.optim`` (its step
    counters) and ``torch.utils.data`` (sampler permutations, worker seeds) are
    not listed: those tensors stay on the CPU on every machine; a learning-rate
    scheduler reading the loss (``ReduceLROnPlateau.step(loss)``) is.

    The watched program runs as it would without the audit: ``torch.jit.script``
    and ``torch.jit.trace`` run with the audit stepped aside (what they compile
    runs audited afterwards), and warnings point at the program's lines.

    Args:
        every: Record one step in ``every``, where steps are the
            ``with report.step():`` blocks. ``1`` (the default) records the
            whole block and ``step()`` only counts.

    Yields:
        The :class:`AuditReport`, complete once the block has exited.

    Raises:
        ConfigError: When ``every`` is not a positive integer.

    Warns:
        UserWarning: At the end of an ``every > 1`` block that marked no step, so
            recorded nothing.
    """
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ConfigError(
            f"tp.audit(every=...) got {every!r}; pass a positive integer, e.g. every=10 "
            "to record one step in ten"
        )
    recorder = _Recorder(every)
    report = AuditReport(every=every, _recorder=recorder)
    if every == 1:
        recorder.start()
    try:
        yield report
    except RuntimeError as err:
        if is_out_of_memory(err):
            note_oom(err)
        raise
    finally:
        recorder.stop()
        recorder.closed = True
        report._recorder = None
        recorder.report_into(report)
    if every > 1 and report.steps == 0:  # only on a normal exit: never mask an exception
        warnings.warn(
            f"tp.audit(every={every}) recorded nothing: no step was marked with report.step(), "
            "and with every > 1 only marked steps are recorded; wrap each iteration in "
            "`with report.step():`, or use tp.audit() to record the whole block",
            UserWarning,
            stacklevel=3,  # the user's with-statement, past contextlib's __exit__
        )


# Exported by both torchport and torchport.diagnose; AuditEntry only by the latter,
# so that is the module pickle and repr must name for it.
AuditEntry.__module__ = "torchport.diagnose"
AuditReport.__module__ = "torchport"
audit.__module__ = "torchport"
