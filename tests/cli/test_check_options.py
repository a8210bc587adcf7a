"""`torchport check`'s Ruff-grade options, with test-only rules (flagging `flag` and `other`)."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import torchport.check.rules as rules_pkg
from torchport.check._context import Context
from torchport.check._rule import Finding, Fix, FixSafety, Rule
from torchport.cli._main import main


class Flag(Rule):
    """What it does: test rule flagging the name `flag` (fix: `flag` -> `flag_`).

    Why is this bad? It is a test.
    """

    code = "TP9930"
    name = "test-flag"
    message = "rename flag"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Name,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id == "flag":
            yield ctx.finding(self, node, fix=Fix((ctx.replace(node, "flag_"),), FixSafety.SAFE))


class Other(Rule):
    """What it does: test rule flagging the name `other`.

    Why is this bad? It is a test.
    """

    code = "TP9931"
    name = "test-other"
    message = "rename other"
    node_types = (ast.Name,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id == "other":
            yield ctx.finding(self, node)


@pytest.fixture(autouse=True)
def with_test_rules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(rules_pkg, "RULES", (Flag, Other))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TORCHPORT_CACHE_DIR", raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_exit_zero_quiet_and_output_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text("x = flag\n")
    assert run(capsys, "check", "--exit-zero", "a.py")[0] == 0
    code, out, _ = run(capsys, "check", "-q", "--format", "concise", "a.py")
    assert code == 1 and out == "a.py:1:5: TP9930 [*] rename flag\n"  # no summary
    code, out, _ = run(capsys, "check", "-o", "report.txt", "a.py")
    assert code == 1 and out == ""
    assert (tmp_path / "report.txt").read_text().startswith("a.py:1:5: TP9930")
    (tmp_path / "bad.py").write_text("def (:\n")
    assert run(capsys, "check", "--exit-zero", ".")[0] == 2  # errors still fail


@pytest.mark.parametrize("command", ["check", "fix", "port"])
def test_an_output_file_that_cannot_be_written_stops_the_run_before_any_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    source = "import torch\nx = flag\ny = torch.zeros(2).cuda()\n"
    (tmp_path / "a.py").write_text(source)
    (tmp_path / "plain").write_text("")
    for target in (".", "plain/report.txt"):  # a folder; a path under a file
        code, out, err = run(capsys, command, "-o", target, "a.py")
        assert code == 2 and f"--output-file {target}: cannot write the report" in err
        assert "Traceback" not in err and out == ""
        assert (tmp_path / "a.py").read_text() == source
    if command != "port":  # port's own rules are not among this module's test rules
        code, _, err = run(capsys, command, "-o", "new/folder/report.txt", "a.py")
        assert code in (0, 1) and (tmp_path / "new" / "folder" / "report.txt").is_file()


def test_text_shows_the_line_with_the_column_marked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text("if True:\n\tvalue = 1 + flag  # x\n")
    out = run(capsys, "check", "a.py")[1].splitlines()
    assert out[:3] == [
        "a.py:2:14: TP9930 [*] rename flag",
        "  2 | \tvalue = 1 + flag  # x",
        "    | \t            ^^^^",  # a tab stays a tab, so the marks line up under it
    ]
    out = run(capsys, "check", "--show-fixes", "a.py")[1]
    assert "  - \tvalue = 1 + flag  # x" in out and "  + \tvalue = 1 + flag_  # x" in out
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FORCE_COLOR", "1")
        coloured = run(capsys, "check", "a.py")[1]
    assert "\x1b[1;31mTP9930\x1b[0m" in coloured and "\x1b[1;31m^^^^\x1b[0m" in coloured


def test_a_long_line_is_windowed_around_the_column_and_its_location_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text("x = [" + "1, " * 200 + "flag]\n")
    out = run(capsys, "check", "a.py")[1].splitlines()
    assert out[0] == "a.py:1:606: TP9930 [*] rename flag"
    assert len(out[1]) < 200 and out[1].startswith("  1 | …")
    assert out[2].index("^") == out[1].index("flag")


def test_exclude_and_extend_exclude_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("keep/a.py", "gen/b.py", "legacy/c.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("flag\n")
    (tmp_path / "pyproject.toml").write_text('[tool.torchport]\nexclude = ["legacy/"]\n')

    def files(*argv: str) -> set[str]:
        out = run(capsys, "check", "--format", "json", *argv, ".")[1]
        return {Path(d["path"]).parent.name for d in json.loads(out)}

    assert files() == {"keep", "gen"}
    assert files("--extend-exclude", "gen/") == {"keep"}
    assert files("--exclude", "gen/") == {"keep", "legacy"}  # replaces the config's exclude


def test_a_folder_with_no_python_files_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# hi\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    code, out, err = run(capsys, "check", "docs")
    assert code == 2 and "docs: error: no Python files" in err and "All checks passed" not in out
    code, _, err = run(capsys, "check", "src", "docs")  # one empty folder among good ones
    assert code == 2 and "docs: error" in err
    (tmp_path / "pyproject.toml").write_text('[tool.torchport]\nexclude = ["src/"]\n')
    assert run(capsys, "check", "src")[0] == 2  # everything in it excluded: nothing checked
    assert run(capsys, "check", "src/a.py")[0] == 0  # a given file the config excludes: a pass


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--jobs", "-3"], "1 or more"),
        (["--jobs", "0"], "1 or more"),
        (["-j", "many"], "1 or more"),
        (["--select", "ALL", "--ignore", "ALL"], "no rule is left to run"),
        (["--ignore", "TP99"], "no rule is left to run"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["-", "a.py"], "'-' (read the source from stdin) must be the only path"),
    ],
)
def test_arguments_that_would_check_nothing_or_something_else_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    (tmp_path / "a.py").write_text("flag\n")
    args = argv if "-" in argv else [*argv, "a.py"]
    with pytest.raises(SystemExit) if argv[0] in ("--jobs", "-j", "--bogus") else _nothing():
        code, _, err = run(capsys, "check", *args)
        assert code == 2 and says in err
    if argv[0] in ("--jobs", "-j", "--bogus"):
        err = capsys.readouterr().err
        assert says in err and err.startswith("usage: torchport check ")  # check's usage


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "text"])
def test_statistics_honour_the_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    (tmp_path / "a.py").write_text("flag\nflag\nother\n")
    out = run(capsys, "check", "--statistics", "--format", fmt, "a.py")[1]
    if fmt == "json":
        assert json.loads(out) == [
            {"code": "TP9930", "name": "test-flag", "count": 2, "fixable": True},
            {"code": "TP9931", "name": "test-other", "count": 1, "fixable": False},
        ]
    elif fmt == "sarif":
        run_ = json.loads(out)["runs"][0]
        assert [s["count"] for s in run_["properties"]["statistics"]] == [2, 1]
        assert len(run_["results"]) == 3
    elif fmt == "github":
        assert out.splitlines()[0] == "::notice title=TP9930::2 x TP9930 test-flag"
    else:
        assert out.splitlines() == ["2  TP9930  [*] test-flag", "1  TP9931      test-other"]


def test_json_lists_parse_errors_with_their_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text("flag\n")
    (tmp_path / "b.py").write_text("x = 1\ndef (:\n")
    code, out, _ = run(capsys, "check", "--format", "json", ".")
    data = json.loads(out)
    assert code == 2
    assert [d["kind"] for d in data] == ["finding", "error"]
    error = data[1]
    assert error["code"] is None and error["path"] == "b.py" and error["line"] == 2
    assert "cannot parse" in error["message"]


# --- stdin --------------------------------------------------------------------------


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_stdin_is_decoded_as_a_file_is(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    latin = "# -*- coding: latin-1 -*-\ns = 'café'\nx = flag\n".encode("latin-1")
    _stdin(monkeypatch, latin)
    code, out, _ = run(capsys, "check", "-", "--format", "concise")
    assert code == 1 and out.startswith("-:3:5: TP9930")
    _stdin(monkeypatch, latin)
    raw = io.BytesIO()
    with monkeypatch.context() as patch:
        wrapper = io.TextIOWrapper(raw, encoding="utf-8")
        patch.setattr(sys, "stdout", wrapper)
        assert main(["fix", "-"]) == 0
        wrapper.flush()
        written = raw.getvalue()
    assert written == latin.replace(b"flag", b"flag_")  # in stdin's own encoding
    _stdin(monkeypatch, b"x = '\xff'\n")
    code, _, err = run(capsys, "check", "-")
    assert code == 2 and "- (stdin): not valid utf-8 at byte 5" in err
    _stdin(monkeypatch, "\ufeffx = flag\n".encode())  # a BOM
    assert run(capsys, "check", "-", "--format", "concise")[1].startswith("-:1:5: TP9930")


def test_port_reads_stdin_and_prints_the_ported_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.undo()  # the real rules
    source = "import torch\nfrom torch import nn\nmodel = nn.Linear(2, 1)\n"
    _stdin(monkeypatch, source.encode())
    code, out, err = run(capsys, "port", "-")
    assert code == 0, err
    assert "model = nn.Linear(2, 1).to(device)" in out and "ported -" in err


# --- rules --------------------------------------------------------------------------


def test_rule_all_lists_every_rule_with_on_off_fix_and_intent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchport]\nignore = ["TP9931"]\n')
    code, out, _ = run(capsys, "rule", "--all")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["code", "on", "fix", "intent", "name", "message"]
    assert lines[1].split()[:5] == ["TP9930", "yes", "safe", "device", "test-flag"]
    assert lines[2].split()[:5] == ["TP9931", "-", "none", "device", "test-other"]
    assert run(capsys, "check", "--explain", "ALL")[1] == out
    data = json.loads(run(capsys, "rule", "--all", "--format", "json")[1])
    assert [(r["code"], r["on"], r["default"]) for r in data] == [
        ("TP9930", True, True),
        ("TP9931", False, True),
    ]
    assert run(capsys, "rule")[0] == 2


# --- progress -----------------------------------------------------------------------


def test_progress_only_on_a_terminal_and_never_when_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text("flag\n")
    assert "files" not in run(capsys, "check", ".")[2]  # stderr is not a terminal here
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    err = run(capsys, "check", "--no-cache", ".")[2]
    assert "\r\x1b[2KChecking 5/5 files" in err and err.endswith("\r\x1b[2K")  # then cleared
    assert "Checking" not in run(capsys, "check", "-q", ".")[2]
    assert "Fixing 5/5 files" in run(capsys, "fix", "--diff", ".")[2]


# --- cache --------------------------------------------------------------------------


def _age(path: Path) -> None:
    """Date a file an hour back, as a file not edited during the run is."""
    old = time.time() - 3600
    os.utime(path, (old, old))


def test_a_second_check_replays_the_cache_and_an_edit_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchport.check import check_paths

    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = flag\n")
    b.write_text("y = other\n")
    _age(a), _age(b)
    first = check_paths(["."], cache=True)
    assert first.cached == 0 and (tmp_path / ".torchport_cache" / ".gitignore").is_file()
    second = check_paths(["."], cache=True)
    assert second.cached == 2
    assert second.findings == first.findings and second.sources == first.sources
    a.write_text("x = other\n")  # same size, and dated as before
    _age(a)
    third = check_paths(["."], cache=True)
    assert third.cached == 1 and {f.code for f in third.findings} == {"TP9931"}
    assert check_paths(["."], cache=True, ignore=["TP9931"]).findings == []  # other settings
    b.write_text("y = flag \n")  # just written: not cached until it has settled
    check_paths(["."], cache=True)
    assert check_paths(["."], cache=True).cached == 1


def test_a_cache_that_cannot_be_read_or_written_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchport.check import check_paths

    (tmp_path / "a.py").write_text("x = flag\n")
    _age(tmp_path / "a.py")
    cache = tmp_path / "cache"
    monkeypatch.setenv("TORCHPORT_CACHE_DIR", str(cache))
    expected = check_paths(["."]).findings
    assert check_paths(["."], cache=True).findings == expected
    for stored in cache.rglob("*.json"):
        stored.write_text("{not json")
    assert check_paths(["."], cache=True).findings == expected
    cache_file = next(cache.rglob("*.json"))
    cache_file.write_text(json.dumps({"x": {"stamp": "nonsense"}}))
    assert check_paths(["."], cache=True).findings == expected


@given(st.lists(st.sampled_from(["flag", "other", "x", "flag + other"]), min_size=1, max_size=6))
def test_cached_results_equal_fresh_ones(
    tmp_path_factory: pytest.TempPathFactory, names: list[str]
) -> None:
    from torchport.check import check_paths

    folder = tmp_path_factory.mktemp("cached")
    for i, name in enumerate(names):
        (folder / f"m{i}.py").write_text(f"v = {name}\n")
        _age(folder / f"m{i}.py")
    fresh = check_paths([folder])
    cache = folder / "c"
    first = check_paths([folder], cache=cache)
    again = check_paths([folder], cache=cache)
    assert again.cached == len(names)
    assert fresh.findings == first.findings == again.findings
    assert fresh.lines == again.lines and fresh.errors == again.errors


def test_a_crash_exits_2_never_1_which_means_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torchport.check

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(torchport.check, "check_paths", crash)
    code, _, err = run(capsys, "check", "--exit-zero", "a.py")
    assert code == 2 and "RuntimeError: boom" in err and "internal error" in err


_CELL_LINES = st.sampled_from(["a = 1", "b = flag", "c = (2,\n     flag)", "d = 3"])


@given(st.lists(st.lists(_CELL_LINES, max_size=3), min_size=1, max_size=4))
def test_show_fixes_in_a_notebook_shows_the_lines_of_the_cell_it_fixes(
    tmp_path_factory: pytest.TempPathFactory, cells: list[list[str]]
) -> None:
    folder = tmp_path_factory.mktemp("nb")
    notebook = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": "\n".join(lines)} for lines in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (folder / "n.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        main(["check", "--no-cache", "--show-fixes", str(folder / "n.ipynb")])
    shown = [line for line in out.getvalue().splitlines() if line.startswith(("  - ", "  + "))]
    # The oracle: each finding's line, as the cell holds it, and that line fixed.
    expected = []
    for lines in cells:
        for line in "\n".join(lines).split("\n"):
            if "flag" in line:
                expected += [f"  - {line}", f"  + {line.replace('flag', 'flag_')}"]
    assert shown == expected
