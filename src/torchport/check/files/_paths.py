"""Running the checker over many files: discovery, rule policy, worker processes, results.

Files are split into chunks and, from :data:`PARALLEL_MIN_FILES` files and
:data:`PARALLEL_MIN_BYTES` bytes up, checked by a
:class:`~concurrent.futures.ProcessPoolExecutor` (one worker per usable core by
default); fewer or smaller files are checked in this process, where starting
workers would cost more than it saves. Results are sorted by (path, line, col,
code), so the output does not depend on how the work was split. What a worker
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
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from torchport.check._rule import Finding, Rule
from torchport.check._select import (
    available_rules,
    fixable_rules,
    normalise_selectors,
    select_rules,
)
from torchport.check.files._config import Config, find_config, load_config
from torchport.check.files._discovery import Discovery, discover, excluded
from torchport.check.files._work import Chunk, FileError, FileFix, check_chunk, fix_chunk
from torchport.errors import ConfigError

__all__ = [
    "PARALLEL_MIN_BYTES",
    "PARALLEL_MIN_FILES",
    "CheckResult",
    "FileError",
    "FileFix",
    "FixResult",
    "check_paths",
    "fix_paths",
]

# Below these, starting worker processes (~0.1 s) costs more than it saves (measured
# with benchmarks/bench_check_throughput.py: ~60,000 lines, ~2 MB, per CPU-second).
PARALLEL_MIN_FILES = 32
PARALLEL_MIN_BYTES = 1_000_000
_CHUNK_MAX = 64

_T = TypeVar("_T")
_R = TypeVar("_R")


@dataclass(slots=True)
class CheckResult:
    """Findings of a run, the files that could not be checked, and the rules that ran."""

    findings: list[Finding]
    errors: list[FileError]
    rules: tuple[type[Rule], ...]
    files: int = 0
    lines: int = 0

    @property
    def exit_code(self) -> int:
        """0 clean, 1 findings, 2 when a file could not be checked."""
        return 2 if self.errors else 1 if self.findings else 0


@dataclass(slots=True)
class FixResult:
    """Changed files, the findings left after fixing, and the files that failed.

    ``remaining`` positions refer to the fixed text (with ``diff=True``: to the
    text the diff would produce).
    """

    changed: list[FileFix]
    remaining: list[Finding]
    errors: list[FileError]
    rules: tuple[type[Rule], ...]
    files: int = 0

    @property
    def exit_code(self) -> int:
        """0 when all is clean (with ``diff``: nothing would change), 1 if not, 2 on errors."""
        if self.errors:
            return 2
        would_change = any(f.diff for f in self.changed)
        return 1 if self.remaining or would_change else 0


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)  # the run is gone: nobody will read this worker's results


def _die_with_parent(parent: int) -> None:
    """Worker initializer: end this worker as soon as the process that started it ends."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    if os.getppid() != parent:
        os._exit(1)  # the parent died before the line above took effect
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what is queued and end the workers now (not after their current chunk)."""
    processes = list((pool._processes or {}).values())  # no public handle on the workers
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, AttributeError):
            process.terminate()


def _map(fn: Callable[[_T], list[_R]], chunks: Sequence[_T], jobs: int) -> list[_R]:
    if jobs > 1 and len(chunks) > 1:
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
                results = [r for part in pool.map(fn, chunks) for r in part]
            except BrokenProcessPool:
                _stop(pool)  # a worker died (killed, out of memory): do it in this process
            except BaseException:
                _stop(pool)
                raise
            else:
                pool.shutdown()
                return results
    return [r for chunk in chunks for r in fn(chunk)]


def _total_size(files: Sequence[tuple[str, tuple[str, ...]]]) -> int:
    total = 0
    for path, _ in files:
        with contextlib.suppress(OSError):
            total += os.stat(path).st_size
    return total


def _explicit(select: Sequence[str] | None, extend: Sequence[str], config: Config) -> list[str]:
    """The selectors the user wrote (command line, else config), for the SPEED fix policy."""
    chosen = select if select is not None else config.select
    return [*(chosen or ()), *config.extend_select, *extend]


def _plan(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    extend_select: Sequence[str] | None,
    config: Config | str | os.PathLike[str] | None,
    jobs: int | None,
    template: Chunk,
    *,
    speed: bool = False,
) -> tuple[list[Chunk], list[FileError], tuple[type[Rule], ...], int]:
    if isinstance(paths, str | os.PathLike):
        paths = [paths]  # one path, not a sequence of one-letter paths
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ConfigError(
            f"jobs is {jobs!r}; expected a whole number of worker processes, 1 or more "
            "(or none given, for one per core)"
        )
    stdin = template.stdin
    if stdin is not None and len(paths) != 1:
        raise ConfigError(f"text from stdin needs exactly one path to name it, got {len(paths)}")
    if config is None:
        config = find_config(paths)
    elif not isinstance(config, Config):
        config = load_config(config)
    chosen = select if select is not None else config.select
    extended = (*config.extend_select, *(extend_select or ()))
    if chosen is not None and not any(c.strip() for c in chosen) and not extended:
        where = "--select" if select is not None else f"select in {config.origin}"
        raise ConfigError(
            f"{where} is empty, so no rule would run and every file would pass; expected "
            f"rule codes (TP101), prefixes (TP1) or ALL: list some, or remove the empty "
            f"select to run the default rules"
        )
    ignored = (*config.ignore, *(ignore or ()))
    rules = select_rules(chosen, ignored, extended, origin=config.origin)
    if not rules and (chosen is not None or extended):
        # `--select ALL --ignore ALL`: rules asked for and all taken away; a run that
        # checks nothing must not pass. (Ignoring every default rule is left alone.)
        raise ConfigError(
            f"the selection leaves no rule to run (select {list(chosen or ['the defaults'])}, "
            f"ignore {list(ignored)}), so every file would pass unchecked; expected at least "
            "one rule: narrow the ignores or widen the selection"
        )
    known = tuple(sorted(r.code for r in available_rules()))
    for pattern, codes in config.per_file_ignores:
        normalise_selectors(codes, known, f"per-file-ignores {pattern!r} of {config.origin}")
    if stdin is None:
        found = discover(paths, excludes=config.exclude_globs())
    else:  # the text is given: nothing to discover, the path only names it
        name = Path(paths[0])
        skip = excluded(name, is_dir=False, excludes=config.exclude_globs())
        found = Discovery([] if skip else [name], [])
    errors = [FileError(str(p), message) for p, message in found.errors]
    files: list[tuple[str, tuple[str, ...]]] = []
    for path in found.files:
        ignored = tuple(c.strip().upper() for c in config.ignores_for(path))
        files.append((str(path), ("TP",) if "ALL" in ignored else ignored))
    # The cores this process may run on (a container's limit), not the host's count.
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if jobs is None:
        many = len(files) >= PARALLEL_MIN_FILES and _total_size(files) >= PARALLEL_MIN_BYTES
        jobs = (cpus or 1) if many else 1
    size = max(1, min(_CHUNK_MAX, -(-len(files) // (max(jobs, 1) * 4))))
    fixable = fixable_rules(
        rules, explicit=_explicit(select, extend_select or (), config), speed=speed
    )
    template = replace(
        template,
        rules=rules,
        known=known,
        roots=tuple(str(p) for p in paths),
        fixable=None if len(fixable) == len(rules) else tuple(r.code for r in fixable),
    )
    chunks = [
        replace(template, files=tuple(files[i : i + size])) for i in range(0, len(files), size)
    ]
    return chunks, errors, rules, max(jobs, 1)


def check_paths(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    extend_select: Sequence[str] | None = None,
    config: Config | str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    stdin: str | bytes | None = None,
) -> CheckResult:
    """Check files and folders (see :mod:`torchport.check.files._discovery` for which files).

    ``select`` replaces the config's ``select``; ``ignore`` and ``extend_select``
    add to it. ``config`` is a :class:`Config`, a TOML file with a
    ``[tool.torchport]`` table, or ``None`` to find the nearest ``pyproject.toml``.
    ``jobs``: worker processes (``None``: one per core when there are many files).
    ``stdin``: the text of the one path in ``paths`` (an editor's buffer, ``-``),
    checked instead of reading the file; bytes are decoded as a file's (a BOM, a
    coding cookie, else UTF-8; undecodable bytes are that path's error).
    Notebooks (``.ipynb``) are checked cell by cell; their findings' paths read
    ``nb.ipynb:cell 3``.

    Raises:
        ConfigError: bad configuration, an unknown rule selector, or no rule selected.
    """
    chunks, errors, rules, jobs = _plan(
        paths, select, ignore, extend_select, config, jobs, Chunk((), (), stdin=stdin)
    )
    reports = _map(check_chunk, chunks, jobs)
    findings = [f for r in reports for f in r.findings]
    findings.sort(key=lambda f: (f.path, f.line, f.col, f.code))
    errors.extend(e for r in reports for e in r.errors)
    return CheckResult(findings, sorted(errors), rules, len(reports), sum(r.lines for r in reports))


def fix_paths(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    unsafe: bool = False,
    diff: bool = False,
    speed: bool = False,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    extend_select: Sequence[str] | None = None,
    config: Config | str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    stdin: str | bytes | None = None,
) -> FixResult:
    """Apply fixes to files in place, only where the text changes; never damage or lose a file.

    Which fixes: those of DEVICE and SAFETY rules (:class:`~torchport.check.Intent`);
    SPEED rules' fixes only with ``speed=True`` or when the user selected them
    explicitly (a code or prefix in ``select``/``extend_select`` or the config's,
    not ``ALL``); unsafe fixes only with ``unsafe=True``. Unapplied fixes stay
    in :attr:`FixResult.remaining`.

    How files are written is :mod:`torchport.check.files._write`'s policy: read-only
    files and files edited while this runs are refused (a :class:`FileError`,
    exit 2), mode, owner, setuid bits and hard links are kept, and a file reached
    through a symlink that leads outside the given paths is never written. With
    ``diff=True`` nothing is written and each :class:`FileFix` carries a unified
    diff (with the file's BOM, so ``git apply`` takes it). Running it twice
    changes nothing the second time. With ``stdin`` (the text, or bytes, of the one
    path in ``paths``) nothing is written: the fixed text is in :attr:`FileFix.text`,
    to be encoded in :attr:`FileFix.encoding`.

    Raises:
        ConfigError: bad configuration, an unknown rule selector, or no rule selected.
    """
    template = Chunk((), (), unsafe=unsafe, diff=diff, stdin=stdin)
    chunks, errors, rules, jobs = _plan(
        paths, select, ignore, extend_select, config, jobs, template, speed=speed
    )
    reports = _map(fix_chunk, chunks, jobs)
    remaining = [f for r in reports for f in r.findings]
    remaining.sort(key=lambda f: (f.path, f.line, f.col, f.code))
    errors.extend(e for r in reports for e in r.errors)
    changed = sorted((r.fix for r in reports if r.fix is not None), key=lambda f: f.path)
    return FixResult(changed, remaining, sorted(errors), rules, len(reports))
