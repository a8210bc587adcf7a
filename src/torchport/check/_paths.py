"""Running the checker over many files: worker processes, per-file errors, atomic writes.

Files are split into chunks and, from :data:`PARALLEL_MIN_FILES` files and
:data:`PARALLEL_MIN_BYTES` bytes up, checked by a
:class:`~concurrent.futures.ProcessPoolExecutor` (one worker per usable core by
default); fewer or smaller files are checked in this process, where starting
workers would cost more than it saves. Results are sorted by (path, line, col,
code), so the output does not depend on how the work was split.

A file that cannot be read, decoded or parsed, and a rule that crashes on a
file, become :class:`FileError` entries naming the file; the other files are
still checked, and the exit code is 2.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from torchport.check._config import Config, find_config, load_config
from torchport.check._engine import RuleSet, check_tree
from torchport.check._files import (
    Discovery,
    SourceError,
    discover,
    excluded,
    inside_roots,
    read_source,
)
from torchport.check._fix import FixOutcome, fix_text
from torchport.check._rule import Finding, Rule
from torchport.check._select import available_rules, normalise_selectors, select_rules
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


@dataclass(frozen=True, slots=True, order=True)
class FileError:
    """A file that could not be checked or fixed, and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: error: {self.message}"


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


@dataclass(frozen=True, slots=True)
class FileFix:
    """One changed file: fixes applied per code, its diff (with ``diff=True``), whether written.

    ``text`` is the fixed source when it was not written (``stdin`` runs).
    """

    path: str
    fixed: dict[str, int]
    diff: str
    written: bool
    text: str | None = None


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


@dataclass(slots=True)
class _Report:
    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    lines: int = 0
    fix: FileFix | None = None


@dataclass(frozen=True, slots=True)
class _Chunk:
    rules: tuple[type[Rule], ...]
    files: tuple[tuple[str, tuple[str, ...]], ...]  # (path, per-file ignored codes)
    roots: tuple[str, ...] = ()
    unsafe: bool = False
    diff: bool = False
    stdin: str | None = None  # the one file's text, given instead of read; never written


@functools.lru_cache(maxsize=32)
def _ruleset(rules: tuple[type[Rule], ...], ignored: tuple[str, ...]) -> RuleSet:
    return (
        RuleSet(r for r in rules if not r.code.startswith(ignored)) if ignored else RuleSet(rules)
    )


def _load(path: str, report: _Report, stdin: str | None) -> tuple[str, str] | None:
    if stdin is not None:
        text, encoding = stdin, "utf-8"
    else:
        try:
            source = read_source(path)
        except SourceError as exc:
            report.errors.append(FileError(path, str(exc)))
            return None
        text, encoding = source.text, source.encoding
    report.lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return text, encoding


_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


def _parse(path: str, text: str, report: _Report) -> ast.Module | None:
    try:
        return ast.parse(text, filename=path)
    except SyntaxError as exc:
        where = f" at line {exc.lineno}, column {exc.offset}" if exc.lineno else ""
        message = f"cannot parse: {exc.msg}{where}; fix the syntax error first"
    except ValueError as exc:  # null bytes
        message = f"cannot parse: {exc}"
    except (RecursionError, MemoryError):
        message = "cannot parse: nested too deeply for Python's parser"
    report.errors.append(FileError(path, message))
    return None


def _internal(path: str, exc: Exception) -> FileError:
    """An engine or context crash on one file: reported, and the run goes on."""
    return FileError(path, f"internal error: {exc!r}; this is a torchport bug, please report it")


def _check_chunk(chunk: _Chunk) -> list[_Report]:
    reports: list[_Report] = []
    for path, ignored in chunk.files:
        report = _Report(path)
        reports.append(report)
        loaded = _load(path, report, chunk.stdin)
        if loaded is None:
            continue
        tree = _parse(path, loaded[0], report)
        if tree is None:
            continue
        try:
            outcome = check_tree(loaded[0], path, tree, _ruleset(chunk.rules, ignored))
        except Exception as exc:
            report.errors.append(_internal(path, exc))
            continue
        report.findings = outcome.findings
        report.errors.extend(FileError(path, str(f)) for f in outcome.failures)
    return reports


def _write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path``'s real file with ``data`` via a temp file beside it; keep mode and owner."""
    real = Path(os.path.realpath(path))
    info = os.stat(real)
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".torchport")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        if hasattr(os, "chown"):
            with contextlib.suppress(OSError):  # only root may give a file to someone else
                os.chown(tmp, info.st_uid, info.st_gid)
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _fix_one(
    chunk: _Chunk, path: str, outcome: FixOutcome, original: str, encoding: str
) -> _Report:
    report = _Report(path, findings=outcome.remaining)
    report.errors.extend(FileError(path, str(f)) for f in outcome.failures)
    if outcome.source == original:
        return report
    fixed = dict(sorted(outcome.fixed.items()))
    if chunk.diff or chunk.stdin is not None:
        diff = outcome.diff(original, path) if chunk.diff else ""
        report.fix = FileFix(path, fixed, diff, written=False, text=outcome.source)
        return report
    if not inside_roots(Path(path), chunk.roots):
        report.errors.append(
            FileError(
                path,
                "not fixed: it is a symlink to a file outside the given paths; "
                "fix the target instead",
            )
        )
        return report
    try:
        _write_atomic(Path(path), outcome.source.encode(encoding))
    except (OSError, UnicodeEncodeError) as exc:
        report.errors.append(FileError(path, f"cannot write the fixed file: {exc}"))
        return report
    report.fix = FileFix(path, fixed, "", written=True)
    return report


def _fix_chunk(chunk: _Chunk) -> list[_Report]:
    reports: list[_Report] = []
    for path, ignored in chunk.files:
        report = _Report(path)
        loaded = _load(path, report, chunk.stdin)
        tree = None if loaded is None else _parse(path, loaded[0], report)
        if loaded is not None and tree is not None:
            ruleset = _ruleset(chunk.rules, ignored)
            try:
                outcome = fix_text(loaded[0], path, ruleset, unsafe=chunk.unsafe, tree=tree)
            except Exception as exc:
                report.errors.append(_internal(path, exc))
            else:
                report = _fix_one(chunk, path, outcome, *loaded)
        reports.append(report)
    return reports


def _map(fn: Callable[[_T], list[_R]], chunks: Sequence[_T], jobs: int) -> list[_R]:
    if jobs > 1 and len(chunks) > 1:
        try:
            with ProcessPoolExecutor(max_workers=min(jobs, len(chunks))) as pool:
                return [r for part in pool.map(fn, chunks) for r in part]
        except (BrokenProcessPool, OSError, NotImplementedError):
            pass  # no worker processes here (sandbox, no /dev/shm): do it in this process
    return [r for chunk in chunks for r in fn(chunk)]


def _total_size(files: Sequence[tuple[str, tuple[str, ...]]]) -> int:
    total = 0
    for path, _ in files:
        with contextlib.suppress(OSError):
            total += os.stat(path).st_size
    return total


def _plan(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    extend_select: Sequence[str] | None,
    config: Config | str | os.PathLike[str] | None,
    jobs: int | None,
    stdin: str | None,
    **options: object,
) -> tuple[list[_Chunk], list[FileError], tuple[type[Rule], ...], int]:
    if isinstance(paths, str | os.PathLike):
        paths = [paths]  # one path, not a sequence of one-letter paths
    if stdin is not None and len(paths) != 1:
        raise ConfigError(f"text from stdin needs exactly one path to name it, got {len(paths)}")
    if config is None:
        config = find_config(paths)
    elif not isinstance(config, Config):
        config = load_config(config)
    rules = select_rules(
        select if select is not None else config.select,
        (*config.ignore, *(ignore or ())),
        (*config.extend_select, *(extend_select or ())),
        origin=config.origin,
    )
    known = sorted(r.code for r in available_rules())
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
    roots = tuple(str(p) for p in paths)
    chunks = [
        _Chunk(rules, tuple(files[i : i + size]), roots, stdin=stdin, **options)  # type: ignore[arg-type]
        for i in range(0, len(files), size)
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
    stdin: str | None = None,
) -> CheckResult:
    """Check files and folders (see :mod:`torchport.check._files` for which files).

    ``select`` replaces the config's ``select``; ``ignore`` and ``extend_select``
    add to it. ``config`` is a :class:`Config`, a TOML file with a
    ``[tool.torchport]`` table, or ``None`` to find the nearest ``pyproject.toml``.
    ``jobs``: worker processes (``None``: one per core when there are many files).
    ``stdin``: the text of the one path in ``paths`` (an editor's buffer, ``-``),
    checked instead of reading the file.

    Raises:
        ConfigError: bad configuration or an unknown rule selector.
    """
    chunks, errors, rules, jobs = _plan(paths, select, ignore, extend_select, config, jobs, stdin)
    reports = _map(_check_chunk, chunks, jobs)
    findings = [f for r in reports for f in r.findings]
    findings.sort(key=lambda f: (f.path, f.line, f.col, f.code))
    errors.extend(e for r in reports for e in r.errors)
    return CheckResult(findings, sorted(errors), rules, len(reports), sum(r.lines for r in reports))


def fix_paths(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    unsafe: bool = False,
    diff: bool = False,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    extend_select: Sequence[str] | None = None,
    config: Config | str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    stdin: str | None = None,
) -> FixResult:
    """Apply fixes to files in place, atomically, only where the text changes.

    Each changed file is written to a temp file in its folder and moved over the
    original (mode bits kept); a file reached through a symlink that leads
    outside the given paths is never written. With ``diff=True`` nothing is
    written and each :class:`FileFix` carries a unified diff. Running it twice
    changes nothing the second time. With ``stdin`` (the text of the one path
    in ``paths``) nothing is written: the fixed text is in :attr:`FileFix.text`.

    Raises:
        ConfigError: bad configuration or an unknown rule selector.
    """
    chunks, errors, rules, jobs = _plan(
        paths, select, ignore, extend_select, config, jobs, stdin, unsafe=unsafe, diff=diff
    )
    reports = _map(_fix_chunk, chunks, jobs)
    remaining = [f for r in reports for f in r.findings]
    remaining.sort(key=lambda f: (f.path, f.line, f.col, f.code))
    errors.extend(e for r in reports for e in r.errors)
    changed = sorted((r.fix for r in reports if r.fix is not None), key=lambda f: f.path)
    return FixResult(changed, remaining, sorted(errors), rules, len(reports))
