"""docs/ci.md's recipes hold: the workflow's commands exist, its SARIF is what code scanning takes.

The SARIF check is written from GitHub's documented requirements for uploads
(docs.github.com, "SARIF support for code scanning"), not from torchport's writer:
version 2.1.0; at most 20 runs; a named tool driver; rule ids unique, and every
result's ``ruleId`` (and ``ruleIndex``, where given) naming one of them; every result
with a message, a level SARIF allows, and at least one location whose artifact is a
URI relative to the checked root with a region starting at line >= 1 and column >= 1;
at most 25,000 results and 25,000 rules per run.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import page_blocks as pages
import yaml

import torchport

ROOT = pages.ROOT
PAGE = ROOT / "docs" / "ci.md"


def _workflow() -> dict[str, Any]:
    (block,) = [b for b in pages.blocks(PAGE) if b.argument.startswith(".github/workflows/")]
    loaded: dict[str, Any] = yaml.safe_load(block.text)
    return loaded


def _torchport_argv(command: str) -> list[str] | None:
    words = shlex.split(command, comments=True)
    while words and "=" in words[0]:
        words = words[1:]  # VAR=value prefixes
    return words[1:] if words and words[0] == "torchport" else None


def test_every_torchport_step_of_the_workflow_parses() -> None:
    from torchport.cli._main import build_parser

    parser = build_parser()
    runs = [
        step["run"]
        for job in _workflow()["jobs"].values()
        for step in job["steps"]
        if "run" in step
    ]
    argvs = [argv for argv in map(_torchport_argv, runs) if argv is not None]
    assert len(argvs) >= 2
    for argv in argvs:
        assert not parser.parse_known_args(argv)[1], argv


def test_the_sarif_step_and_the_upload_name_the_same_file() -> None:
    check = _workflow()["jobs"]["check"]
    assert check["permissions"]["security-events"] == "write"  # upload-sarif needs it
    written = None
    for step in check["steps"]:
        argv = _torchport_argv(step.get("run", "")) or []
        if "sarif" in argv:
            assert "--exit-zero" in argv  # the upload must run even with findings
            written = argv[argv.index("--output-file") + 1]
        if step.get("uses", "").startswith("github/codeql-action/upload-sarif@"):
            assert written is not None, "the upload comes before the report is written"
            assert "cancelled()" in step["if"]  # also after an exit 2 (an unparsable file)
            assert step["with"]["sarif_file"] == written


def test_the_test_job_runs_on_cpu_and_sim_with_the_torch_ci_pins() -> None:
    test = _workflow()["jobs"]["test"]
    assert test["env"]["TORCHPORT_TEST_DEVICES"] == "cpu,sim"
    pin = re.search(r"^torch==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M)
    assert pin is not None
    installs = [step["run"] for step in test["steps"] if "run" in step]
    assert any(f"torch=={pin[1]}" in run and "/whl/cpu" in run for run in installs)


def _check_code_scanning_shape(log: dict[str, Any], root: Path) -> None:
    assert log["version"] == "2.1.0" and "$schema" in log
    assert 1 <= len(log["runs"]) <= 20
    for run in log["runs"]:
        driver = run["tool"]["driver"]
        assert isinstance(driver["name"], str) and driver["name"]
        ids = [rule["id"] for rule in driver.get("rules", [])]
        assert len(ids) == len(set(ids)) and len(ids) <= 25_000
        assert len(run["results"]) <= 25_000
        for result in run["results"]:
            assert result["ruleId"] in ids
            if "ruleIndex" in result:
                assert ids[result["ruleIndex"]] == result["ruleId"]
            assert result["message"]["text"].strip()
            assert result.get("level", "warning") in {"none", "note", "warning", "error"}
            assert result["locations"], "code scanning drops a result without a location"
            for location in result["locations"]:
                physical = location["physicalLocation"]
                uri = physical["artifactLocation"]["uri"]
                assert not re.match(r"^[a-z]+:|^/", uri), f"{uri} is not relative"
                assert (root / uri).is_file(), uri
                region = physical["region"]
                assert region["startLine"] >= 1 and region.get("startColumn", 1) >= 1
                assert region.get("endLine", region["startLine"]) >= region["startLine"]


def test_the_workflows_sarif_command_writes_what_code_scanning_takes(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    (tmp_path / "clean.py").write_text("x = 1\n")
    (tmp_path / "broken.py").write_text("def (:\n")
    step = next(
        step["run"]
        for step in _workflow()["jobs"]["check"]["steps"]
        if "sarif" in step.get("run", "")
    )
    done = subprocess.run(
        [sys.executable, "-m", "torchport", *(_torchport_argv(step) or [])],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    # --exit-zero covers findings; the unparsable file is an error (2), reported all the same
    assert done.returncode == 2 and "broken.py" in done.stderr, done.stderr
    log = json.loads((tmp_path / "torchport.sarif").read_text(encoding="utf-8"))
    _check_code_scanning_shape(log, tmp_path)
    (notice,) = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert notice["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"
    results = log["runs"][0]["results"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == {
        "pkg/train.py"
    }


def test_the_pre_commit_recipes_name_real_hooks_and_the_current_release() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    from torchport.cli._main import build_parser

    for hook in hooks:
        program, *argv = shlex.split(hook["entry"])
        assert program in scripts, f"{hook['id']}: no console script {program!r}"
        assert hook["language"] == "python"
        assert not build_parser().parse_known_args(argv)[1], hook["entry"]
    configs = [yaml.safe_load(b.text) for b in pages.blocks(PAGE) if "repos" in b.text]
    remote, local = configs
    assert remote["repos"][0]["rev"] == f"v{torchport.__version__}"
    known = {hook["id"] for hook in hooks}
    assert {hook["id"] for hook in remote["repos"][0]["hooks"]} <= known
    for hook in local["repos"][0]["hooks"]:
        program, *argv = shlex.split(hook["entry"])
        assert program in scripts and not build_parser().parse_known_args(argv)[1]
        assert hook["types_or"] == next(h for h in hooks if h["id"] == hook["id"])["types_or"]
