"""Rendering check results: JSON, SARIF 2.1.0, GitHub annotations, statistics, and the choice.

The text forms (text, concise, grouped) are :mod:`torchport.check.files._text`'s;
GitLab Code Quality and JUnit XML are :mod:`torchport.check.files._ci_reports`'.
Every path a person reads goes through :func:`~torchport.check._printable.quoted`.

Facts come in (:class:`~torchport.check._rule.Finding` lists, file errors, the
rules that ran); strings come out. Nothing here reads files or runs rules. The
text report is :mod:`torchport.check.files._text`'s. The JSON format is
documented in ``docs/json-format.md``; a test holds that page to this code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from pathlib import PurePath

from torchport import __version__
from torchport.check._patterns import lazy_pattern
from torchport.check._printable import is_plain, quoted
from torchport.check._rule import Finding, FixSafety, Rule
from torchport.check.files._text import (
    file_of,
    fix_flags,
    held_note,
    render_grouped,
    render_text,
)
from torchport.check.files._work import FileError

__all__ = [
    "FORMATS",
    "render",
    "render_github",
    "render_grouped",
    "render_json",
    "render_sarif",
    "render_statistics",
    "render_text",
]

FORMATS = ("text", "concise", "grouped", "json", "sarif", "github", "gitlab", "junit")
_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _changes(finding: Finding) -> str:
    """`` (the fix changes results: ...)`` for a fix that says it does, else ``""``."""
    changes = finding.fix.changes if finding.fix is not None and finding.fix.edits else ""
    return f" (the fix changes results: {changes})" if changes else ""


def _safety(finding: Finding) -> FixSafety | None:
    return finding.fix.safety if finding.fix is not None and finding.fix.edits else None


def _finding_json(f: Finding, fixable: bool) -> dict[str, object]:
    safety = _safety(f)
    cell = int(f.path.rsplit(" ", 1)[1]) if file_of(f.path) != f.path else None
    fix = None
    if safety is not None and f.fix is not None:
        edits: list[dict[str, object]] | None = [
            {"start": e.start, "end": e.end, "text": e.text} for e in f.fix.edits
        ]
        if cell is not None:
            edits = None  # offsets into the cells' joined text, not into the .ipynb file
        fix = {"safety": safety.value, "edits": edits, "changes": f.fix.changes or None}
    return {
        "kind": "finding",
        "code": f.code,
        "name": f.name,
        "message": f.message,
        "path": file_of(f.path),
        "cell": cell,
        "line": f.line,
        "col": f.col,
        "end_line": f.end_line,
        "end_col": f.end_col,
        "fixable": fixable,
        "fix": fix,
    }


# Where an error message says it happened. The checker writes the place last ("cannot
# parse: MSG at line 2, column 5", "... at cell 3, line 1, column 2") or first ("line 2:
# a noqa comment names ...", "cell 3, line 1: ...", "cell 3 not checked: ... at line 1");
# the parser's own MSG may name another line first ("(detected at line 9)"), so the
# last "at line" wins.
_AT_LINE = lazy_pattern(r"\bat (?:cell (\d+), )?line (\d+)(?:, column (\d+))?")
_LEADING = lazy_pattern(r"^(?:cell (\d+), )?line (\d+):|^cell (\d+)\b")


def _error_position(message: str) -> tuple[int | None, int | None, int | None]:
    """``(cell, line, column)`` of a :class:`FileError` message; None where it names none."""
    cell = line = col = None
    leading = _LEADING.search(message)
    if leading is not None:
        named = leading[1] or leading[3]
        cell = int(named) if named else None
        line = int(leading[2]) if leading[2] else None
    trailing = list(_AT_LINE.finditer(message))
    if trailing and line is None:
        last = trailing[-1]
        line = int(last[2])
        col = int(last[3]) if last[3] else None
        cell = int(last[1]) if last[1] else cell
    return cell, line, col


def _error_json(e: FileError) -> dict[str, object]:
    """A file that could not be checked: ``kind`` "error", the position where one is known."""
    cell, line, col = _error_position(e.message)
    return {
        "kind": "error",
        "code": None,
        "name": None,
        "message": e.message,
        "path": file_of(e.path),
        "cell": cell,
        "line": line,
        "col": col,
        "end_line": line,
        "end_col": col,
        "fixable": False,
        "fix": None,
    }


def render_json(
    findings: Sequence[Finding],
    errors: Sequence[FileError] = (),
    *,
    rules: Sequence[type[Rule]] = (),
    plain: Collection[str] | None = None,
) -> str:
    """A JSON list: one object per finding, then one per file that could not be checked.

    The format is documented in ``docs/json-format.md``: ``kind`` is ``"finding"``
    or ``"error"`` (a file that could not be read, decoded or parsed; ``code`` null,
    its position where the parser gave one, as SARIF's tool notifications carry
    them). ``fix`` is null or its safety and edits, whose ``start``/``end`` count
    code points of the file's decoded text. ``cell`` is the notebook cell (1-based)
    of a finding in an ``.ipynb`` file, whose ``line`` then counts within that cell
    (as Ruff reports them); a notebook finding's ``fix.edits`` is null: apply it
    with ``torchport fix``. ``fixable``: a plain ``torchport fix`` applies it (a safe fix,
    and a SPEED rule's only where the selection named it: ``plain``, as for
    :func:`render_text`).
    """
    import json  # here: a text report never loads it (start-up)

    by_code = {r.code: r for r in rules}
    items = [_finding_json(f, fix_flags(f, by_code, plain) == ()) for f in findings]
    items += [_error_json(e) for e in errors]
    return json.dumps(items, indent=2) + "\n"


def _escape_data(text: str) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text if is_plain(text) else quoted(text)  # no raw escape byte in a CI log


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(findings: Sequence[Finding], errors: Sequence[FileError] = ()) -> str:
    """GitHub Actions commands: ``::warning`` per finding, ``::error`` per file error."""
    out = []
    for f in findings:
        path = file_of(f.path)
        if path != f.path:  # a notebook cell: its lines are not the file's (see render_sarif)
            props = f"file={_escape_property(path)},title={_escape_property(f.code)}"
            where = f"{f.path[len(path) + 1 :]}:{f.line}:{f.col}: "
        else:
            props = (
                f"file={_escape_property(f.path)},line={f.line},col={f.col},"
                f"endLine={f.end_line},endColumn={f.end_col},title={_escape_property(f.code)}"
            )
            where = ""
        text = f"{where}{f.code} {f.message}{_changes(f)}"
        out.append(f"::warning {props}::{_escape_data(text)}")
    for e in errors:
        cell, line, col = _error_position(e.message)
        where = f",line={line}" if line is not None and cell is None else ""
        where += f",col={col}" if where and col is not None else ""
        out.append(
            f"::error file={_escape_property(e.path)}{where},title=torchport::"
            f"{_escape_data(e.message)}"
        )
    return "".join(line + "\n" for line in out)


def _statistics(
    findings: Sequence[Finding], rules: Sequence[type[Rule]], plain: Collection[str] | None
) -> list[dict[str, object]]:
    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    by_code = {r.code: r for r in rules}
    fixable = {f.code for f in findings if fix_flags(f, by_code, plain) == ()}
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [
        {"code": code, "name": names[code], "count": n, "fixable": code in fixable}
        for code, n in rows
    ]


def render_statistics(
    findings: Sequence[Finding],
    fmt: str = "text",
    rules: Sequence[type[Rule]] = (),
    errors: Sequence[FileError] = (),
    *,
    plain: Collection[str] | None = None,
    held: Mapping[str, Mapping[str, int]] | None = None,
) -> str:
    """Count per code, most frequent first (ties by code), in one of :data:`FORMATS`.

    Text: ``count  code  [*] name`` rows (``[*]``: a plain ``fix`` applies some of
    them; ``plain`` as for :func:`render_text`), then, where a default run left findings
    out as of low value there (``held``, :attr:`CheckResult.held`), one line that counts
    them, so an empty table is never all there is to say. JSON: a list of
    ``{"code", "name", "count", "fixable"}``. GitHub: one ``::notice`` per code.
    SARIF: the full log (results included) with the counts in the run's
    ``properties.statistics``, so a SARIF consumer still gets a valid log; GitLab
    and JUnit: their full report, for the same reason. Text forms: the table.
    """
    import json  # here: a text report never loads it (start-up)

    rows = _statistics(findings, rules, plain)
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    if fmt == "github":
        notices = [
            f"::notice title={_escape_property(str(r['code']))}::"
            + _escape_data(f"{r['count']} x {r['code']} {r['name']}")
            for r in rows
        ]
        return "".join(line + "\n" for line in notices) + render_github([], errors)
    if fmt == "sarif":
        return render_sarif(findings, rules, errors, statistics=rows)
    if fmt in ("gitlab", "junit"):  # a CI server reads the report whole: it stays valid
        return render(fmt, findings, rules, errors)
    width = max((len(str(r["count"])) for r in rows), default=1)
    table = "".join(
        f"{r['count']:>{width}}  {r['code']}  {'[*]' if r['fixable'] else '   '} {r['name']}\n"
        for r in rows
    )
    if held:
        table += f"{'Not shown' if rows else 'No findings shown'}: {held_note(held)}.\n"
    return table


def _uri(path: str) -> dict[str, str]:
    """A SARIF ``artifactLocation``: a URI reference, percent-encoded.

    A file name is not a URI: a space, ``%``, ``#`` or ``?`` in it is not allowed
    or means something else, and ``c:x.py`` reads as the scheme ``c``. Every
    character but letters, digits, ``-._~`` and ``/`` is encoded (UTF-8), so a
    consumer that decodes the reference gets the path back.
    """
    from urllib.parse import quote  # SARIF only: a text report does not load it (start-up)

    pure = PurePath(path)
    if pure.is_absolute():
        return {"uri": pure.as_uri()}
    return {"uri": quote(pure.as_posix(), safe="/"), "uriBaseId": "%SRCROOT%"}


def _sarif_rule(rule: type[Rule]) -> dict[str, object]:
    import inspect  # SARIF only: a text report does not load it

    doc = inspect.cleandoc(rule.__doc__ or rule.message)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": doc},
        "help": {"text": doc},
        "defaultConfiguration": {"level": "warning", "enabled": bool(rule.default)},
        "properties": {"fixSafety": rule.fix_safety.value},
    }


def _error_location(e: FileError) -> dict[str, object]:
    """A notification's place: the file, and the line where the message names one in it."""
    location: dict[str, object] = {"artifactLocation": _uri(e.path)}
    cell, line, col = _error_position(e.message)
    if line is not None and cell is None:  # a cell's lines are not the .ipynb file's
        location["region"] = {"startLine": line, **({"startColumn": col} if col else {})}
    return location


def render_sarif(
    findings: Sequence[Finding],
    rules: Sequence[type[Rule]],
    errors: Sequence[FileError] = (),
    *,
    statistics: Sequence[Mapping[str, object]] | None = None,
) -> str:
    """A SARIF 2.1.0 log with one run; ``tool.driver.rules`` describes every rule that ran.

    ``statistics`` (counts per code), when given, go in the run's ``properties``.
    """
    import json  # here: a text report never loads it (start-up)

    ordered = sorted({r.code: r for r in rules}.values(), key=lambda r: r.code)
    index = {r.code: i for i, r in enumerate(ordered)}
    results = []
    for f in findings:
        location: dict[str, object] = {"artifactLocation": _uri(file_of(f.path))}
        text = f.message
        if file_of(f.path) != f.path:
            # A notebook cell: SARIF regions count lines of the JSON file, which the cell's
            # lines are not, so the cell and line go into the message instead.
            text = f"{f.path[len(file_of(f.path)) + 1 :]}, line {f.line}: {f.message}"
        else:
            location["region"] = {
                "startLine": f.line,
                "startColumn": f.col,
                "endLine": f.end_line,
                "endColumn": f.end_col,
            }
        result: dict[str, object] = {
            "ruleId": f.code,
            "level": "warning",
            "message": {"text": text + _changes(f)},
            "locations": [{"physicalLocation": location}],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        results.append(result)
    notifications = [
        {
            "level": "error",
            "message": {"text": e.message},
            "locations": [{"physicalLocation": _error_location(e)}],
        }
        for e in errors
    ]
    run: dict[str, object] = {
        "tool": {
            "driver": {
                "name": "torchport",
                "version": __version__,
                "informationUri": "https://github.com/torchport/torchport",
                "rules": [_sarif_rule(r) for r in ordered],
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": results,
        "invocations": [
            {"executionSuccessful": not errors, "toolExecutionNotifications": notifications}
        ],
    }
    if statistics is not None:
        run["properties"] = {"statistics": list(statistics)}
    log = {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [run],
    }
    return json.dumps(log, indent=2) + "\n"


def render(
    fmt: str,
    findings: Sequence[Finding],
    rules: Sequence[type[Rule]] = (),
    errors: Sequence[FileError] = (),
    *,
    sources: Mapping[str, str] | None = None,
    color: bool = False,
    show_fixes: bool = False,
    summary: bool = True,
    plain: Collection[str] | None = None,
    held: Mapping[str, Mapping[str, int]] | None = None,
) -> str:
    """Render in one of :data:`FORMATS`.

    ``text`` shows an excerpt under each finding where ``sources`` has its text
    (``show_fixes``: and the lines its fix writes); ``concise`` is one line per
    finding. File errors go into the json, sarif and github forms (text forms
    leave them to stderr and count them in the summary). ``plain``: the codes whose
    fixes a plain ``fix`` applies (:attr:`CheckResult.plain_fix`), for ``[*]``,
    ``fixable`` and the summary's hints. ``held``: what a default run left out as of low
    value there (:attr:`CheckResult.held`), which the text forms' summary counts.
    """
    if fmt == "json":
        return render_json(findings, errors, rules=rules, plain=plain)
    if fmt == "sarif":
        return render_sarif(findings, rules, errors)
    if fmt == "github":
        return render_github(findings, errors)
    if fmt in ("gitlab", "junit"):  # imported here: XML is for the CI formats alone
        from torchport.check.files._ci_reports import render_gitlab, render_junit

        render_ci = render_gitlab if fmt == "gitlab" else render_junit
        return render_ci(findings, errors)
    if fmt == "grouped":
        return render_grouped(
            findings,
            len(errors),
            color=color,
            summary=summary,
            rules=rules,
            plain=plain,
            held=held,
        )
    return render_text(
        findings,
        len(errors),
        sources=sources if fmt == "text" else None,
        color=color,
        show_fixes=show_fixes,
        summary=summary,
        rules=rules,
        plain=plain,
        held=held,
    )
