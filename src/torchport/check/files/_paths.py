"""Running the checker over many files: discovery, rule policy, worker processes, results.

Files are split into chunks and checked by a
:class:`~concurrent.futures.ProcessPoolExecutor` with ``jobs`` workers, or in this process
(``jobs=1``). A fix or port by default takes one worker per usable core that no other
process keeps busy (the load average's; one process below two) from
:data:`PARALLEL_MIN_FILES` files and :data:`PARALLEL_MIN_BYTES` bytes up; a check by
default runs in this process (:func:`check_paths`: what each file asks of its project is
most of a check, and every worker would work it out again). Results are sorted by (path,
line, col, code), so the output does not depend on how the work was split. What a worker
does with a chunk lives in :mod:`torchport.check.files._work`.

Workers die with the run: each one asks Linux to send it SIGTERM when its
parent dies (``PR_SET_PDEATHSIG``) and, everywhere, watches its parent from a
thread, so a ``check`` killed with SIGTERM/SIGKILL leaves no worker behind; an
exception in the parent (Ctrl-C) terminates the workers before it propagates.

A file that cannot be read, decoded, parsed or written, and a rule that
crashes on a file, become :class:`FileError` entries naming the file; the
other files are still checked, and the exit code is 2.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from torchport.check._listing import listed_once
from torchport.check._records import field, record, replace
from torchport.check._rule import Finding, Rule
from torchport.check.files._config import Config
from torchport.check.files._config_search import ConfigResolver
from torchport.check.files._plan import PARALLEL_MIN_BYTES, PARALLEL_MIN_FILES, Plan, chunked, plan
from torchport.check.files._work import (
    Chunk,
    FileError,
    FileFix,
    Report,
    check_chunk,
    no_cycle_scans,
)

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    import threading
    from concurrent.futures import ProcessPoolExecutor
    from typing import TypeVar

    from torchport.check.files._cache import CheckCache

    _T = TypeVar("_T")
    _R = TypeVar("_R")

__all__ = [
    "PARALLEL_MIN_BYTES",
    "PARALLEL_MIN_FILES",
    "CheckResult",
    "FileError",
    "FileFix",
    "FixResult",
    "Progress",
    "check_paths",
    "fix_paths",
]


@record()
class CheckResult:
    """Findings of a run, the files that could not be checked, and the rules that ran.

    ``sources`` maps each path a finding names (``nb.ipynb:cell 3`` for a
    notebook's) to the text its lines and edits count in, for excerpts and
    ``--show-fixes``. ``cached`` counts the files whose report came from the cache.
    ``held`` maps each file where a default run left out findings of rules naming CUDA as
    of low value there (the code needs CUDA anyway, a form of a rule left out:
    ``_select.HELD``) to their count per code (``_engine.CheckOutcome.held``): not listed,
    and not in :attr:`findings`, but said in the summary, so that such a file is never
    called clean. A default run's findings in vendored code nothing in the project imports
    (``files/_vendored.py``) are counted there too, each under ``"vendored " + code``.
    """

    findings: list[Finding]
    errors: list[FileError]
    rules: tuple[type[Rule], ...]
    files: int = 0
    lines: int = 0
    sources: dict[str, str] = field(default_factory=dict)
    cached: int = 0
    unused_noqa: list[Finding] = field(default_factory=list)
    # The codes whose fixes a plain `torchport fix` with these settings applies (a SPEED
    # rule's only where the selection names it; unsafe fixes still need --unsafe).
    plain_fix: tuple[str, ...] = ()
    held: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 clean, 1 findings, 2 when a file could not be checked."""
        return 2 if self.errors else 1 if self.findings else 0


@record()
class FixResult:
    """Changed files, the findings left after fixing, and the files that failed.

    ``remaining`` positions refer to the text the file now holds: the fixed text
    where it was written (or, for ``stdin``, printed), the file as it is on disk
    with ``diff=True``; there, ``unplaced`` counts the findings left on lines the
    fixes would write, which have no place on disk (the diff shows those lines), and
    ``unplaced_in`` names the files they are in.
    """

    changed: list[FileFix]
    remaining: list[Finding]
    errors: list[FileError]
    rules: tuple[type[Rule], ...]
    files: int = 0
    unplaced: int = 0
    unplaced_in: tuple[str, ...] = ()
    # As CheckResult.plain_fix (without --speed), for the hints; None: not known.
    plain_fix: tuple[str, ...] | None = None
    # As CheckResult.held, of the files as fixed: what a default run left out, counted.
    held: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 when all is clean (with ``diff``: nothing would change), 1 if not, 2 on errors."""
        if self.errors:
            return 2
        would_change = any(f.diff for f in self.changed)
        return 1 if self.remaining or would_change else 0


def _vendored_held(run: Plan, reports: list[Report]) -> list[Report]:
    """``reports`` with the findings a default run holds in vendored code nothing imports
    (``Chunk.vendored``, files/_vendored.py) moved to their ``held`` counts, each code as
    ``HELD_MARK + code``."""
    codes_at = {p: g.template.vendored_codes for g in run.groups for p in g.template.vendored}
    if not codes_at:
        return reports
    from torchport.check.files._vendored import HELD_MARK

    out = []
    for report in reports:
        codes = codes_at.get(report.path, ())
        moved = [f for f in report.findings if f.code in codes]
        if moved:
            held = dict(report.held)
            for finding in moved:
                held[HELD_MARK + finding.code] = held.get(HELD_MARK + finding.code, 0) + 1
            kept = [f for f in report.findings if f.code not in codes]
            report = replace(report, findings=kept, held=held)
        out.append(report)
    return out


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)  # the run is gone: nobody will read this worker's results


def _die_with_parent(parent: int) -> None:
    """Worker initializer: end this worker as soon as the process that started it ends.

    Ctrl-C reaches every process of the terminal's group; the parent alone answers it
    (it ends the workers), so a worker ignores it rather than print its own traceback.
    The worker's cyclic collector stays paused for its whole life, as a run in one process
    pauses it once for all its chunks (``_map``): resumed between chunks, its first scans
    went over everything the worker had kept so far (each module's facts, the kept trees) to
    free almost nothing (0.3 s of CPU in 2.3 s on detectron2 with two workers). The pool
    ends the worker with the run.
    """
    import gc
    import signal
    import threading

    gc.disable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    if os.getppid() != parent:
        os._exit(1)  # the parent died before the line above took effect
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what is queued and end the workers now (not after their current chunk).

    The pool's manager thread then finds its workers gone and, on Python 3.11, fails
    to mark the futures just cancelled as broken (``InvalidStateError``): that
    traceback would be all a user sees after Ctrl-C, so it is kept quiet here.
    """
    import threading

    processes = list((pool._processes or {}).values())  # no public handle on the workers
    manager = getattr(pool, "_executor_manager_thread", None)
    previous = threading.excepthook

    from concurrent.futures import InvalidStateError

    def quiet(args: threading.ExceptHookArgs) -> None:
        if args.thread is not manager or not isinstance(args.exc_value, InvalidStateError):
            previous(args)

    threading.excepthook = quiet
    try:
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            with contextlib.suppress(OSError, AttributeError):
                process.terminate()
        if isinstance(manager, threading.Thread):
            manager.join(timeout=5)
    finally:
        threading.excepthook = previous


Progress = Callable[[int, int], None]
"""Told ``(files done, files in all)`` as chunks finish; for a progress display."""


def _sized(chunk: object) -> int:
    return len(getattr(chunk, "files", ()))


def _map(
    fn: Callable[[_T], list[_R]],
    chunks: Sequence[_T],
    jobs: int,
    progress: Progress | None = None,
    *,
    span: bool = False,
) -> list[_R]:
    total = sum(_sized(c) for c in chunks)
    done = 0

    def tell(chunk: _T) -> None:
        nonlocal done
        done += _sized(chunk)
        if progress is not None:
            progress(done, total)

    if jobs > 1 and len(chunks) > 1:
        # Imported here: the pool costs a one-file run a tenth of its start-up.
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        try:
            pool = ProcessPoolExecutor(
                max_workers=min(jobs, len(chunks)),
                initializer=_die_with_parent,
                initargs=(os.getpid(),),
            )
        except (OSError, NotImplementedError):
            pass  # no worker processes here (sandbox, no /dev/shm): do it in this process
        else:
            try:
                results = []
                for chunk, part in zip(chunks, pool.map(fn, chunks), strict=True):
                    results.extend(part)
                    tell(chunk)
            except BrokenProcessPool:
                done = 0
                _stop(pool)  # a worker died (killed, out of memory): do it in this process
            except BaseException:
                _stop(pool)
                raise
            else:
                pool.shutdown()
                return results
    results = []
    # `span`: the chunks run here share one span of folder listings (check_paths' exits_after).
    # One pause of the cycle collector for every chunk run here, not one per chunk:
    # a port keeps its siblings' trees (parsed ahead) from chunk to chunk, and the
    # collector scanned all of them again after each chunk (about 5% of a port).
    with no_cycle_scans(), listed_once() if span else contextlib.nullcontext():
        for chunk in chunks:
            results.extend(fn(chunk))
            tell(chunk)
    return results


def _cached_check(
    run: Plan,
    cache: bool | str | os.PathLike[str],
    progress: Progress | None,
    exits_after: bool = False,
) -> tuple[list[Report], int]:
    """Replay what the cache holds for unchanged files; check the rest and remember them.

    Each group of files (one settings) has its cache beside its configuration (or in
    ``cache`` when that names a folder), keyed on its rules and settings.
    """
    if not cache or run.stdin is not None:
        # (no report's reads are kept: none are recorded)
        chunks = [replace(c, reads=False) for c in chunked(run)]
        return _map(check_chunk, chunks, run.jobs, progress, span=exits_after), 0
    # here: a run with no cache (`--no-cache`, stdin) never loads it (start-up)
    from torchport.check.files._cache import CheckCache, cache_folder

    stores: dict[int, CheckCache] = {}
    hits: list[Report] = []
    misses: list[tuple[str, tuple[str, ...]]] = []
    store_of: dict[str, CheckCache] = {}
    for group in run.groups:
        source = group.config.source
        folder = cache_folder(source.parent if source else None) if cache is True else Path(cache)
        store = stores.get(id(group))
        if store is None:
            t = group.template
            store = stores[id(group)] = CheckCache(folder, t.rules, t.known, t.settings, t.scoped)
        for path, ignored in group.files:
            store_of[path] = store
            report = store.lookup(path, ignored)
            if report is None:
                misses.append((path, ignored))
            else:
                hits.append(report)
    total = len(run.files)

    def told(done: int, _: int) -> None:
        if progress is not None:
            progress(len(hits) + done, total)

    fresh = _map(check_chunk, chunked(run, misses), run.jobs, told)
    ignored_of = dict(misses)
    for report in fresh:
        store_of[report.path].store(report, ignored_of.get(report.path, ()))
    for store in stores.values():
        store.save()
    return hits + fresh, len(hits)


def check_paths(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    extend_select: Sequence[str] | None = None,
    config: Config | ConfigResolver | str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    stdin: str | bytes | None = None,
    cache: bool | str | os.PathLike[str] = False,
    progress: Progress | None = None,
    target_torch: str | None = None,
    exits_after: bool = False,
) -> CheckResult:
    """Check files and folders (see :mod:`torchport.check.files._discovery` for which files).

    ``select`` replaces the config's ``select``; ``ignore`` and ``extend_select``
    add to it. ``config`` is a :class:`Config`, a TOML file with a
    ``[tool.torchport]`` table, or ``None`` to find the nearest ``pyproject.toml``.
    ``jobs``: worker processes (``None``: 1, this process; ``-j`` opts in). What a file asks
    of its project (each imported module's facts, the names star imports bring, the
    packaging files read) is most of a check and is worked out once per process: every
    worker worked nearly all of it out again for its share of the files (detectron2, two
    workers: 372 module facts where one process makes 198), so more workers multiplied the
    CPU (x1.6-2 on detectron2, Lightning, timm, fairseq) and, on two cores, saved no wall
    time.
    ``stdin``: the text of the one path in ``paths`` (an editor's buffer, ``-``),
    checked instead of reading the file (bytes are decoded as a file's: a BOM, a
    coding cookie, else UTF-8). Notebooks (``.ipynb``) are checked cell by cell;
    their findings' paths read ``nb.ipynb:cell 3``. ``cache``: ``True`` keeps each
    file's results in ``.torchport_cache`` beside the configuration (see
    :mod:`torchport.check.files._cache`), a path keeps them there; a file unchanged
    since is not read again. ``progress`` is told ``(done, total)`` files as the run
    goes. ``exits_after``: the process checks nothing more (the program's own check):
    without a cache, the chunks checked in this process share one span of folder listings
    (``_listing.listed_once``: module lookups and kept answers' checks once for the run,
    where each chunk opened its own; detectron2 ran 11, ~6% of its check). The answers are
    the same (a check writes nothing). Not with a cache, nor in a process that checks again:
    a span notes each folder it looked for once, so a whole run's span notes less in the
    records the cache and the kept answers hand to a later run.

    Raises:
        ConfigError: bad configuration or arguments (``jobs`` below 1, ``-`` among
            other paths), an unknown rule selector, or no rule left to run.
    """
    template = Chunk((), (), stdin=stdin)
    jobs = 1 if jobs is None else jobs
    run = plan(
        paths, select, ignore, extend_select, config, jobs, template, target_torch=target_torch
    )
    reports, cached = _cached_check(run, cache, progress, exits_after)
    reports = _vendored_held(run, reports)  # here: the cache keeps each file's own answer
    findings = [f for r in reports for f in r.findings]
    findings.sort(key=lambda f: (f.path, f.line, f.col, f.code))
    errors = run.errors + [e for r in reports for e in r.errors]
    sources = {name: text for r in reports for name, text in r.sources.items()}
    lines = sum(r.lines for r in reports)
    unused = sorted((f for r in reports for f in r.unused_noqa), key=lambda f: (f.path, f.line))
    held = {r.path: r.held for r in sorted(reports, key=lambda r: r.path) if r.held}
    return CheckResult(
        findings, sorted(errors), run.rules, len(reports), lines, sources, cached, unused,
        run.plain_fix, held,
    )  # fmt: skip


def fix_paths(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    unsafe: bool = False,
    diff: bool = False,
    speed: bool = False,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    extend_select: Sequence[str] | None = None,
    config: Config | ConfigResolver | str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    stdin: str | bytes | None = None,
    progress: Progress | None = None,
    target_torch: str | None = None,
    report_only: Sequence[str] = (),
) -> FixResult:
    """Apply fixes to files in place, only where the text changes; never damage or lose a file.

    Which fixes: those of DEVICE and SAFETY rules (:class:`~torchport.check.Intent`);
    SPEED rules' fixes only with ``speed=True`` or when the user selected them
    explicitly (a code or prefix in ``select``/``extend_select`` or the config's,
    not ``ALL``); unsafe fixes only with ``unsafe=True``; never those of the codes in
    ``report_only`` (reported only: the port's kept CUDA-or-CPU choices, TP109). Unapplied
    fixes stay in :attr:`FixResult.remaining`.

    No file is written until every file is fixed (:mod:`torchport.check.files._commit`):
    each fix reads the project as it was, so the files written are, for any ``jobs`` and
    any order of ``paths``, exactly what ``diff=True`` shows. How files are written is
    :mod:`torchport.check.files._write`'s policy: read-only
    files and files edited while this runs are refused (a :class:`FileError`,
    exit 2), mode, owner, setuid bits and hard links are kept, and a file reached
    through a symlink that leads outside the given paths is never written. With
    ``diff=True`` nothing is written and each :class:`FileFix` carries a unified
    diff (with the file's BOM, so ``git apply`` takes it); what would be left is
    placed in the file as it is on disk. Running it twice changes nothing the
    second time. With ``stdin`` (the text of the one path in ``paths``) nothing is
    written: the fixed text is in :attr:`FileFix.text`. ``progress`` as for
    :func:`check_paths`, and so are ``config`` and ``target_torch``.

    Raises:
        ConfigError: bad configuration or arguments, an unknown rule selector, or
            no rule left to run.
    """
    template = Chunk((), (), unsafe=unsafe, diff=diff, stdin=stdin)
    run = plan(
        paths, select, ignore, extend_select, config, jobs, template,
        speed=speed, target_torch=target_torch, report_only=report_only,
    )  # fmt: skip
    from torchport.check.files._commit import write_fixed  # (a check loads neither: start-up)
    from torchport.check.files._fixing import fix_chunk

    reports = _map(fix_chunk, chunked(run), run.jobs, progress)
    write_fixed(run, reports)  # once every file is fixed (nothing to write with diff or stdin)
    reports = _vendored_held(run, reports)
    remaining = [f for r in reports for f in r.findings]
    remaining.sort(key=lambda f: (f.path, f.line, f.col, f.code))
    errors = run.errors + [e for r in reports for e in r.errors]
    changed = sorted((r.fix for r in reports if r.fix is not None), key=lambda f: f.path)
    unplaced = sum(r.unplaced for r in reports)
    unplaced_in = tuple(sorted(r.path for r in reports if r.unplaced))
    held = {r.path: r.held for r in sorted(reports, key=lambda r: r.path) if r.held}
    return FixResult(
        changed, remaining, sorted(errors), run.rules, len(reports), unplaced, unplaced_in,
        run.plain_fix, held,
    )  # fmt: skip
