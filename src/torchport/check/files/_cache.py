"""The check cache: what a file produced, kept under its path and stat stamp.

A second ``torchport check`` of a tree where nothing changed reads no file: each
file's stamp (device, inode, size, modification and change times) is compared
with the one recorded when it was last checked, and a match replays that
check's findings, errors, line count and excerpt texts. What the cache is
keyed on, so that nothing stale is replayed:

* per file: its path as given and where that leads from the working folder
  (``a.py`` run from two folders is two files), its device, inode, size,
  modification and change times as the worker read them (not as discovery saw
  them, so a file edited mid-run is re-checked next time), and the rule codes
  its per-file ignores switch off. The change time (``ctime``) is what makes an
  edit visible whatever else matches: ``touch -d``, ``cp -p``, ``rsync -t`` and
  archive tools set a file's modification time back to an old value, but every
  write sets the change time to now, and nothing but the clock can set it back;
  a file put in another's place (a rename, an editor's save) has a new inode.
  A file modified in the last two seconds is not kept at all: file systems
  stamp times in ticks of a few milliseconds, so an edit of the same size in
  the same tick would look unchanged (git's "racy" entries, handled as git does:
  by the modification time, so a file dated back by a test or an archive tool
  is kept at once; its change time still tells any later edit);
* per cache (every answer in it): the other files the answers read or looked for
  (a sibling module, the checkout's ``setup.py``, a star-imported module, a
  ``conftest.py``, a folder listed: ``check/_listing.note``), each with its state
  then (stamp, a folder's names, nothing there). One that differs now (edited,
  deleted, appeared where an import or ``setup.py`` was looked for, a folder that
  gained a module) drops every answer: which of them read it is not kept, since a
  reader that answers from memory notes its paths for the whole run, not one file;
* per run (the cache file's name): torchport's version, the checker's own
  source files (size and time of each, so an edited development install starts
  afresh), Python's version (``ast`` differs), the rules that run, the codes
  known to ``noqa``, and the file settings (target torch, foreign-noqa policy).

The cache lives in ``.torchport_cache/`` beside the ``pyproject.toml`` that holds
the configuration (else the working folder), ``$TORCHPORT_CACHE_DIR`` when set;
it holds a ``.gitignore`` and a ``CACHEDIR.TAG`` so that neither git nor backup
tools pick it up. It is JSON, never pickle: a cache committed to a repository by
someone else must not run code. A cache that cannot be read is ignored and one
that cannot be written is skipped; neither changes a result.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from torchport import __version__
from torchport.check._file_settings import UNLIMITED, FileSettings
from torchport.check._listing import same
from torchport.check._records import fields_of
from torchport.check._rule import Edit, Finding, Fix, FixSafety, Rule
from torchport.check.files._work import FileError, Report

__all__ = ["CACHE_FOLDER", "CheckCache", "cache_folder"]

CACHE_FOLDER = ".torchport_cache"
_ENV = "TORCHPORT_CACHE_DIR"
_RACY_NS = 2_000_000_000
_READS = "\0reads"  # the entry of the other files' states (no path starts with NUL)
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"  # https://bford.info/cachedir/
    "# torchport's check cache; see torchport.check.files._cache\n"
)


def cache_folder(root: Path | None) -> Path:
    """Where the cache of a run configured in ``root`` (None: no config file) lives."""
    override = os.environ.get(_ENV)
    if override:
        return Path(override)
    return (root if root is not None else Path.cwd()) / CACHE_FOLDER


_STAMP = ("st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns")


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    """What the cache compares: as :class:`~torchport.check.files._work.Report` records it."""
    return tuple(getattr(st, name) for name in _STAMP)


def _unchanged(reads: object) -> bool:
    """Whether every path in ``reads`` (path -> state, as kept) is as it was (none kept: yes)."""
    if reads is None:
        return True
    if not isinstance(reads, dict):
        return False
    for path, then in reads.items():
        if not isinstance(then, list | None):
            return False
        if not same(path, then):
            return False
    return True


def _checker_fingerprint() -> str:
    """Size and time of every file of the checker itself: changed code, fresh cache."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        with contextlib.suppress(OSError):
            st = path.stat()
            digest.update(f"{path.relative_to(package)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()


def _run_key(
    rules: Iterable[type[Rule]],
    known: Iterable[str],
    settings: FileSettings,
    scoped: Iterable[str] = (),
) -> str:
    parts = [
        ",".join(scoped),  # rules run only in their default contexts
        repr(settings),
        __version__,
        _checker_fingerprint(),
        sys.version,
        ",".join(f"{r.__module__}.{r.__qualname__}:{r.code}" for r in rules),
        ",".join(sorted(known)),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _finding_to_json(f: Finding) -> dict[str, object]:
    # dataclasses.asdict's answer (every field is a str, an int or the fix, set below)
    data: dict[str, object] = {name: getattr(f, name) for name in fields_of(Finding)}
    if f.fix is not None:
        data["fix"] = {
            "edits": [[e.start, e.end, e.text] for e in f.fix.edits],
            "safety": f.fix.safety.value,
            "changes": f.fix.changes,
        }
    return data


def _finding_from_json(data: dict[str, object]) -> Finding:
    raw = data.pop("fix")
    fix = None
    if isinstance(raw, dict):
        edits = tuple(Edit(int(s), int(e), str(t)) for s, e, t in raw["edits"])
        fix = Fix(edits, FixSafety(raw["safety"]), str(raw["changes"]))
    return Finding(**data, fix=fix)  # type: ignore[arg-type]


class CheckCache:
    """The cached reports of one run's settings; :meth:`save` writes what changed."""

    def __init__(
        self,
        folder: Path,
        rules: Iterable[type[Rule]],
        known: Iterable[str],
        settings: FileSettings = UNLIMITED,
        scoped: Iterable[str] = (),
    ) -> None:
        self.folder = folder
        self.file = folder / __version__ / f"{_run_key(rules, known, settings, scoped)}.json"
        self._entries: dict[str, dict[str, object]] = {}
        self._dirty = False
        with contextlib.suppress(OSError, ValueError):
            loaded = json.loads(self.file.read_text(encoding="utf-8"))
            if isinstance(loaded, dict) and _unchanged(loaded.get(_READS)):
                self._entries = loaded
        # what this cache's answers read besides their own files (path -> state then)
        self._reads: dict[str, list[object] | None] = dict(self._entries.pop(_READS, {}))  # type: ignore[arg-type]
        self._mixed = False  # one path seen in two states in this run: keep nothing

    @staticmethod
    def _key(path: str, ignored: tuple[str, ...]) -> str:
        return f"{os.path.abspath(path)}\0{path}\0{','.join(ignored)}"

    def lookup(self, path: str, ignored: tuple[str, ...]) -> Report | None:
        """The report of ``path`` if it has not changed since it was cached, else None."""
        entry = self._entries.get(self._key(path, ignored))
        if entry is None:
            return None
        try:
            stamp = _stamp(os.stat(path))
            if list(stamp) != entry["stamp"]:
                return None
            return Report(
                path,
                findings=[_finding_from_json(dict(f)) for f in entry["findings"]],  # type: ignore[attr-defined]
                errors=[FileError(path, str(m)) for m in entry["errors"]],  # type: ignore[attr-defined]
                lines=int(entry["lines"]),  # type: ignore[call-overload]
                sources=dict(entry["sources"]),  # type: ignore[call-overload]
                stamp=stamp,
                unused_noqa=[_finding_from_json(dict(f)) for f in entry["unused_noqa"]],  # type: ignore[attr-defined]
                held={str(c): int(n) for c, n in entry["held"].items()},  # type: ignore[attr-defined]
            )
        except (OSError, KeyError, TypeError, ValueError):
            return None  # changed, gone, or an entry this version cannot read: check again

    def store(self, report: Report, ignored: tuple[str, ...]) -> None:
        """Keep ``report`` for its file (only a report read from a file, with no crash in it)."""
        if report.stamp is None or any("internal error" in e.message for e in report.errors):
            return
        if len(report.stamp) != len(_STAMP) or time.time_ns() - report.stamp[3] < _RACY_NS:
            return  # modified just now: see the module docstring
        for path, seen in report.reads.items():
            if self._reads.setdefault(path, seen) != seen:
                self._mixed = True
        self._entries[self._key(report.path, ignored)] = {
            "stamp": list(report.stamp),
            "findings": [_finding_to_json(f) for f in report.findings],
            "errors": [e.message for e in report.errors],
            "lines": report.lines,
            "sources": report.sources,
            "unused_noqa": [_finding_to_json(f) for f in report.unused_noqa],
            "held": report.held,
        }
        self._dirty = True

    def save(self) -> None:
        """Write the cache atomically; skipped (silently) where the folder is not writable."""
        if not self._dirty or self._mixed:
            return  # nothing new, or a file read changed during the run (check it again)
        import tempfile  # here: a run that changes nothing never loads it (start-up)

        with contextlib.suppress(OSError):
            self.file.parent.mkdir(parents=True, exist_ok=True)
            for name, text in ((".gitignore", "*\n"), ("CACHEDIR.TAG", _TAG)):
                marker = self.folder / name
                if not marker.exists():
                    marker.write_text(text, encoding="utf-8")
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({_READS: self._reads, **self._entries}, fh, separators=(",", ":"))
                os.replace(tmp, self.file)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
