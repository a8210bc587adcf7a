"""`torchport check`: arguments, formats, exit codes (in process, with a test-only rule)."""

from __future__ import annotations

import ast
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import torchport.check.rules as rules_pkg
from torchport.check._context import Context
from torchport.check._rule import Finding, Rule
from torchport.cli._main import main


class CliRule(Rule):
    """What it does: test rule flagging the name `flag`.

    Why is this bad? It is a test.
    """

    code = "TP9950"
    name = "test-cli"
    message = "rename flag"
    node_types = (ast.Name,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id == "flag":
            yield ctx.finding(self, node)


class CliNoisy(Rule):
    """What it does: off-by-default test rule flagging `noisy`."""

    code = "TP9951"
    name = "test-cli-noisy"
    message = "quiet"
    default = False
    node_types = (ast.Name,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id == "noisy":
            yield ctx.finding(self, node)


@pytest.fixture(autouse=True)
def with_test_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules_pkg, "RULES", (CliRule, CliNoisy))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "a.py").write_text("x = flag\nnoisy\n")
    (tmp_path / "clean.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_output_and_exit_codes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_check(capsys, "a.py")
    assert code == 1
    assert out.splitlines()[0] == "a.py:1:5: TP9950 rename flag"
    assert run_check(capsys, "clean.py")[:2] == (0, "All checks passed.\n")
    code, _, err = run_check(capsys, "a.py", "--ignore", "TP9950")  # nothing left to run
    assert code == 2 and "no rule is left to run" in err
    code, out, _ = run_check(capsys, "a.py", "--extend-select", "TP9951")
    assert code == 1 and "a.py:2:1: TP9951 quiet" in out
    argv = ("a.py", "--select", "TP9951,TP9950", "--ignore", "TP9950", "--format", "concise")
    code, out, _ = run_check(capsys, *argv)
    assert [line.split()[1] for line in out.splitlines()[:-1]] == ["TP9951"]


def test_default_path_is_the_working_folder(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_check(capsys)
    assert code == 1 and out.startswith("a.py:1:5:")


def test_unreadable_file_is_named_and_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "broken.py").write_text("def (:\n")
    code, out, err = run_check(capsys, ".")
    assert code == 2
    assert "broken.py: error: cannot parse" in err
    assert "a.py:1:5: TP9950" in out  # the other files are still checked
    code, _, err = run_check(capsys, "missing.py")
    assert code == 2 and "missing.py" in err


def test_config_errors_exit_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_check(capsys, "--select", "TP1234", "a.py")
    assert code == 2 and "TP1234" in err
    (project / "pyproject.toml").write_text("[tool.torchport]\nbogus = 1\n")
    code, _, err = run_check(capsys, "a.py")
    assert code == 2 and "bogus" in err and "pyproject.toml" in err
    (project / "alt.toml").write_text('[tool.torchport]\nselect = ["TP9951"]\n')
    code, out, _ = run_check(capsys, "--config", "alt.toml", "a.py")
    assert code == 1 and "TP9951" in out and "TP9950" not in out


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_formats(project: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, _ = run_check(capsys, "--format", fmt, "a.py")
    assert code == 1
    if fmt == "json":
        assert [d["code"] for d in json.loads(out)] == ["TP9950"]
    elif fmt == "sarif":
        log = json.loads(out)
        assert log["runs"][0]["results"][0]["ruleId"] == "TP9950"
        assert [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]] == ["TP9950"]
    else:
        assert out.startswith("::warning file=a.py,line=1,col=5,")


def test_statistics(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "b.py").write_text("flag\nflag\nnoisy\n")
    code, out, _ = run_check(capsys, "--statistics", "--extend-select", "TP9951", ".")
    assert code == 1
    assert out.splitlines() == ["3  TP9950      test-cli", "2  TP9951      test-cli-noisy"]


def test_explain_prints_the_rule_docs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torchport.check

    monkeypatch.setattr(torchport.check, "explain", lambda code: f"docs of {code}\n")
    assert run_check(capsys, "--explain", "TP9950") == (0, "docs of TP9950\n", "")


def test_explain_real_rule_and_unknown_code(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.undo()  # the real rules, not the test ones
    code, out, _ = run_check(capsys, "--explain", "TP101")
    assert code == 0 and "TP101" in out and "What it does" in out
    code, _, err = run_check(capsys, "--explain", "TP1011")
    assert code == 2 and "TP1011" in err


def test_stdin_named_by_stdin_filename(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("y = flag\n"))
    code, out, _ = run_check(capsys, "-", "--stdin-filename", "pkg/buffer.py")
    assert code == 1 and out.startswith("pkg/buffer.py:1:5: TP9950 rename flag")
    monkeypatch.setattr(sys, "stdin", io.StringIO("y = 1\n"))
    assert run_check(capsys, "-")[:2] == (0, "All checks passed.\n")


def test_stdin_notebook_named_by_stdin_filename(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    nb = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": ["%time x = 1\n", "y = flag"]}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(nb, indent=1)))
    code, out, _ = run_check(capsys, "-", "--stdin-filename", "nb.ipynb")
    assert code == 1 and out.startswith("nb.ipynb:cell 1:2:5: TP9950 rename flag")


def test_statistics_honour_the_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "b.py").write_text("flag\nflag\n")
    code, out, _ = run_check(capsys, "--statistics", "--format", "json", ".")
    assert code == 1
    assert [(r["code"], r["count"]) for r in json.loads(out)] == [("TP9950", 3)]
    code, out, _ = run_check(capsys, "--statistics", "--format", "github", ".")
    assert out.splitlines() == ["::notice title=TP9950::3 x TP9950 test-cli"]
    code, out, _ = run_check(capsys, "--statistics", "--format", "sarif", ".")
    run = json.loads(out)["runs"][0]  # a valid log: the counts beside the results
    assert code == 1 and run["properties"]["statistics"][0]["count"] == 3
