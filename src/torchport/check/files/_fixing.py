"""What a worker does with one chunk of files to fix: read each, fix it, say what to write.

Fixing keeps a file's bytes outside the fixes exactly: a UTF-8 BOM, a coding cookie's
encoding and the file's line ending (a file that uses ``\\r\\n`` or a lone ``\\r`` throughout
is fixed as ``\\n`` text and turned back, so inserted lines match); notebooks go through
``files/_notebook.py``.

A worker writes nothing. A writing run's fixed bytes come back in
:attr:`~torchport.check.files._work.Report.to_write`, and
:mod:`torchport.check.files._commit` writes them once every file of the run is fixed: every
file is fixed from the project as it was when the run began, whatever the number of workers
and the order of the files, so a writing run writes exactly what ``--diff`` prints. (A file
written while the others were still being fixed changed what its siblings' fixes read: the
port of a script that star-imports a module found the ``device`` the module's port had just
added, and named its own ``_device``.)
"""

from __future__ import annotations

import os
from pathlib import Path

from torchport.check._engine import check_text
from torchport.check._listing import listed_once
from torchport.check._records import replace
from torchport.check._rule import Finding
from torchport.check._syntax import keep_checked
from torchport.check.files._discovery import inside_roots
from torchport.check.files._work import (
    Chunk,
    FileError,
    FileFix,
    Report,
    _Doc,
    _internal,
    _load,
    _parse,
    _place,
    _ruleset,
    no_cycle_scans,
)

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._engine import RuleSet
    from torchport.check._fix import FixOutcome

__all__ = ["fix_chunk", "original_findings"]


def _encode(doc: _Doc, fixed: str) -> tuple[str, str]:
    """(fixed text, original text) as the file holds them: for writing and diffs."""
    if doc.notebook is not None:
        return doc.notebook.write(fixed), doc.raw
    if doc.newline not in (None, "\n"):
        fixed = fixed.replace("\n", doc.newline)
    return fixed, doc.raw


def _fix_one(chunk: Chunk, path: str, doc: _Doc, outcome: FixOutcome, full: RuleSet) -> Report:
    # imported here, as all that only a fix needs: `check` starts faster without them
    from torchport.check.files._notebook import NotebookError
    from torchport.check.files._remap import to_original
    from torchport.check.files._write import WriteRefused

    if chunk.diff:  # nothing is written: say where what is left lies in the text on disk
        remaining, unplaced = to_original(outcome.remaining, outcome.source, doc.text)
        report = Report(path, findings=_place(doc, remaining, doc.text), unplaced=unplaced)
    else:
        report = Report(path, findings=_place(doc, outcome.remaining, outcome.source))
    report.errors.extend(FileError(path, str(f)) for f in outcome.failures)
    report.held = outcome.held
    if outcome.source == doc.text:
        return report
    fixed = dict(sorted(outcome.fixed.items()))
    try:
        new, old = _encode(doc, outcome.source)
        if chunk.diff or chunk.stdin is not None:
            # A BOM is part of the file's first line: a patch without it does not apply.
            bom = "\ufeff" if doc.encoding == "utf-8-sig" else ""
            diff = replace(outcome, source=bom + new).diff(bom + old, path)  # diff reads source
            encoding = "utf-8" if doc.encoding == "utf-8-sig" else doc.encoding  # BOM: in text
            report.fix = FileFix(
                path, fixed, diff if chunk.diff else "", False, text=bom + new, encoding=encoding
            )
            return report
        if not inside_roots(Path(path), chunk.roots):
            raise WriteRefused(
                "not fixed: a symlink leads here from outside the folder it was given in "
                "(a linked file, or a file in a linked folder); fix never writes through "
                "such a link: run fix on the target's own path instead"
            )
        assert doc.stamp is not None
        report.to_write = (new.encode(doc.encoding), doc.stamp)  # written by files/_commit.py
    except (WriteRefused, NotebookError, UnicodeEncodeError) as exc:
        message = str(exc) if isinstance(exc, WriteRefused | NotebookError) else None
        report.errors.append(FileError(path, message or f"not fixed: cannot write it: {exc}"))
        # Nothing will be written: what is left is everything the original holds.
        left = check_text(doc.text, path, full, settings=chunk.settings)
        report.findings, report.held = _place(doc, left.findings, doc.text), left.held
        return report
    report.fix = FileFix(path, fixed, "", written=True)
    return report


def original_findings(
    chunk: Chunk, path: str, ignored: tuple[str, ...], data: bytes
) -> list[Finding]:
    """Every finding in ``data``, the bytes ``path`` (a file of ``chunk``'s group) was fixed
    from, placed there: what is left in a file a writing run fixed and then did not write."""
    report = Report(path)
    doc = _load(path, report, replace(chunk, stdin=data), fixing=True)
    if doc is None or _parse(path, doc, report) is None:
        return []  # (read and parsed once already: not reached)
    full = _ruleset(chunk.rules, ignored, chunk.scoped)
    return _place(doc, check_text(doc.text, path, full, settings=chunk.settings).findings, doc.text)


@no_cycle_scans()
def fix_chunk(chunk: Chunk) -> list[Report]:
    """Fix every file of ``chunk``; SPEED-only fixes apply per ``chunk.fixable``.

    Nothing is written here (see the module docstring), so the tree holds still for the
    whole chunk: its folders are listed once for it (``_listing.listed_once``), the span
    ``--diff`` runs in. A writing run first removes the temp files a killed run left in
    the folders of the chunk's files that ``fix`` may write, never through a link leading
    out (see :func:`~torchport.check.files._write.remove_stale_temps`).
    """
    if not chunk.diff and chunk.stdin is None:
        _clean_folders(chunk)
    with listed_once():
        return _fix_files(chunk)


def _clean_folders(chunk: Chunk) -> None:
    from torchport.check.files._write import remove_stale_temps

    cleaned: set[str] = set()
    for path, _ in chunk.files:
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in cleaned:
            cleaned.add(folder)
            # Only where fix may write, and never through a symlinked folder.
            direct = os.path.realpath(folder) == folder
            if direct and inside_roots(Path(path), chunk.roots):
                remove_stale_temps(folder)


def _fix_files(chunk: Chunk) -> list[Report]:
    from torchport.check._fix import fix_text  # (a check never loads the fixer: start-up)

    reports: list[Report] = []
    for path, ignored in chunk.files:
        report = Report(path)
        doc = _load(path, report, chunk, fixing=True)
        tree = None if doc is None else _parse(path, doc, report)
        if doc is not None and tree is not None:
            full = _ruleset(chunk.rules, ignored, chunk.scoped)
            fixable = chunk.fixable
            if path in chunk.vendored:  # its findings held (files/_vendored.py): none fixed
                held = set(chunk.vendored_codes)
                codes = fixable if fixable is not None else [r.code for r in chunk.rules]
                fixable = tuple(c for c in codes if c not in held)
            try:
                outcome = fix_text(
                    doc.text, path, full, unsafe=chunk.unsafe, tree=tree,
                    fixable=fixable, settings=chunk.settings,
                )  # fmt: skip
            except Exception as exc:
                report.errors.append(_internal(path, exc, doc.text))
            else:
                keep_checked(path, doc.text, tree)  # for a later view reading it, as a check's
                errors, report = report.errors, _fix_one(chunk, path, doc, outcome, full)
                report.errors[:0] = errors
        reports.append(report)
    return reports
