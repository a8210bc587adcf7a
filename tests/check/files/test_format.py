"""Output formats: text, JSON, SARIF 2.1.0, GitHub annotations, statistics."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import unicodedata
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check._rule import Edit, Finding, Fix, FixSafety, Rule
from torchport.check.files._format import (
    FORMATS,
    render,
    render_github,
    render_json,
    render_sarif,
    render_statistics,
    render_text,
)
from torchport.check.files._paths import FileError
from torchport.cli.check import FORMATS as CLI_FORMATS


class FormatRule(Rule):
    """What it does: a test rule.

    Why is this bad? It is only a test.
    """

    code = "TP9970"
    name = "test-format"
    message = "do the other thing"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)


SAFE = Fix((Edit(4, 12, "x.to(device)"),), FixSafety.SAFE)
UNSAFE = Fix((Edit(0, 1, "y"),), FixSafety.UNSAFE)
FINDINGS = [
    Finding("src/a.py", 1, 5, 1, 13, "TP9970", "test-format", "do the other thing", SAFE),
    Finding("src/a.py", 3, 1, 4, 2, "TP9971", "test-other", '50% more, said: "x"\n', UNSAFE),
    Finding("b,c:d.py", 2, 2, 2, 3, "TP9970", "test-format", "do the other thing"),
]


def test_text_lines_markers_and_summary() -> None:
    out = render_text(FINDINGS).splitlines()
    assert out[0] == "src/a.py:1:5: TP9970 [*] do the other thing"
    assert out[1].startswith("src/a.py:3:1: TP9971 50% more")  # unsafe: no [*]
    assert out[-1] == (
        "Found 3 findings in 2 files (1 fixable with `torchport fix`, "
        "1 more with `torchport fix --unsafe`)."
    )
    assert render_text([]) == "All checks passed.\n"


# Characters whose terminal width is known: (char, columns). A combining mark or a
# joiner follows a letter; a control character is shown as one replacement character.
_LETTER, _WIDE, _ZERO = "aZ_", "中日🙂", "\u0301\u0308\u200d"


@given(st.lists(st.sampled_from(["a", "中", "a\u0301", "Z\u200d", "日", "🙂", "\x1b", "\x07"])))
def test_the_marks_sit_under_the_finding_whatever_the_characters_before_it(
    before: list[str],
) -> None:
    prefix = "".join(before)
    line = f"x = '{prefix}' + flag"
    col = line.index("flag") + 1
    finding = Finding("m.py", 1, col, 1, col + 4, "TP9970", "test-format", "m")
    out = render_text([finding], sources={"m.py": line + "\n"}).splitlines()
    shown, marks = out[1].split(" | ", 1), out[2].split(" | ", 1)[1]
    expected = 5 + sum(2 if c in _WIDE else 0 if c in _ZERO else 1 for c in prefix) + 4
    assert marks == " " * expected + "^^^^"
    assert not any(unicodedata.category(c) == "Cc" for c in shown[1])  # no escape codes


def test_text_summary_never_calls_a_run_with_unchecked_files_clean() -> None:
    assert render_text([], errors=1) == "No findings, but 1 error (named above) to fix first.\n"
    out = render_text(FINDINGS, errors=2).splitlines()
    assert out[-1] == "And 2 errors (named above) to fix first."


def test_json_round_trips_every_field() -> None:
    data = json.loads(render_json(FINDINGS))
    assert [d["code"] for d in data] == ["TP9970", "TP9971", "TP9970"]
    first = data[0]
    position = {k: first[k] for k in ("path", "line", "col", "end_line", "end_col", "name")}
    expected = {"path": "src/a.py", "line": 1, "col": 5, "end_line": 1, "end_col": 13}
    assert position == {**expected, "name": "test-format"}
    assert first["fixable"] is True
    assert first["fix"] == {
        "safety": "safe",
        "edits": [{"start": 4, "end": 12, "text": "x.to(device)"}],
        "changes": None,  # a fix that keeps results
    }
    assert data[1]["fixable"] is False and data[1]["fix"]["safety"] == "unsafe"
    assert data[2]["fix"] is None
    assert json.loads(render_json([])) == []


def test_sarif_has_the_required_structure() -> None:
    errors = [FileError("broken.py", "cannot parse: invalid syntax")]
    log = json.loads(render_sarif(FINDINGS, [FormatRule], errors))
    assert log["version"] == "2.1.0" and "sarif-2.1.0" in log["$schema"]
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "torchport" and driver["version"]
    (rule,) = driver["rules"]
    assert rule["id"] == "TP9970" and rule["name"] == "test-format"
    assert rule["shortDescription"]["text"] == "do the other thing"
    assert "Why is this bad?" in rule["fullDescription"]["text"]
    assert rule["properties"]["fixSafety"] == "safe"
    first = run["results"][0]
    assert first["ruleId"] == "TP9970" and first["ruleIndex"] == 0 and first["level"] == "warning"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "src/a.py"
    assert location["region"] == {"startLine": 1, "startColumn": 5, "endLine": 1, "endColumn": 13}
    assert "ruleIndex" not in run["results"][1]  # a code with no rule metadata
    for result in run["results"]:
        assert {"ruleId", "message", "locations"} <= set(result)
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"].startswith("cannot parse")
    absolute = json.loads(render_sarif([dataclasses.replace(FINDINGS[0], path="/abs/x.py")], []))
    artifact = absolute["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert artifact["artifactLocation"] == {"uri": "file:///abs/x.py"}


# RFC 3986, section 4.2: a relative reference with no authority, query or fragment is a
# path whose first segment holds no ":" (else it reads as a scheme), made of these.
_NO_COLON = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=@]|%[0-9A-F]{2})"
_RELATIVE_PATH = re.compile(rf"{_NO_COLON}+(?:/(?:{_NO_COLON}|:)*)*")


@given(
    st.lists(
        st.text(st.characters(exclude_characters="/\0", exclude_categories=["Cs"]), min_size=1),
        min_size=1,
        max_size=3,
    ).filter(lambda parts: all(p not in (".", "..") for p in parts))
)
def test_sarif_locations_are_uri_references_that_decode_to_the_path(parts: list[str]) -> None:
    path = "/".join(parts)
    log = json.loads(render_sarif([dataclasses.replace(FINDINGS[0], path=path)], []))
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    uri = location["artifactLocation"]["uri"]
    assert _RELATIVE_PATH.fullmatch(uri), uri
    split = urlsplit(uri)
    assert (split.scheme, split.netloc, split.query, split.fragment) == ("", "", "", "")
    assert unquote(split.path) == PurePosixPath(path).as_posix()


def test_github_annotations_escape_properties_and_data() -> None:
    lines = render_github(FINDINGS, [FileError("bad.py", "cannot parse")]).splitlines()
    assert lines[0] == (
        "::warning file=src/a.py,line=1,col=5,endLine=1,endColumn=13,title=TP9970"
        "::TP9970 do the other thing"
    )
    assert lines[1].endswith('::TP9971 50%25 more, said: "x"%0A')
    assert lines[2].startswith("::warning file=b%2Cc%3Ad.py,line=2,col=2,")
    assert lines[3] == "::error file=bad.py,title=torchport::cannot parse"
    assert len(lines) == 4


def test_statistics_sorted_by_count_then_code() -> None:
    assert render_statistics(FINDINGS).splitlines() == [
        "2  TP9970  [*] test-format",
        "1  TP9971      test-other",
    ]
    assert render_statistics([]) == ""


def test_render_dispatch_and_cli_choices_agree() -> None:
    assert CLI_FORMATS == FORMATS
    assert render("json", FINDINGS) == render_json(FINDINGS)
    assert render("github", FINDINGS) == render_github(FINDINGS)
    assert render("text", FINDINGS) == render_text(FINDINGS)
    assert json.loads(render("sarif", FINDINGS, [FormatRule]))["version"] == "2.1.0"


CELL = Finding("nb.ipynb:cell 3", 2, 5, 2, 9, "TP9970", "test-format", "do the other thing")


def test_notebook_findings_name_the_file_and_the_cell_in_every_format() -> None:
    assert render_text([CELL, FINDINGS[0]]).splitlines()[0] == (
        "nb.ipynb:cell 3:2:5: TP9970 do the other thing"
    )
    assert "in 1 file" in render_text([CELL, dataclasses.replace(CELL, path="nb.ipynb:cell 4")])
    row = json.loads(render_json([dataclasses.replace(CELL, fix=SAFE)]))[0]
    assert (row["path"], row["cell"], row["line"]) == ("nb.ipynb", 3, 2)
    assert row["fix"]["edits"] is None and row["fixable"] is True
    assert json.loads(render_json(FINDINGS[:1]))[0]["cell"] is None
    location = json.loads(render_sarif([CELL], [FormatRule]))["runs"][0]["results"][0]
    physical = location["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "nb.ipynb" and "region" not in physical
    assert location["message"]["text"].startswith("cell 3, line 2: ")
    line = render_github([CELL]).strip()
    assert line.startswith("::warning file=nb.ipynb,title=TP9970::cell 3:2:5: TP9970")


def test_a_fix_that_changes_results_says_so_in_every_format() -> None:
    """In text, where the fix is shown (--show-fixes), not on every finding line."""
    changing = Fix((Edit(0, 1, "y"),), FixSafety.UNSAFE, changes="reseeds the CPU generator too")
    finding = dataclasses.replace(FINDINGS[0], fix=changing)
    note = "(the fix changes results: reseeds the CPU generator too)"
    assert "changes results" not in render_text([finding])
    shown = render_text([finding], sources={"src/a.py": "x = a.cuda()\n"}, show_fixes=True)
    assert "  = the fix changes results: reseeds the CPU generator too" in shown.splitlines()
    assert "  - x = a.cuda()" in shown and "  + y = a.cuda()" in shown
    assert (
        json.loads(render_json([finding]))[0]["fix"]["changes"] == "reseeds the CPU generator too"
    )
    assert json.loads(render_json(FINDINGS[:1]))[0]["fix"]["changes"] is None
    sarif = json.loads(render_sarif([finding], [FormatRule]))["runs"][0]["results"][0]
    assert sarif["message"]["text"].endswith(note)
    assert "reseeds the CPU generator too" in render_github([finding])
    assert "changes results" not in render_text(FINDINGS[:1])


# --- where an error is, in every format ------------------------------------------------

_BROKEN = ["y = (", 'y = """abc', "def f(:", "  x = 1", "y = [1,\n 2", "return 1 +"]


@given(
    st.integers(0, 3),
    st.sampled_from(_BROKEN),
    st.integers(0, 3),
    st.sampled_from(["", "z = '''\n'''\n"]),
)
def test_a_parse_error_is_placed_where_python_places_it(
    tmp_path_factory: pytest.TempPathFactory, before: int, broken: str, after: int, tail: str
) -> None:
    from torchport.check import check_paths

    folder = tmp_path_factory.mktemp("errors")
    source = "x = 1\n" * before + broken + "\n" + "w = 2\n" * after + tail
    (folder / "m.py").write_text(source)
    with pytest.raises(SyntaxError) as python:
        compile(source, "m.py", "exec")
    errors = check_paths([folder / "m.py"]).errors
    (item,) = json.loads(render_json([], errors))
    assert (item["cell"], item["line"], item["col"]) == (
        None, python.value.lineno, python.value.offset,
    )  # fmt: skip
    annotation = render_github([], errors)
    assert f",line={python.value.lineno},col={python.value.offset}," in annotation
    notification = json.loads(render_sarif([], [], errors))["runs"][0]["invocations"][0]
    region = notification["toolExecutionNotifications"][0]["locations"][0]["physicalLocation"]
    assert region["region"]["startLine"] == python.value.lineno


def test_noqa_and_notebook_errors_name_their_cell_and_line(tmp_path: Path) -> None:
    from torchport.check import check_paths

    (tmp_path / "b.py").write_text("import torch\nx = 1  # noqa: TP999\n")
    cells = [["x = 1\n"], ["y = 2\n", "def broken(:\n"], ["z = 1\n", "w = 1  # noqa: TP998\n"]]
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": c} for c in cells],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "n.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    errors = check_paths([tmp_path]).errors
    places = {
        (Path(e["path"]).name, e["cell"], e["line"]) for e in json.loads(render_json([], errors))
    }
    assert places == {("b.py", None, 2), ("n.ipynb", 2, 2), ("n.ipynb", 3, 2)}


@given(st.text(alphabet="a \r\n\t", max_size=30))
def test_the_text_reports_lines_are_the_line_ends_python_counts(text: str) -> None:
    # files/_text.py splits without its pattern where the text has no "\r": the same list
    from torchport.check.files._text import _lines

    assert _lines(text) == re.split(r"\r\n|\r|\n", text)
