"""`torchport port` on tutorial-style scripts: same output on the CPU, all on the accelerator.

Every script under ``scripts/`` is ported, then run (originals and ports in
one subprocess per mode, see ``port_runner.py``):

* on the CPU, the port prints exactly what the original printed (seeded);
* with ``meta`` standing in for the accelerator, every forward of the port, in
  training and in evaluation, sees the parameters, buffers and tensor inputs on
  the accelerator, and the same check run on the original finds them on the CPU
  (so the check cannot pass by watching nothing);
* porting is idempotent, keeps every comment, and leaves nothing unported.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchport.check.port._rewrite import port_text
from torchport.check.rules._snippets import DEVICE_LINE

HERE = Path(__file__).parent
SCRIPTS = sorted((HERE / "scripts").glob("*.py"))
NAMES = [p.stem for p in SCRIPTS]


def _comments(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines() if line.strip().startswith("#")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each script's CPU and meta runs, original and ported, by "mode:kind:name"."""
    root = tmp_path_factory.mktemp("port_runs")
    jobs: list[dict[str, str]] = []
    for script in SCRIPTS:
        source = script.read_text()
        for kind, text in (("orig", source), ("ported", port_text(source).source)):
            for mode in ("cpu", "meta"):
                work = root / mode / kind / script.stem
                work.mkdir(parents=True)
                (work / "script.py").write_text(text)
                jobs.append(
                    {
                        "name": f"{mode}:{kind}:{script.stem}",
                        "script": str(work / "script.py"),
                        "workdir": str(work),
                    }
                )
    procs = []
    for mode in ("cpu", "meta"):
        todo, out = root / f"{mode}.json", root / f"{mode}.out.json"
        todo.write_text(json.dumps([j for j in jobs if j["name"].startswith(mode + ":")]))
        command = [sys.executable, str(HERE / "port_runner.py"), mode, str(todo), str(out)]
        procs.append((subprocess.Popen(command, stderr=subprocess.PIPE, text=True), out))
    results: dict[str, dict[str, Any]] = {}
    for proc, out in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        results.update({r["name"]: r for r in json.loads(out.read_text())})
    return results


def test_there_are_eight_kinds_of_script() -> None:
    assert {
        "mlp_tensors", "cnn_loader", "rnn_lm", "dict_batch", "eval_fn", "main_script",
        "checkpoint", "custom_collate",
    } <= set(NAMES)  # fmt: skip


@pytest.mark.parametrize("script", SCRIPTS, ids=NAMES)
def test_port_is_complete_idempotent_and_keeps_comments(script: Path) -> None:
    source = script.read_text()
    outcome = port_text(source, str(script))
    ported = outcome.source
    assert outcome.failures == []
    assert [str(f) for f in outcome.remaining] == []  # nothing left unported here
    assert ported != source and ported.count(DEVICE_LINE) == 1
    assert "torchport" not in ported
    ast.parse(ported)
    assert port_text(ported).source == ported
    assert _comments(ported) == _comments(source)


@pytest.mark.parametrize("name", NAMES)
def test_port_prints_the_same_on_the_cpu(runs: dict[str, dict[str, Any]], name: str) -> None:
    original, ported = runs[f"cpu:orig:{name}"], runs[f"cpu:ported:{name}"]
    assert original["error"] is None, original["error"]
    assert ported["error"] is None, ported["error"]
    assert original["stdout"].strip()
    assert ported["stdout"] == original["stdout"]


@pytest.mark.parametrize("name", NAMES)
def test_port_runs_every_forward_on_the_accelerator(
    runs: dict[str, dict[str, Any]], name: str
) -> None:
    ported = runs[f"meta:ported:{name}"]
    assert ported["error"] is None, ported["error"]  # ran to the end, no device mismatch
    assert ported["forwards"]["train"] >= 1 and ported["forwards"]["eval"] >= 1
    assert ported["off_device"] == []


@pytest.mark.parametrize("name", NAMES)
def test_the_accelerator_check_catches_the_original(
    runs: dict[str, dict[str, Any]], name: str
) -> None:
    original = runs[f"meta:orig:{name}"]
    assert original["forwards"]["train"] >= 1 and original["forwards"]["eval"] >= 1
    assert original["off_device"], "the original runs on the CPU: the check must see it"
