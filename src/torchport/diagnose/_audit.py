"""audit(): count every host<->device copy and every host synchronization, by source line.

This module is the public face: :func:`audit`, and the facts it returns
(:class:`AuditReport`, :class:`AuditEntry`). The watching and counting live in
:mod:`._recorder` (a ``TorchDispatchMode`` for aten ops, wrappers from :mod:`._methods`
for Python-level reads); which host work is set apart is decided in :mod:`._host_work`;
:mod:`._drawing` draws the report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import linecache
import os
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from torchport._crossings import listening
from torchport.diagnose._events import on_accelerator
from torchport.diagnose._measured import Crossings, measured
from torchport.diagnose._methods import observers_here
from torchport.diagnose._oom import is_out_of_memory, note_oom
from torchport.diagnose._ops import OpKind
from torchport.diagnose._recorder import DATA_LOADING, LOADING_TO_DEVICE, Recorder
from torchport.errors import ConfigError

__all__ = ["AuditEntry", "AuditReport", "audit"]


def _leave_in_child() -> None:
    """After a fork, in the child: the audits of the forking thread stop there."""
    for observer in observers_here():
        if isinstance(observer, Recorder):
            observer.leave_after_fork()


if hasattr(os, "register_at_fork"):  # POSIX; DataLoader workers fork by default on Linux
    os.register_at_fork(after_in_child=_leave_in_child)


@dataclass
class AuditEntry:
    """One kind of copy or sync at one source line, with how often it happened.

    Attributes:
        kind: ``"transfer"``, ``"sync"`` or ``"shape sync"`` (an op whose output
            size depends on the data, so the host waits to learn it).
        label: What happened, e.g. ``"scalar read (.item())"``.
        op: The aten op or tensor method, e.g. ``"aten::_to_copy"``, ``"Tensor.item"``.
        device: For a transfer, the direction (``"cpu→cuda:0"``; for a predicted
            copy ``"host→device"`` or ``"device→host"``); for a sync, the device of
            the tensor read.
        would_sync: True for an entry that costs nothing on this host device (CPU)
            but would on an accelerator: a sync there, or, for a transfer, a copy
            (``x.to(device)`` and ``out.cpu()`` return a CPU tensor unchanged).
        file: The user's source file: the first frame outside torch, torchport and
            installed code (the standard library, ``site-packages``).
        line: Its line number.
        function: The function holding that line.
        code: The line's text, stripped.
        count: How many times it happened.
        bytes: Bytes copied in total (transfers, predicted copies and reads to Python;
            0 when unknown).
        via: ``"file:line"`` of the innermost installed code the event went through
            on its way from the user's line (``transformers/modeling_utils.py:3712``),
            or ``""``.
        phase: ``"data loading"`` when it happened while a DataLoader fetched a batch,
            else ``""`` (the training loop).
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
    via: str = ""
    phase: str = ""

    @property
    def where(self) -> str:
        """``file:line``."""
        return f"{self.file}:{self.line}"


@dataclass
class AuditReport:
    """What :func:`audit` saw: plain data, filled in when the block exits.

    Attributes:
        entries: What the run on an accelerator does: one per (kind, op, device,
            source line), most bytes then most calls first. Copies that cross
            devices are here wherever they were made, data loading included.
        data_loading: Host work done while a DataLoader fetched batches (its
            ``Dataset``, transforms, ``collate_fn``, sampler): reads of host tensors
            and no-op moves that stay on the host in an accelerator run too, so
            they count in no total (``would_sync`` is false), in the same order.
        every: The sampling period given to :func:`audit`.
        steps: Steps marked with :meth:`step`.
        recorded_steps: Steps that were recorded (all of them when ``every == 1``).
        dropped: Ops the audit saw but failed to describe (a bug to report; the
            program itself ran on unchanged).
        other_threads: How many other threads ran while the audit watched (alive when
            it opened or closed, or started in between). The audit watches only the
            thread that entered it, so what those did (a prefetching thread's
            ``.to(device)``, a logger thread's ``.item()``) is in no count.
        unpredicted: What the audit saw but could not predict for an accelerator run,
            each with how many times (``torch.load`` without a ``map_location``): not
            in any count.
        measured: The program ran on a device that counts its own crossings (the
            simulated accelerator), and ``entries`` are those counts, not a prediction.
    """

    entries: list[AuditEntry] = field(default_factory=list)
    data_loading: list[AuditEntry] = field(default_factory=list)
    every: int = 1
    steps: int = 0
    recorded_steps: int = 0
    dropped: int = 0
    other_threads: int = 0
    unpredicted: dict[str, int] = field(default_factory=dict)
    measured: bool = False
    _recorder: Recorder | None = field(default=None, repr=False, compare=False)

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
            "data_loading": [dataclasses.asdict(e) for e in self.data_loading],
            "every": self.every,
            "steps": self.steps,
            "recorded_steps": self.recorded_steps,
            "dropped": self.dropped,
            "other_threads": self.other_threads,
            "unpredicted": dict(self.unpredicted),
            "measured": self.measured,
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
            data_loading=[AuditEntry(**e) for e in data.get("data_loading", [])],
            every=int(data["every"]),
            steps=int(data["steps"]),
            recorded_steps=int(data["recorded_steps"]),
            dropped=int(data.get("dropped", 0)),
            other_threads=int(data.get("other_threads", 0)),
            unpredicted={str(k): int(v) for k, v in data.get("unpredicted", {}).items()},
            measured=bool(data.get("measured", False)),
        )

    @classmethod
    def from_json(cls, text: str) -> AuditReport:
        """Rebuild a report from :meth:`to_json` output."""
        return cls.from_dict(json.loads(text))

    # Drawing lives in ._drawing; these delegate so that print(report) shows the table.
    def __rich__(self) -> Any:
        from torchport.diagnose._drawing import render

        return render(self)

    def __str__(self) -> str:
        from torchport.diagnose._drawing import render_text

        return render_text(self)


@contextlib.contextmanager
def audit(*, every: int = 1) -> Iterator[AuditReport]:
    """Count host<->device copies and host syncs inside the block, by source line.

    On a device that counts its own crossings (the simulated accelerator,
    ``torchport.testing.simulate_accelerator``), the report holds what that run did:
    every copy between host and device and every host wait, counted where it happened
    (``report.measured`` is true; ``audit(every=N)`` keeps predicting). A run that used
    an accelerator in the block (read a tensor there, or copied to or from one: CUDA) is
    the accelerator run: there a read of a host tensor waits for nothing and a move that
    stays on the host copies nothing, so neither is listed. Elsewhere it predicts, as
    follows.

    The report describes the run on an accelerator. Copies between any two different
    devices count (``cpu→meta`` too). Scalar reads and data-dependent shapes count on
    every device; on the CPU they are marked ``would_sync``: free here, a wait on an
    accelerator. So are the copies a CPU run skips but an accelerator run makes:
    ``x.to(device)`` and ``out.cpu()`` of a CPU tensor, ``model.to(device)`` (each
    parameter and buffer once: tied weights once, a model moved again not at all),
    ``t.new_tensor(data)``, ``torch.tensor``/``as_tensor``/``asarray`` with a
    ``device=`` other than a literal ``"cpu"``, a state dict loaded into a model or an
    optimizer on the device (each value, from the host), ``torch.save`` of tensors on
    the device (each storage, to the host), ``torch.load(..., map_location=device)``
    (each tensor, to the device), and every tensor a
    ``torchport.DeviceLoader`` hands over (listed with their bytes). Which way a move
    goes is read from its call site: ``x.to(device)`` copies to the device even when
    ``device`` holds ``"cpu"`` on this machine, ``x.to("cpu")`` to the host. A copy to
    the host read on the same line (``out.cpu().numpy()``, ``.cpu().tolist()``,
    ``.to("cpu").numpy()``) is one device-to-host copy, not a copy and a sync; a read
    of another tensor on that line (``loss.item()``) is a sync of its own. The audit
    itself never synchronizes; it only watches the program do so.
    Tensors the accelerator run keeps on the host are followed (made by a factory that
    names no device or names the host, ``torch.tensor(list)``, ``torch.zeros(n)``,
    ``torch.as_tensor(array)``, ``torch.from_numpy(array)``; copies to the host; what ops
    compute from those alone):
    reading one is no sync, ``x[mask] = v`` with a one-element such ``v`` is
    ``masked_fill_`` (no wait), and ``x[idx] = v`` or ``dst.copy_(v)`` copies it to the
    device. ``t.cpu()`` of a CPU tensor is ``t`` itself here: its result is followed as the
    host copy where nothing else reaches ``t`` after the statement (``(a == b).cpu()``,
    ``z = z.cpu()``); after ``y = x.cpu()`` reads of ``y`` and ``x`` both still count
    as syncs. Tensors computed from one the accelerator run holds on the device are the
    device's: their ``.to(device)`` copies nothing.
    The report is filled in when the block exits::

        with tp.audit() as report:
            train_one_epoch()
        print(report)

    Host work that runs on the host in an accelerator run too is set apart or left out
    (the decisions, one per kind of host work in a training loop, are written in
    ``torchport/diagnose/_host_work.py``): what a ``DataLoader`` does while it fetches
    (sampler, ``Dataset.__getitem__``, transforms, ``collate_fn``) is listed in the
    report's ``data_loading`` part and counts in no total, and its worker processes are
    not watched; an optimizer's step counters (which torch keeps on the host) and
    ``torch.utils.data`` outside a loader are not listed, while what else a ``step()``
    reads is (``LBFGS``'s loss, ``Adafactor``'s norms); a learning-rate scheduler
    reading the loss (``ReduceLROnPlateau.step(loss)``) is. Each event is charged to
    the program's own line: frames of torch, torchport and installed code (the standard
    library, ``site-packages``) are walked past, and the installed line passed through
    is kept as the entry's ``via``.

    Watching costs a few microseconds per aten op (PyTorch's dispatch-mode
    machinery, mostly) and about a microsecond per torch function call (a
    ``TorchFunctionMode``), which shows on small, op-bound steps, and under 20 µs per
    recorded event. For long runs, record
    one step in N; the other steps run unwatched (a batch a ``DeviceLoader`` hands
    over between steps counts with the step it feeds)::

        with tp.audit(every=10) as report:
            for batch in loader:
                with report.step():
                    train_step(batch)

    Only the thread that entered the block is watched, plus autograd's worker
    threads, which inherit its modes (their ops have no Python caller and are
    listed under ``<backward/C++>``). Copies and reads that other threads make
    meanwhile are not counted; the report says how many other threads ran
    (``other_threads``).

    The watched program runs as it would without the audit: no attribute of a torch
    class is set or deleted (the audit watches through a ``TorchFunctionMode`` and a
    ``TorchDispatchMode``), ``torch.jit.script`` and
    ``torch.jit.trace`` run with the audit stepped aside (what they compile runs
    audited afterwards), and warnings point at the program's lines.

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
    recorder = Recorder(every)
    report = AuditReport(every=every, _recorder=recorder)
    crossings = Crossings()
    recorder.open()
    if every == 1:
        recorder.start()
    try:
        with listening(crossings):
            yield report
    except RuntimeError as err:
        if is_out_of_memory(err):
            note_oom(err)
        raise
    finally:
        recorder.stop()
        recorder.close()
        recorder.closed = True
        report._recorder = None
        _fill(report, recorder)
        if crossings.seen and every == 1:
            _fill_measured(report, crossings)
    if every > 1 and report.steps == 0:  # only on a normal exit: never mask an exception
        warnings.warn(
            f"tp.audit(every={every}) recorded nothing: no step was marked with report.step(), "
            "and with every > 1 only marked steps are recorded; wrap each iteration in "
            "`with report.step():`, or use tp.audit() to record the whole block",
            UserWarning,
            stacklevel=3,  # the user's with-statement, past contextlib's __exit__
        )


def _fill(report: AuditReport, recorder: Recorder) -> None:
    """Put what ``recorder`` counted into ``report``, costliest first, with each line's text.

    Host work done while a DataLoader fetched goes to ``data_loading``, marked as
    costing nothing on an accelerator either (it runs on the host there too).
    """
    entries: list[AuditEntry] = []
    loading: list[AuditEntry] = []
    rows = recorder.tally.rows()
    # a read of a tensor on an accelerator, or a copy to or from one: the accelerator run
    accelerated = any(on_accelerator(counted.row) for counted in rows)
    for counted in rows:
        row, where = counted.row, counted.row.where
        if accelerated and row.would_sync and row.phase != DATA_LOADING:
            # this run is the accelerator run: a read of a host tensor waits for nothing,
            # a move that stays on the host copies nothing; no prediction to make
            continue
        code = linecache.getline(where.file, where.line).strip() if where.line else ""
        via = f"{where.via_file}:{where.via_line}" if where.via_file else ""
        host_work = row.would_sync and row.phase == DATA_LOADING
        entry = AuditEntry(
            kind=row.kind,
            label=row.label,
            op=row.op,
            device=row.device,
            would_sync=row.would_sync and not host_work,
            file=where.file,
            line=where.line,
            function=where.function,
            code=code,
            count=counted.times,
            bytes=counted.nbytes,
            via=via,
            # a copy to the device made in data loading is listed as data loading's
            phase=DATA_LOADING if row.phase == LOADING_TO_DEVICE else row.phase,
        )
        (loading if host_work else entries).append(entry)
    order = lambda e: (-e.bytes, -e.count, e.file, e.line, e.label, e.via)  # noqa: E731
    report.entries = sorted(entries, key=order)
    report.data_loading = sorted(loading, key=order)
    report.dropped = recorder.tally.dropped
    report.other_threads = recorder.elsewhere
    report.unpredicted = dict(recorder.tally.unpredicted)
    report.steps = recorder.steps
    report.recorded_steps = recorder.recorded_steps if recorder.steps else 0


def _fill_measured(report: AuditReport, crossings: Crossings) -> None:
    """Replace the prediction with what the device counted (the host work stays listed)."""
    report.entries = [
        AuditEntry(
            kind=row.kind,
            label=row.label,
            op=row.op,
            device=row.device,
            would_sync=False,
            file=row.file,
            line=row.line,
            function=row.function,
            code=linecache.getline(row.file, row.line).strip() if row.line else "",
            count=row.count,
            bytes=row.nbytes,
        )
        for row in measured(crossings.seen)
    ]
    report.measured = True
    # counted where the copies and waits happen: nothing was left unpredicted
    report.unpredicted = {}


# Exported by both torchport and torchport.diagnose; AuditEntry only by the latter,
# so that is the module pickle and repr must name for it.
AuditEntry.__module__ = "torchport"
AuditReport.__module__ = "torchport"
audit.__module__ = "torchport"
