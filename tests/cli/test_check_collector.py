"""The cyclic collector around a check: the program's own check leaves it paused to the end
(the process ends after the report: no scan of all the run kept), a check called in-process
leaves it as it found it, and a worker process keeps its own paused for its whole life (as
a run in one process does for all its chunks) whatever its parent's was doing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TINY = "import torch\nx = torch.zeros(3).cuda()\nprint(x)\n"

# Run as the program (`main()` with sys.argv), the exit replaced by a record of the
# collector's state then; the report is printed as the program prints it.
_PROGRAM = """
import gc, sys
import torchport.cli._main as m
seen = []
m.exit_now = lambda code: seen.append((code, gc.isenabled()))
sys.argv = ["torchport", "check", "--no-cache", sys.argv[1]]
code = m.main()
print("EXIT", code, seen, file=sys.stderr)
"""
_IN_PROCESS = """
import gc, sys
from torchport.cli._main import main
before = gc.isenabled()
code = main(["check", "--no-cache", sys.argv[1]])
print("EXIT", code, before, gc.isenabled(), file=sys.stderr)
"""
_WORKER = """
import gc, os
from torchport.check.files._paths import _die_with_parent
gc.enable()
_die_with_parent(os.getppid())
print(gc.isenabled())
"""


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False
    )


def test_the_programs_check_ends_with_the_collector_paused(tmp_path: Path) -> None:
    path = tmp_path / "tiny.py"
    path.write_text(TINY)
    program = _run(_PROGRAM, str(path))
    in_process = _run(_IN_PROCESS, str(path))
    assert program.stderr.strip().splitlines()[-1] == "EXIT 1 [(1, False)]"
    assert in_process.stderr.strip().splitlines()[-1] == "EXIT 1 True True"
    assert program.stdout == in_process.stdout  # the same report
    assert "TP101" in program.stdout


def test_a_worker_keeps_its_collector_paused_whatever_its_parent_was_doing() -> None:
    assert _run(_WORKER).stdout.strip() == "False"
