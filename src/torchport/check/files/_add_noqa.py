"""``torchport check --add-noqa``: silence every current finding where it is, to adopt the checker.

On a codebase with a thousand findings, the way in is to accept today's code and
hold new code to the rules: each finding gets ``# noqa: CODES`` on its line
(:func:`torchport.check._noqa.add_noqa_comments` says how a comment joins what
is there). A line that cannot hold a comment (it ends inside a string or after
a backslash) passes the finding on to another line that silences it: the last
line of its statement (a ``\\``-continued call, a string over several lines),
then the statement's other lines, then the finding's own. Notebooks are marked
cell by cell, as ``fix`` writes them.

Each file is checked, marked and checked again before it is written, and what
holds the file to its meaning is enforced, not assumed:

* the marked text parses to the same syntax tree, type comments included
  (``# type: int`` and ``# type: ignore[...]`` stay where type checkers read
  them), or the file is left as it was and reported;
* a finding that no line could silence is reported with its line (exit 2), and
  the file still gets the comments that did silence the others.

Writing goes through the fixer's safe writes (a file edited meanwhile is refused).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Sequence

from torchport.check._engine import RuleSet, check_text
from torchport.check._file_settings import FileSettings
from torchport.check._noqa import add_noqa_comments
from torchport.check._records import field, record
from torchport.check._rule import Finding
from torchport.check.files._config import Config
from torchport.check.files._notebook import Notebook, NotebookError, NotPython, read_notebook
from torchport.check.files._paths import Progress, _map
from torchport.check.files._plan import chunked, plan
from torchport.check.files._reading import SourceError, newline_of, read_source
from torchport.check.files._work import Chunk, FileError
from torchport.check.files._write import WriteRefused, write_back

__all__ = ["NoqaResult", "add_noqa_paths"]


@record()
class NoqaResult:
    """How many ``# noqa`` comments went into which files; the files that could not take them."""

    added: dict[str, int] = field(default_factory=dict)  # path -> findings silenced
    errors: list[FileError] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 when every finding was silenced, 2 when one could not be."""
        return 2 if self.errors else 0


class _Refused(Exception):
    """The file is left as it was; the message says why."""


# mypy's reading of what follows ``# type: ignore``: the codes in brackets, then any comment.
_IGNORE_CODES = re.compile(r"\s*(\[[^\]#]*\])?")


def _type_text(comment: str) -> str:
    """A type comment as a type checker reads it (a trailing ``# note`` is not part of it)."""
    for mode in ("eval", "func_type"):
        try:
            return ast.dump(ast.parse(comment, mode=mode))
        except SyntaxError:
            continue
    return comment.split("#")[0].strip()


def _program(text: str) -> str:
    """What the text means to Python and to type checkers: comments other than types left out."""
    try:
        tree = ast.parse(text, type_comments=True)
    except SyntaxError:  # a misplaced type comment: no type checker reads this file's
        return ast.dump(ast.parse(text))
    for node in ast.walk(tree):
        comment = getattr(node, "type_comment", None)
        if comment:
            node.type_comment = _type_text(comment)  # type: ignore[attr-defined]
    for ignore in tree.type_ignores:
        match = _IGNORE_CODES.match(ignore.tag)
        ignore.tag = (match[1] if match else None) or ""
    return ast.dump(tree)


def _simple_statements(tree: ast.Module) -> list[tuple[int, int]]:
    """(first, last) lines of each simple statement, as the engine's noqa spans count them."""
    compound = (
        ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While,
        ast.If, ast.With, ast.AsyncWith, ast.Try, ast.Match, getattr(ast, "TryStar", ast.Try),
    )  # fmt: skip
    return [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt) and not isinstance(node, compound)
    ]


def _candidates(finding: Finding, statements: list[tuple[int, int]]) -> list[int]:
    """Lines whose comment would silence ``finding``, the best place first."""
    holding = [s for s in statements if s[0] <= finding.line <= s[1]]
    lines = [finding.line]
    if holding:
        first, last = min(holding, key=lambda s: s[1] - s[0])  # the innermost
        lines += [last, *range(first, last)]
    lines += range(finding.line + 1, finding.end_line + 1)
    return list(dict.fromkeys(lines))


def _marked(text: str, findings: list[Finding]) -> str:
    """``text`` with a comment for each finding, on the first of its lines that takes one."""
    if newline_of(text) == "\r":  # the tokenizer splits lines at "\n" only; Python reads
        return _marked(text.replace("\r", "\n"), findings).replace("\n", "\r")  # all three
    statements = _simple_statements(ast.parse(text))
    options = [_candidates(f, statements) for f in findings]
    chosen = [0] * len(findings)
    while True:
        codes: dict[int, set[str]] = {}
        for f, lines, i in zip(findings, options, chosen, strict=True):
            codes.setdefault(lines[i], set()).add(f.code)
        marked, refused = add_noqa_comments(text, codes)
        moved = False
        for n, lines in enumerate(options):
            if lines[chosen[n]] in refused and chosen[n] + 1 < len(lines):
                chosen[n] += 1
                moved = True
        if not moved:
            return marked


def _where(notebook: Notebook | None, text: str, lines: set[int]) -> str:
    if notebook is None:
        return f"line {', '.join(str(n) for n in sorted(lines))}"
    locate = notebook.locator(text)
    return ", ".join(f"cell {c}, line {n}" for c, n in sorted({locate(n) for n in lines}))


_MAX_BROKEN_CELLS = 50


def _parsed(path: str, text: str, notebook: Notebook | None) -> tuple[str, list[FileError]]:
    """The program ``text`` holds; a notebook's cells that do not parse are left out, named.

    Raises:
        _Refused: ``text`` does not parse (a notebook: not even without a broken cell).
    """
    errors: list[FileError] = []
    for _ in range(_MAX_BROKEN_CELLS):
        try:
            return _program(text), errors
        except SyntaxError as exc:
            if notebook is None or not exc.lineno:
                where = f" at line {exc.lineno}" if exc.lineno else ""
                raise _Refused(f"cannot parse it{where}: {exc.msg}") from exc
            cell, line = notebook.locate(text, exc.lineno)
            message = f"cell {cell} not marked: cannot parse: {exc.msg} at line {line}"
            errors.append(FileError(path, f"{message}; the other cells were marked"))
            notebook.skip(cell - 1)  # as check leaves it out
            text = notebook.source
        except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, deep nesting
            raise _Refused(f"cannot parse it: {exc!r}") from exc
    raise _Refused(f"more than {_MAX_BROKEN_CELLS} cells do not parse")


def _mark(path: str, rules: RuleSet, settings: FileSettings) -> tuple[int, list[FileError]]:
    """Mark one file; (findings silenced, what could not be)."""
    try:
        source = read_source(path)
        notebook = read_notebook(source.text) if path.endswith(".ipynb") else None
        before, errors = _parsed(
            path, source.text if notebook is None else notebook.source, notebook
        )
    except (SourceError, NotebookError, _Refused) as exc:
        return 0, [FileError(path, f"no noqa added: {exc}")]
    except NotPython:
        return 0, []  # an R or Julia notebook: nothing of ours in it
    text = source.text if notebook is None else notebook.source
    findings = check_text(text, path, rules, settings=settings).findings
    if not findings:
        return 0, errors
    try:
        marked = _marked(text, findings)
        if marked == text:
            written = source.text  # no line could take a comment
        elif notebook is None:
            written = marked
        else:  # check what the notebook's JSON will hold, as a later check reads it
            written = notebook.write(marked)
            skipped = notebook.skipped
            notebook = read_notebook(written)
            for index in sorted(skipped):
                notebook.skip(index)
            marked = notebook.source
        if _program(marked) != before:  # never: a comment landed inside code or a string
            raise _Refused("the marked text would be a different program (a torchport bug)")
        left = check_text(marked, path, rules, settings=settings).findings
        if written != source.text:
            assert source.stamp is not None
            write_back(path, written.encode(source.encoding), source.stamp)
    except (_Refused, NotebookError, WriteRefused, SyntaxError, ValueError, OSError) as exc:
        message = str(exc) if isinstance(exc, _Refused | WriteRefused | NotebookError) else exc
        return 0, [*errors, FileError(path, f"no noqa added: {message}")]
    if left:
        errors.append(
            FileError(
                path,
                f"{_where(notebook, marked, {f.line for f in left})}: no `# noqa` comment can "
                f"silence {', '.join(sorted({f.code for f in left}))} there (no line of the "
                f"statement ends outside a string or a backslash continuation); silence it "
                f"by hand, e.g. with `# torchport: noqa: CODE` on a line of its own for the "
                f"whole file",
            )
        )
    return len(findings) - len(left), errors


def _mark_chunk(chunk: Chunk) -> list[tuple[str, int, list[FileError]]]:
    out = []
    for path, ignored in chunk.files:
        rules = RuleSet(
            (r for r in chunk.rules if not r.code.startswith(ignored or ("\0",))), chunk.scoped
        )
        out.append((path, *_mark(path, rules, chunk.settings)))
    return out


def add_noqa_paths(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    extend_select: Sequence[str] | None = None,
    config: Config | str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> NoqaResult:
    """Add ``# noqa: CODES`` for every finding of the selected rules, in place.

    Arguments as for :func:`~torchport.check.check_paths`. After it, a check with
    the same settings finds nothing but what :attr:`NoqaResult.errors` names
    (findings no comment can reach, files that could not be read or written).

    Raises:
        ConfigError: bad configuration or arguments, or no rule left to run.
    """
    run = plan(paths, select, ignore, extend_select, config, jobs, Chunk((), ()))
    result = NoqaResult(errors=list(run.errors))
    for path, added, errors in _map(_mark_chunk, chunked(run), run.jobs, progress):
        result.errors.extend(errors)
        if added:
            result.added[path] = added
    result.errors.sort()
    return result
