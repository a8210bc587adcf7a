"""Reports CI servers read: GitLab Code Quality JSON and JUnit XML.

GitLab's Code Quality report (docs.gitlab.com, "Code Quality report format") is a
JSON list of issues, each with a ``description``, a ``check_name``, a
``fingerprint`` that identifies it across pipelines, a ``severity`` and a
``location`` (``path`` relative to the repository, ``lines.begin``). As Ruff's
``--output-format gitlab`` does, the fingerprint hashes the rule, the message and
the path, not the line, so a finding keeps its identity when code above it moves;
findings alike in one file are told apart by their order. Paths are made relative
to ``$CI_PROJECT_DIR`` (else the working folder) where they lie below it.

JUnit XML: one ``<testsuite>`` per file with findings, one failed
``<testcase>`` per finding (``name`` the code, ``classname`` the path, ``line`` and
``column`` as attributes), and one ``<error>`` test case per file that could not be
checked; a clean run is one passing test case, so a CI page shows it ran. XML 1.0
cannot hold most control characters even escaped, so paths and messages go
through :func:`~torchport.check._printable.quoted` first.
"""

from __future__ import annotations

import hashlib
import json
import os
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence

from torchport.check._printable import quoted
from torchport.check._rule import Finding
from torchport.check.files._text import file_of
from torchport.check.files._work import FileError

__all__ = ["render_gitlab", "render_junit"]


def _relative(path: str) -> str:
    base = os.environ.get("CI_PROJECT_DIR") or os.getcwd()
    absolute = os.path.abspath(path)
    try:
        inside = os.path.commonpath([absolute, os.path.abspath(base)]) == os.path.abspath(base)
    except ValueError:  # another drive
        inside = False
    chosen = os.path.relpath(absolute, base) if inside else path
    return chosen.replace(os.sep, "/")


def render_gitlab(findings: Sequence[Finding], errors: Sequence[FileError] = ()) -> str:
    """A GitLab Code Quality report: a JSON list of issues (see the module docstring)."""
    seen: Counter[str] = Counter()
    issues = []
    for f in findings:
        path = _relative(file_of(f.path))
        where = f.path[len(file_of(f.path)) + 1 :]  # a notebook's "cell 3", else ""
        description = f"{where}, line {f.line}: {f.message}" if where else f.message
        key = f"{f.code}\0{f.message}\0{path}\0{where}"
        seen[key] += 1
        digest = hashlib.sha256(f"{key}\0{seen[key]}".encode("utf-8", "surrogateescape"))
        issues.append(
            {
                "description": f"{f.code} {description}",
                "check_name": f.code,
                "fingerprint": digest.hexdigest()[:32],
                "severity": "major",
                "location": {
                    "path": path,
                    "lines": {"begin": 1 if where else f.line, "end": 1 if where else f.end_line},
                },
            }
        )
    for e in errors:
        path = _relative(file_of(e.path))
        digest = hashlib.sha256(f"error\0{e.message}\0{path}".encode("utf-8", "surrogateescape"))
        issues.append(
            {
                "description": f"not checked: {e.message}",
                "check_name": "torchport-error",
                "fingerprint": digest.hexdigest()[:32],
                "severity": "critical",
                "location": {"path": path, "lines": {"begin": 1}},
            }
        )
    return json.dumps(issues, indent=2) + "\n"


def render_junit(findings: Sequence[Finding], errors: Sequence[FileError] = ()) -> str:
    """A JUnit XML report (see the module docstring)."""
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(file_of(f.path), []).append(f)
    errors_by_file: dict[str, list[FileError]] = {}
    for e in errors:
        errors_by_file.setdefault(file_of(e.path), []).append(e)
    root = ET.Element(
        "testsuites",
        name="torchport",
        tests=str(max(1, len(findings) + len(errors))),
        failures=str(len(findings)),
        errors=str(len(errors)),
    )
    for path in sorted({*by_file, *errors_by_file}):
        mine, broken = by_file.get(path, []), errors_by_file.get(path, [])
        suite = ET.SubElement(
            root,
            "testsuite",
            name=quoted(path),
            tests=str(len(mine) + len(broken)),
            failures=str(len(mine)),
            errors=str(len(broken)),
        )
        for f in mine:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"{f.code} {f.name}",
                classname=quoted(f.path),
                line=str(f.line),
                column=str(f.col),
            )
            failure = ET.SubElement(case, "failure", message=quoted(f.message), type=f.code)
            failure.text = f"{quoted(f.path)}:{f.line}:{f.col}: {f.code} {quoted(f.message)}"
        for e in broken:
            case = ET.SubElement(suite, "testcase", name="not checked", classname=quoted(e.path))
            error = ET.SubElement(case, "error", message=quoted(e.message), type="error")
            error.text = f"{quoted(e.path)}: {quoted(e.message)}"
    if not findings and not errors:
        suite = ET.SubElement(root, "testsuite", name="torchport", tests="1", failures="0")
        ET.SubElement(suite, "testcase", name="no findings", classname="torchport")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
