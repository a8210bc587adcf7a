"""Writing a fix's or port's files, once every file of the run is fixed.

No file is written while any file is being fixed (:mod:`torchport.check.files._fixing`):
every fix reads the project as it was when the run began, so what a run writes does not
depend on ``--jobs`` nor on the order of its files, and equals its ``--diff`` applied.

Then the changed files are written one by one, in path order, each by
:func:`~torchport.check.files._write.write_back` (its policy: refused when read-only or
edited since it was read, atomic, owner and mode kept). A file refused is a
:class:`~torchport.check.files._work.FileError` naming it; the findings left in it are the
original's, worked out again here. What a run that stops half-way leaves:

* stopped while files are fixed (Ctrl-C, SIGTERM, SIGKILL, torchport itself crashing): no
  file is written (a rule that crashes on one file is that file's error; the run goes on);
* Ctrl-C while files are written: the file being written is finished, no other is
  started, and each file left as it was is an error (``not written: the run was
  interrupted``), so the report says which files were written and which were not;
* SIGTERM, SIGKILL or a power cut while files are written (a rename and two fsyncs a
  file): the files before it in path order are written, the others not, unsaid (a killed
  write leaves a temp file the next run removes).

Memory: each changed file's new bytes, and the original bytes its stamp keeps for the
edit check, are held from its fix to the end of the run (timm's port: 53 files, 3.8 MB).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator

from torchport.check.files._plan import Plan
from torchport.check.files._work import FileError, Report

__all__ = ["write_fixed"]

_INTERRUPTED = (
    "not written: the run was interrupted (Ctrl-C) while the fixed files were written; this "
    "file is as it was (the files reported fixed were written): run again to fix it"
)


@contextlib.contextmanager
def _interrupts_held() -> Iterator[Callable[[], bool]]:
    """Hold Ctrl-C (SIGINT) while files are written; yields whether one came.

    Only the main thread may set a handler (and only it receives signals): elsewhere
    nothing is held, and nothing needs to be."""
    came: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda number, _frame: came.append(number))
    except ValueError:  # not the main thread
        yield lambda: False
        return
    try:
        yield lambda: bool(came)
    finally:  # (None: a handler not set from Python, which cannot be set back; the default)
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)


def write_fixed(run: Plan, reports: list[Report]) -> None:
    """Write each report's ``to_write``, in path order; a refusal, a failed write or
    Ctrl-C becomes the report's error (see the module docstring)."""
    waiting = sorted((r for r in reports if r.to_write is not None), key=lambda r: r.path)
    if not waiting:
        return
    with _interrupts_held() as interrupted:
        for report in waiting:
            if interrupted():
                report.to_write = None
                report.fix = None
                report.findings = []  # they count in the fixed text, which is not on disk
                report.errors.append(FileError(report.path, _INTERRUPTED))
            else:
                _write_one(run, report)


def _write_one(run: Plan, report: Report) -> None:
    from torchport.check.files._fixing import original_findings
    from torchport.check.files._write import WriteRefused, write_back

    assert report.to_write is not None
    data, stamp = report.to_write
    report.to_write = None  # (its memory goes with it)
    try:
        write_back(report.path, data, stamp)
    except (WriteRefused, OSError) as exc:
        message = str(exc) if isinstance(exc, WriteRefused) else None
        report.errors.append(
            FileError(report.path, message or f"not fixed: cannot write it: {exc}")
        )
        report.fix = None
        # Nothing was written: what is left is everything the original holds.
        group = run.group_of()[report.path]
        ignored = dict(group.files)[report.path]
        report.findings = original_findings(group.template, report.path, ignored, stamp.data)
