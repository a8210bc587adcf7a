"""``torchport check --add-noqa``: silence every current finding where it is, to adopt the checker.

On a codebase with a thousand findings, the way in is to accept today's code and
hold new code to the rules: each line with findings gets ``# noqa: CODES``
(:func:`torchport.check._noqa.add_noqa_comments` says where a comment can go).
Each file is checked, marked and checked again before it is written: the marked
text must parse to the same syntax tree (comments never reach it) and hold no
finding of the rules that ran, or the file is left as it was and reported.
Writing goes through the fixer's safe writes (a file edited meanwhile is
refused). Notebooks are left to the user (a comment in a cell is easy to add by
hand, and their JSON is not ours to reflow).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from torchport.check._engine import RuleSet, check_text
from torchport.check._noqa import add_noqa_comments
from torchport.check.files._config import Config
from torchport.check.files._discovery import SourceError, read_source
from torchport.check.files._paths import Progress, _map
from torchport.check.files._plan import chunked, plan
from torchport.check.files._work import Chunk, FileError
from torchport.check.files._write import WriteRefused, write_back

__all__ = ["NoqaResult", "add_noqa_paths"]


@dataclass(slots=True)
class NoqaResult:
    """How many ``# noqa`` comments went into which files; the files that could not take them."""

    added: dict[str, int] = field(default_factory=dict)  # path -> findings silenced
    errors: list[FileError] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 when every finding was silenced, 2 when a file could not be marked."""
        return 2 if self.errors else 0


def _mark(path: str, rules: RuleSet) -> tuple[int, FileError | None]:
    if path.endswith(".ipynb"):
        return 0, None  # see the module docstring
    try:
        source = read_source(path)
        findings = check_text(source.text, path, rules).findings
    except (SourceError, SyntaxError, ValueError) as exc:
        return 0, FileError(path, f"no noqa added: cannot read or parse it: {exc}")
    if not findings:
        return 0, None
    codes: dict[int, set[str]] = {}
    for f in findings:
        codes.setdefault(f.line, set()).add(f.code)
    try:
        marked, refused = add_noqa_comments(source.text, codes)
        # Comments never reach the syntax tree: a different tree means a comment
        # landed inside code or a string, and the file must not be written.
        if ast.dump(ast.parse(marked)) != ast.dump(ast.parse(source.text)):
            raise ValueError("the marked text is a different program")
        left = check_text(marked, path, rules).findings
    except (SyntaxError, ValueError) as exc:  # never write what does not parse
        return 0, FileError(path, f"no noqa added: the marked text would not be the same ({exc})")
    if left or refused:
        where = ", ".join(str(n) for n in sorted({f.line for f in left} | refused))
        return 0, FileError(
            path,
            f"no noqa added: line {where} cannot hold a comment (it ends inside a string "
            f"or after a backslash); add `# noqa: CODE` where the statement ends, by hand",
        )
    assert source.stamp is not None
    try:
        write_back(path, marked.encode(source.encoding), source.stamp)
    except (WriteRefused, OSError) as exc:
        return 0, FileError(path, str(exc) if isinstance(exc, WriteRefused) else f"{exc}")
    return len(findings), None


def _mark_chunk(chunk: Chunk) -> list[tuple[str, int, FileError | None]]:
    out = []
    for path, ignored in chunk.files:
        rules = RuleSet(r for r in chunk.rules if not r.code.startswith(ignored or ("\0",)))
        out.append((path, *_mark(path, rules)))
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
    """Add ``# noqa: CODES`` to every line with a finding of the selected rules, in place.

    Arguments as for :func:`~torchport.check.check_paths`. After it, a check with
    the same settings finds nothing in the files it marked.

    Raises:
        ConfigError: bad configuration or arguments, or no rule left to run.
    """
    run = plan(paths, select, ignore, extend_select, config, jobs, Chunk((), ()))
    result = NoqaResult(errors=list(run.errors))
    for path, added, error in _map(_mark_chunk, chunked(run, run.files), run.jobs, progress):
        if error is not None:
            result.errors.append(error)
        elif added:
            result.added[path] = added
    result.errors.sort()
    return result
