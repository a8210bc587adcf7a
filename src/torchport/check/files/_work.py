"""What a worker does with one chunk of files: read each, check or fix it, write it back.

Runs in worker processes as well as in the calling one, so everything a chunk needs travels
in the picklable :class:`Chunk`. Per-file problems (unreadable, undecodable, unparsable, a
rule that crashed, a write refused) become :class:`FileError` entries; the other files run.

Fixing keeps a file's bytes outside the fixes exactly: a UTF-8 BOM, a coding cookie's
encoding and the file's line ending (a file that uses ``\\r\\n`` or a lone ``\\r`` throughout
is fixed as ``\\n`` text and turned back, so inserted lines match). Writing goes through
:func:`torchport.check.files._write.write_back`, notebooks through ``files/_notebook.py``.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import os
from collections.abc import Iterator
from pathlib import Path

from torchport.check._engine import CheckOutcome, RuleSet, check_text, check_tree
from torchport.check._file_settings import UNLIMITED, FileSettings
from torchport.check._listing import listed_once, recorded
from torchport.check._noqa import unknown_codes
from torchport.check._patterns import lazy_pattern
from torchport.check._printable import quoted
from torchport.check._records import field, record, replace
from torchport.check._rule import Finding, Rule
from torchport.check._syntax import NewerSyntaxError, keep_checked, parse_source
from torchport.check.files._discovery import inside_roots
from torchport.check.files._reading import (
    MAX_SOURCE_BYTES,
    SourceError,
    Stamp,
    decode_source,
    newline_of,
    read_source,
    too_large_message,
)

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._fix import FixOutcome
    from torchport.check.files._notebook import Notebook

__all__ = [
    "UNUSED_NOQA",
    "Chunk",
    "FileError",
    "FileFix",
    "Report",
    "check_chunk",
    "fix_chunk",
    "no_cycle_scans",
]


@record(frozen=True, order=True)
class FileError:
    """A file that could not be checked or fixed, and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{quoted(self.path)}: error: {self.message}"


@record(frozen=True)
class FileFix:
    """One changed file: fixes applied per code, its diff (with ``diff=True``), whether written.

    ``text`` is the fixed source when it was not written (``stdin`` runs).
    """

    path: str
    fixed: dict[str, int]
    diff: str
    written: bool
    text: str | None = None
    encoding: str = "utf-8"  # the file's: write ``diff`` in it, so `git apply` matches bytes


@record()
class Report:
    """What one file produced.

    ``sources`` holds, for each path its findings name (a notebook's are per
    cell), the text their lines count in, for excerpts. ``unplaced`` counts the
    findings left after a dry-run fix that sit on lines the fix writes, so have
    no position on disk (see :mod:`torchport.check.files._remap`).
    """

    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    lines: int = 0
    fix: FileFix | None = None
    sources: dict[str, str] = field(default_factory=dict)
    unplaced: int = 0
    # (device, inode, size, mtime_ns, ctime_ns) of the file when read, for the cache
    stamp: tuple[int, ...] | None = None
    unused_noqa: list[Finding] = field(default_factory=list)
    reads: dict[str, list[object] | None] = field(default_factory=dict)  # _listing.note
    held: dict[str, int] = field(default_factory=dict)  # CheckOutcome.held


@record(frozen=True)
class Chunk:
    """Files for one worker and everything the run decided about them."""

    rules: tuple[type[Rule], ...]
    files: tuple[tuple[str, tuple[str, ...]], ...]  # (path, per-file ignored codes)
    known: tuple[str, ...] = ()  # every rule code, to judge unknown codes in noqa comments
    roots: tuple[str, ...] = ()
    unsafe: bool = False
    diff: bool = False
    fixable: tuple[str, ...] | None = None  # codes whose fixes apply (None: all)
    # codes run only in their default contexts (check/_default_scope.py)
    scoped: tuple[str, ...] = ()
    # The one file's text (or its bytes, decoded as a file's), given instead of read; never written.
    stdin: str | bytes | None = None
    settings: FileSettings = UNLIMITED  # target torch and noqa policy of these files
    reads: bool = True  # record each file's reads (Report.reads: the check cache's) or not


@record()
class _Doc:
    """A file as the engine sees it: Python text, plus how to turn fixed text back into bytes."""

    raw: str  # the decoded file
    text: str  # the Python the rules see (a notebook's cells; ``\n`` endings when fixing)
    encoding: str
    stamp: Stamp | None
    newline: str | None = None  # the ending ``text`` was normalised from
    notebook: Notebook | None = None


_LINE_END = lazy_pattern(r"\r\n|\r|\n")  # the line ends Python counts


@functools.lru_cache(maxsize=32)
def _ruleset(
    rules: tuple[type[Rule], ...], ignored: tuple[str, ...], scoped: tuple[str, ...] = ()
) -> RuleSet:
    kept = [r for r in rules if not r.code.startswith(ignored)] if ignored else rules
    return RuleSet(kept, scoped)


def _load(path: str, report: Report, chunk: Chunk, *, fixing: bool) -> _Doc | None:
    if isinstance(chunk.stdin, str):
        doc = _Doc(chunk.stdin, chunk.stdin, "utf-8", None)
    elif chunk.stdin is not None:  # bytes: decoded as a file's (its BOM or coding cookie)
        try:
            text, encoding = decode_source(chunk.stdin)
        except SourceError as exc:
            report.errors.append(FileError(path, str(exc)))
            return None
        doc = _Doc(text, text, encoding, None)
    else:
        try:
            source = read_source(path)
        except SourceError as exc:
            report.errors.append(FileError(path, str(exc)))
            return None
        doc = _Doc(source.text, source.text, source.encoding, source.stamp)
        if source.stamp is not None:
            st = source.stamp
            report.stamp = (st.dev, st.ino, st.size, st.mtime_ns, st.ctime_ns)
    if path.endswith(".ipynb"):  # (imported here: a run of .py files never loads it)
        from torchport.check.files._notebook import NotebookError, NotPython, read_notebook

        try:
            doc.notebook = read_notebook(doc.raw)
        except NotebookError as exc:
            report.errors.append(FileError(path, str(exc)))
            return None
        except NotPython:
            return None  # an R or Julia notebook: no Python to check
        doc.text = doc.notebook.source
    elif fixing:
        doc.newline = newline_of(doc.text)
        if doc.newline not in (None, "\n"):
            doc.text = doc.text.replace(doc.newline, "\n")
    text = doc.text
    if len(text) > MAX_SOURCE_BYTES:  # a notebook's cells, or text given on stdin
        report.errors.append(FileError(path, too_large_message(len(text.encode()))))
        return None
    report.lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    for line, code in unknown_codes(text, chunk.known):
        report.errors.append(
            FileError(
                path,
                f"{_where(doc, line)}: `# noqa` names {code}, which is no torchport rule, so it "
                f"silences nothing; correct the code (`torchport check --explain CODE` "
                f"describes one) or remove it",
            )
        )
    return doc


def _where(doc: _Doc, line: int) -> str:
    """``line 3``, or ``cell 2, line 1`` in a notebook."""
    if doc.notebook is None:
        return f"line {line}"
    cell, in_cell = doc.notebook.locate(doc.text, line)
    return f"cell {cell}, line {in_cell}"


def _place(doc: _Doc, findings: list[Finding], text: str) -> list[Finding]:
    """Notebook findings name their cell: path ``nb.ipynb:cell 3``, lines within the cell."""
    nb = doc.notebook
    if nb is None:
        return findings
    out = []
    locate = nb.locator(text)
    for f in findings:
        cell, line = locate(f.line)
        end = f.end_line - (f.line - line)
        out.append(replace(f, path=f"{f.path}:cell {cell}", line=line, end_line=end))
    return out


def _sources(doc: _Doc, path: str, findings: list[Finding]) -> dict[str, str]:
    """The text each finding's lines count in: the file's, or in a notebook its cell's.

    A notebook's own path maps to the text its fixes' offsets count in (the cells
    joined), where a finding has a fix: ``--show-fixes`` applies them there.
    """
    if not findings:
        return {}
    nb = doc.notebook
    if nb is None:
        return {path: doc.text}
    wanted = {f.path for f in findings}
    cells: dict[str, list[str]] = {}
    locate = nb.locator(doc.text)
    for number, line in enumerate(_LINE_END.split(doc.text), 1):
        name = f"{path}:cell {locate(number)[0]}"
        if name in wanted:
            cells.setdefault(name, []).append(line)
    out = {name: "\n".join(lines) for name, lines in cells.items()}
    if any(f.fix is not None and f.fix.edits for f in findings):
        out[path] = doc.text
    return out


UNUSED_NOQA = ("TP000", "unused-noqa")  # the code and name unused-noqa reports carry


def _unused_noqa(
    path: str, outcome: CheckOutcome, chunk: Chunk, ignored: tuple[str, ...]
) -> list[Finding]:
    """A finding for each ``# noqa`` code that silenced nothing that ran (see NoqaMap.unused)."""
    if outcome.noqa is None or not outcome.noqa.lines:
        return []
    ran = [r.code for r in chunk.rules if not r.code.startswith(ignored or ("\0",))]
    code, name = UNUSED_NOQA
    return [
        Finding(
            path,
            line,
            col,
            line,
            col + len(unused),
            code,
            name,
            f"`# noqa: {unused}` silences nothing on this line any more: remove {unused} "
            f"from the comment",
        )
        for line, col, unused in outcome.noqa.unused(ran)
    ]


def _parse(path: str, doc: _Doc, report: Report) -> ast.Module | None:
    try:
        return parse_source(doc.text, path)
    except SyntaxError as exc:
        where = f" at line {exc.lineno}, column {exc.offset}" if exc.lineno else ""
        if exc.lineno and doc.notebook is not None:
            where = f" at {_where(doc, exc.lineno)}, column {exc.offset}"
        message = f"cannot parse: {exc.msg}{where}; fix the syntax error first"
        if isinstance(exc, NewerSyntaxError):  # not the file's mistake: say which Python reads it
            message = f"cannot parse{where}: {exc.msg}"
    except ValueError as exc:  # null bytes
        message = f"cannot parse: {exc}"
    except RecursionError:
        message = "cannot parse: nested too deeply for Python's parser"
    except MemoryError:
        message = _out_of_memory("parse", doc.text)
    report.errors.append(FileError(path, message))
    return None


def _internal(path: str, exc: Exception, text: str = "") -> FileError:
    """An engine or context crash on one file: reported, and the run goes on."""
    if isinstance(exc, MemoryError):
        return FileError(path, _out_of_memory("check", text))
    return FileError(path, f"internal error: {exc!r}; this is a torchport bug, please report it")


def _out_of_memory(stage: str, text: str) -> str:
    """What to say when memory runs out on one file (a process memory limit, say)."""
    size = len(text.encode("utf-8", "replace")) / 2**20
    return (
        f"cannot {stage} it: out of memory ({size:.1f} MiB of Python; parsing and checking "
        f"take 100-200 bytes of memory per byte of source); raise the memory limit, run "
        f"with fewer --jobs, or split the file"
    )


_MAX_BROKEN_CELLS = 50


def _skip_broken_cells(doc: _Doc, path: str, report: Report) -> None:
    """Leave out the notebook cells that do not parse, each reported; the rest is checked."""
    nb = doc.notebook
    if nb is None:
        return
    for _ in range(_MAX_BROKEN_CELLS):
        try:
            ast.parse(doc.text, filename=path)
        except SyntaxError as exc:
            if not exc.lineno:
                return  # _parse reports it
            cell, line = nb.locate(doc.text, exc.lineno)
            report.errors.append(
                FileError(
                    path,
                    f"cell {cell} not checked: cannot parse: {exc.msg} at line {line}, "
                    f"column {exc.offset}; fix the syntax error (the other cells were checked)",
                )
            )
            nb.skip(cell - 1)
            doc.text = nb.source
        except (ValueError, RecursionError, MemoryError):
            return  # _parse reports it
        else:
            return


@contextlib.contextmanager
def no_cycle_scans() -> Iterator[None]:
    """Pause the cyclic garbage collector for a chunk; it resumes, as it was, after.

    Each file builds and drops a syntax tree: hundreds of thousands of container objects
    that reference counting frees by itself. The collector would scan them again and again
    (about a seventh of a check's time on real code, 1,800 collections for 176,000 lines).
    Trees hold no cycles; the few a file leaves (a scope map's scopes) wait for its next run.
    A run of several chunks in this process pauses it once for all of them
    (``_paths._map``): what a port keeps from chunk to chunk (the siblings'
    trees parsed ahead) is then not scanned again at every chunk's end.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@no_cycle_scans()
@listed_once()  # a check writes nothing: the tree's folders hold still for the chunk
def check_chunk(chunk: Chunk) -> list[Report]:
    """Check every file of ``chunk``."""
    reports: list[Report] = []
    for path, ignored in chunk.files:
        report = Report(path)
        reports.append(report)
        doc = _load(path, report, chunk, fixing=False)
        if doc is not None:
            _skip_broken_cells(doc, path, report)
        tree = None if doc is None else _parse(path, doc, report)
        if doc is None or tree is None:
            continue
        try:
            rules = _ruleset(chunk.rules, ignored, chunk.scoped)
            with recorded(chunk.reads) as report.reads:
                outcome = check_tree(doc.text, path, tree, rules, settings=chunk.settings)
        except Exception as exc:
            report.errors.append(_internal(path, exc, doc.text))
            continue
        keep_checked(path, doc.text, tree)  # for a later project view reading this text
        report.findings = _place(doc, outcome.findings, doc.text)
        report.unused_noqa = _place(doc, _unused_noqa(path, outcome, chunk, ignored), doc.text)
        report.sources = _sources(doc, path, [*report.findings, *report.unused_noqa])
        report.held = outcome.held
        report.errors.extend(FileError(path, str(f)) for f in outcome.failures)
    return reports


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
    from torchport.check.files._write import WriteRefused, write_back

    if chunk.diff:  # nothing is written: say where what is left lies in the text on disk
        remaining, unplaced = to_original(outcome.remaining, outcome.source, doc.text)
        report = Report(path, findings=_place(doc, remaining, doc.text), unplaced=unplaced)
    else:
        report = Report(path, findings=_place(doc, outcome.remaining, outcome.source))
    report.errors.extend(FileError(path, str(f)) for f in outcome.failures)
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
        write_back(path, new.encode(doc.encoding), doc.stamp)
    except (WriteRefused, NotebookError, OSError, UnicodeEncodeError) as exc:
        message = str(exc) if isinstance(exc, WriteRefused | NotebookError) else None
        report.errors.append(FileError(path, message or f"not fixed: cannot write it: {exc}"))
        # Nothing was written: what is left is everything the original holds.
        left = check_text(doc.text, path, full, settings=chunk.settings).findings
        report.findings = _place(doc, left, doc.text)
        return report
    report.fix = FileFix(path, fixed, "", written=True)
    return report


@no_cycle_scans()
def fix_chunk(chunk: Chunk) -> list[Report]:
    """Fix every file of ``chunk``; SPEED-only fixes apply per ``chunk.fixable``.

    Writing runs first remove the temp files a killed run left in the folders
    of the chunk's files that ``fix`` may write, never through a link leading out
    (see :func:`~torchport.check.files._write.remove_stale_temps`).
    """
    if chunk.diff or chunk.stdin is not None:
        # Nothing is written: the tree's folders hold still for the chunk, as a check's.
        with listed_once():
            return _fix_files(chunk)
    return _fix_files(chunk)


def _fix_files(chunk: Chunk) -> list[Report]:
    from torchport.check._fix import fix_text  # (a check never loads the fixer: start-up)
    from torchport.check.files._write import remove_stale_temps

    reports: list[Report] = []
    cleaned: set[str] = set()
    for path, ignored in chunk.files:
        if not chunk.diff and chunk.stdin is None:
            folder = os.path.dirname(os.path.abspath(path))
            if folder not in cleaned:
                cleaned.add(folder)
                # Only where fix may write, and never through a symlinked folder.
                direct = os.path.realpath(folder) == folder
                if direct and inside_roots(Path(path), chunk.roots):
                    remove_stale_temps(folder)
        report = Report(path)
        doc = _load(path, report, chunk, fixing=True)
        tree = None if doc is None else _parse(path, doc, report)
        if doc is not None and tree is not None:
            full = _ruleset(chunk.rules, ignored, chunk.scoped)
            try:
                # A writing run changes the tree only between files: a file's fix is a span
                with listed_once():  # (a dry run's: fix_chunk's span holds them all)
                    outcome = fix_text(
                        doc.text, path, full, unsafe=chunk.unsafe, tree=tree,
                        fixable=chunk.fixable, settings=chunk.settings,
                    )  # fmt: skip
            except Exception as exc:
                report.errors.append(_internal(path, exc, doc.text))
            else:
                keep_checked(path, doc.text, tree)  # for a later view reading it, as a check's
                errors, report = report.errors, _fix_one(chunk, path, doc, outcome, full)
                report.errors[:0] = errors
        reports.append(report)
    return reports
