"""What a worker does with one chunk of files: read each and check it; the records of a run.

Runs in worker processes as well as in the calling one, so everything a chunk needs travels
in the picklable :class:`Chunk`. Per-file problems (unreadable, undecodable, unparsable, a
rule that crashed, a write refused) become :class:`FileError` entries; the other files run.
How a file is read (:func:`_load`: its encoding, line ending, notebook cells) is shared with
fixing, :mod:`torchport.check.files._fixing`.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
from collections.abc import Iterator

from torchport.check._engine import CheckOutcome, RuleSet, check_tree
from torchport.check._file_settings import UNLIMITED, FileSettings
from torchport.check._listing import listed_once, recorded
from torchport.check._noqa import unknown_codes
from torchport.check._patterns import lazy_pattern
from torchport.check._printable import quoted
from torchport.check._records import field, record, replace
from torchport.check._rule import Finding, Rule
from torchport.check._syntax import NewerSyntaxError, keep_checked, parse_source
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
    from torchport.check.files._notebook import Notebook

__all__ = [
    "UNUSED_NOQA",
    "Chunk",
    "FileError",
    "FileFix",
    "Report",
    "check_chunk",
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
    # A writing fix's: the fixed bytes and the stamp of those they replace (files/_commit.py)
    to_write: tuple[bytes, Stamp] | None = None


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
    # A default run's files of vendored code nothing in the project imports
    # (files/_vendored.py), and the codes whose findings it holds there: counted, not listed.
    vendored: tuple[str, ...] = ()
    vendored_codes: tuple[str, ...] = ()


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
