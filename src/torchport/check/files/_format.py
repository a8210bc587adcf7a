"""Rendering check results: text, JSON, SARIF 2.1.0, GitHub annotations, statistics.

Facts come in (:class:`~torchport.check._rule.Finding` lists, file errors, the
rules that ran); strings come out. Nothing here reads files or runs rules.
"""

from __future__ import annotations

import inspect
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePath

from torchport import __version__
from torchport.check._rule import Finding, FixSafety, Intent, Rule
from torchport.check.files._paths import FileError

__all__ = [
    "FORMATS",
    "STATISTICS_FORMATS",
    "render",
    "render_github",
    "render_json",
    "render_sarif",
    "render_statistics",
    "render_text",
]

FORMATS = ("text", "json", "sarif", "github")
_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _is_speed(finding: Finding) -> bool:
    """A SPEED rule's fix, which a plain `fix` leaves alone (see Intent)."""
    rule = Rule.registry.get(finding.code)
    return rule is not None and rule.intent is Intent.SPEED


def _changes(finding: Finding) -> str:
    """`` (the fix changes results: ...)`` for a fix that says it does, else ``""``."""
    changes = finding.fix.changes if finding.fix is not None and finding.fix.edits else ""
    return f" (the fix changes results: {changes})" if changes else ""


def _safety(finding: Finding) -> FixSafety | None:
    return finding.fix.safety if finding.fix is not None and finding.fix.edits else None


_CELL = re.compile(r":cell \d+$")


def file_of(path: str) -> str:
    """The file a finding's path names (``nb.ipynb:cell 3`` is in ``nb.ipynb``)."""
    return _CELL.sub("", path)


def render_text(findings: Sequence[Finding], errors: int = 0) -> str:
    """``path:line:col: CODE message`` per finding (``[*]``: safely fixable), then a summary.

    ``errors`` counts the file errors (named on stderr: a file that could not be
    read or parsed, an unknown ``noqa`` code ...), so the summary never calls
    such a run clean.
    """
    lines = []
    for f in findings:
        marker = " [*]" if _safety(f) is FixSafety.SAFE else ""
        lines.append(f"{f.path}:{f.line}:{f.col}: {f.code}{marker} {f.message}{_changes(f)}")
    unchecked = ""
    if errors:
        unchecked = f"{errors} error{'s' if errors != 1 else ''} (named above) to fix first"
    if not findings:
        lines.append(f"No findings, but {unchecked}." if errors else "All checks passed.")
        return "\n".join(lines) + "\n"
    speed = sum(_safety(f) is FixSafety.SAFE and _is_speed(f) for f in findings)
    safe = sum(_safety(f) is FixSafety.SAFE for f in findings) - speed
    # An unsafe fix of a speed rule needs both flags: `fix --unsafe` alone leaves it.
    unsafe_speed = sum(_safety(f) is FixSafety.UNSAFE and _is_speed(f) for f in findings)
    unsafe = sum(_safety(f) is FixSafety.UNSAFE for f in findings) - unsafe_speed
    files = len({file_of(f.path) for f in findings})
    noun = "finding" if len(findings) == 1 else "findings"
    summary = f"Found {len(findings)} {noun} in {files} file{'s' if files != 1 else ''}"
    notes = []
    if safe:
        notes.append(f"{safe} fixable with `torchport fix`")
    if speed:
        notes.append(f"{speed} more with `torchport fix --speed`")
    if unsafe:
        notes.append(f"{unsafe} more with `torchport fix --unsafe`")
    if unsafe_speed:
        notes.append(f"{unsafe_speed} more with `torchport fix --speed --unsafe`")
    lines.append(summary + (f" ({', '.join(notes)})" if notes else "") + ".")
    if errors:
        lines.append(f"And {unchecked}.")
    return "\n".join(lines) + "\n"


def _finding_json(f: Finding) -> dict[str, object]:
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
        "code": f.code,
        "name": f.name,
        "message": f.message,
        "path": file_of(f.path),
        "cell": cell,
        "line": f.line,
        "col": f.col,
        "end_line": f.end_line,
        "end_col": f.end_col,
        "fixable": safety is FixSafety.SAFE,
        "fix": fix,
    }


def render_json(findings: Sequence[Finding]) -> str:
    """A JSON list of findings; ``fix`` is null or its safety and character-offset edits.

    ``cell`` is the notebook cell (1-based) of a finding in an ``.ipynb`` file, whose
    ``line`` then counts within that cell (as Ruff reports them); null elsewhere. A
    notebook finding's ``fix.edits`` is null: apply it with ``torchport fix``.
    """
    return json.dumps([_finding_json(f) for f in findings], indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


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
        out.append(
            f"::error file={_escape_property(e.path)},title=torchport::{_escape_data(e.message)}"
        )
    return "".join(line + "\n" for line in out)


STATISTICS_FORMATS = ("text", "json", "github")


def render_statistics(findings: Sequence[Finding], fmt: str = "text") -> str:
    """Count per code, most frequent first (ties by code), with ``[*]`` when fixable.

    ``fmt`` is ``"text"`` (a table), ``"json"`` (a list of ``{"code", "name", "count",
    "fixable"}``, as Ruff writes them) or ``"github"`` (one ``::notice`` per code).
    SARIF holds results, not counts: ask for findings in SARIF instead.

    Raises:
        ValueError: ``fmt`` is not one of :data:`STATISTICS_FORMATS`.
    """
    if fmt not in STATISTICS_FORMATS:
        raise ValueError(
            f"--statistics prints counts as {', '.join(STATISTICS_FORMATS)}, not {fmt!r}: "
            f"drop --statistics to get the findings as {fmt}"
        )
    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    fixable = {f.code for f in findings if _safety(f) is FixSafety.SAFE}
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if fmt == "json":
        return (
            json.dumps(
                [
                    {"code": c, "name": names[c], "count": n, "fixable": c in fixable}
                    for c, n in rows
                ],
                indent=2,
            )
            + "\n"
        )
    if fmt == "github":
        return "".join(
            f"::notice title={_escape_property(code)}::"
            f"{_escape_data(f'{n} x {code} {names[code]}')}\n"
            for code, n in rows
        )
    width = max((len(str(n)) for _, n in rows), default=1)
    return "".join(
        f"{n:>{width}}  {code}  {'[*]' if code in fixable else '   '} {names[code]}\n"
        for code, n in rows
    )


def _uri(path: str) -> dict[str, str]:
    pure = PurePath(path)
    if pure.is_absolute():
        return {"uri": pure.as_uri()}
    return {"uri": pure.as_posix(), "uriBaseId": "%SRCROOT%"}


def _sarif_rule(rule: type[Rule]) -> dict[str, object]:
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


def render_sarif(
    findings: Sequence[Finding], rules: Sequence[type[Rule]], errors: Sequence[FileError] = ()
) -> str:
    """A SARIF 2.1.0 log with one run; ``tool.driver.rules`` describes every rule that ran."""
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
            "locations": [{"physicalLocation": {"artifactLocation": _uri(e.path)}}],
        }
        for e in errors
    ]
    log = {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
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
                    {
                        "executionSuccessful": not errors,
                        "toolExecutionNotifications": notifications,
                    }
                ],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def render(
    fmt: str,
    findings: Sequence[Finding],
    rules: Sequence[type[Rule]] = (),
    errors: Sequence[FileError] = (),
) -> str:
    """Render in one of :data:`FORMATS` (file errors appear in the output only for sarif/github)."""
    if fmt == "json":
        return render_json(findings)
    if fmt == "sarif":
        return render_sarif(findings, rules, errors)
    if fmt == "github":
        return render_github(findings, errors)
    return render_text(findings, len(errors))
