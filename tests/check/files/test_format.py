"""Output formats: text, JSON, SARIF 2.1.0, GitHub annotations, statistics."""

from __future__ import annotations

import ast
import dataclasses
import json

import pytest
from hypothesis import given, settings
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
    changing = Fix((Edit(0, 1, "y"),), FixSafety.UNSAFE, changes="reseeds the CPU generator too")
    finding = dataclasses.replace(FINDINGS[0], fix=changing)
    note = "(the fix changes results: reseeds the CPU generator too)"
    assert render_text([finding]).splitlines()[0].endswith(note)
    assert (
        json.loads(render_json([finding]))[0]["fix"]["changes"] == "reseeds the CPU generator too"
    )
    assert json.loads(render_json(FINDINGS[:1]))[0]["fix"]["changes"] is None
    sarif = json.loads(render_sarif([finding], [FormatRule]))["runs"][0]["results"][0]
    assert sarif["message"]["text"].endswith(note)
    assert "reseeds the CPU generator too" in render_github([finding])
    assert "changes results" not in render_text(FINDINGS[:1])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["TP9970", "TP9971", "TP9972"]), st.booleans()), max_size=12)
)
def test_statistics_in_each_format_count_every_finding(drawn: list[tuple[str, bool]]) -> None:
    findings = [
        Finding("a.py", i + 1, 1, i + 1, 2, code, f"name-{code}", "msg", SAFE if safe else None)
        for i, (code, safe) in enumerate(drawn)
    ]
    rows = json.loads(render_statistics(findings, "json"))
    assert sum(r["count"] for r in rows) == len(findings)
    assert {r["code"] for r in rows} == {c for c, _ in drawn}
    for r in rows:
        assert r["fixable"] == any(c == r["code"] and s for c, s in drawn)
        assert r["name"] == f"name-{r['code']}"
    notices = render_statistics(findings, "github").splitlines()
    assert len(notices) == len(rows) and all(n.startswith("::notice title=TP99") for n in notices)
    text = render_statistics(findings, "text").splitlines()
    assert sum(int(line.split()[0]) for line in text) == len(findings)
    with pytest.raises(ValueError, match="not 'sarif'"):
        render_statistics(findings, "sarif")
