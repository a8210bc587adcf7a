"""A `check` run as the program ends the process itself (cli/_main.exit_now), skipping
the interpreter's teardown, only where that teardown has nothing to do: the report, the exit
code and every exit-time callback stay as they are."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from torchport.cli import _main

TINY = "import torch\nx = torch.zeros(3).cuda()\nprint(x)\n"


class _Exited(Exception):
    pass


@pytest.fixture
def exits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``os._exit`` recorded (and stopped), with an idle teardown: no callbacks, no threads."""
    calls: list[int] = []

    def fake_exit(code: int) -> None:
        calls.append(code)
        raise _Exited

    monkeypatch.setattr(_main.os, "_exit", fake_exit)
    monkeypatch.setattr("atexit._ncallbacks", lambda: 0)
    monkeypatch.delitem(sys.modules, "threading")  # pytest's own; put back after the test
    return calls


def test_an_idle_teardown_is_skipped_after_the_streams_are_flushed(
    exits: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    flushed: list[bool] = []
    monkeypatch.setattr(out, "flush", lambda: flushed.append(True))
    with pytest.raises(_Exited):
        _main.exit_now(1)
    assert exits == [1]
    assert flushed


@pytest.mark.parametrize("busy", ["atexit", "threading", "flush"])
def test_a_teardown_with_work_left_is_run(
    busy: str, exits: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    if busy == "atexit":
        monkeypatch.setattr("atexit._ncallbacks", lambda: 1)
    elif busy == "threading":
        monkeypatch.setitem(sys.modules, "threading", sys)  # any module under that name
    else:
        broken = io.StringIO()

        def fail() -> None:
            raise BrokenPipeError

        monkeypatch.setattr(broken, "flush", fail)
        monkeypatch.setattr(sys, "stdout", broken)
    _main.exit_now(1)  # returns: the usual exit runs
    assert exits == []


# A module-level object whose __del__ speaks runs only in the teardown; an atexit
# callback makes the teardown busy, so the usual exit must run it.
_PROGRAM = """
import atexit, os, sys
class Speaks:
    def __del__(self):
        os.write(2, b"teardown ran\\n")
speaks = Speaks()
if {busy}:
    atexit.register(os.write, 2, b"atexit ran\\n")
sys.argv = ["torchport", "check", *{argv!r}, "tiny.py"]
from torchport.cli import main
raise SystemExit(main())
"""


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["--no-cache"], ["--no-cache", "--format", "json"]])
def test_the_program_skips_only_an_idle_teardown(tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "tiny.py").write_text(TINY)
    idle, busy = (
        subprocess.run(
            [sys.executable, "-c", _PROGRAM.format(busy=work, argv=argv)],
            cwd=tmp_path,
            capture_output=True,
            check=False,
        )
        for work in (False, True)
    )
    assert idle.returncode == busy.returncode == 1
    assert idle.stdout == busy.stdout
    assert b"TP101" in idle.stdout
    assert b"teardown ran" not in idle.stderr and b"atexit ran" not in idle.stderr
    assert b"atexit ran" in busy.stderr and b"teardown ran" in busy.stderr


def test_the_checker_loads_frozen_only_in_the_program(tmp_path: Path) -> None:
    # cli/check._imports_kept: run as the program, the checker's modules load with the
    # collector paused and are frozen after; called in-process (`main([...])`) nothing is
    # frozen, as a freeze would keep the caller's garbage for the process's life. A program
    # whose teardown has work (main returns) hands the frozen objects back to the collector
    # first: frozen, the teardown would neither free nor finalize them. Counts are read
    # against the count at start: CPython 3.12's interpreter starts with objects of its own
    # frozen (375 on 3.12.1; none on 3.11 and 3.13), which the program's exit hands back too.
    (tmp_path / "tiny.py").write_text(TINY)
    probe = (
        "import atexit, gc, sys\n"
        "from torchport.cli._main import main\n"
        "atexit.register(lambda: None)  # a teardown with work: main returns\n"
        "seen = []\n"
        "unfreeze = gc.unfreeze\n"
        "gc.unfreeze = lambda: (seen.append(gc.get_freeze_count()), unfreeze())[1]\n"
        "before = gc.get_freeze_count()\n"
        "code = main(['check', '--no-cache', 'tiny.py'])\n"
        "inside = (gc.get_freeze_count(), gc.isenabled(), code, len(seen))\n"
        "sys.argv = ['torchport', 'check', '--no-cache', 'tiny.py']\n"
        "code = main()\n"
        "print(inside[0] - before, *inside[1:], seen[0] > before, gc.get_freeze_count(),\n"
        "      gc.isenabled(), code)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    # The child's own words: a failed run elsewhere (the GPU machine's Python 3.12) must say why.
    assert out.returncode == 0, (out.returncode, out.stdout[-1500:], out.stderr[-3000:])
    expected = ["0", "True", "1", "0", "True", "0", "True", "1"]
    assert out.stdout.split()[-8:] == expected, out.stdout


# fix and port, and check's `--diff` (fix's dry run), run as the program: the collector the
# run paused stays paused for the exit (resumed, its first scan went over every tree and
# module fact the run kept), and an idle teardown is skipped as a check's. A busy teardown
# runs, with the collector resumed first.
_FIX_PROGRAM = """
import atexit, gc, os, sys
from torchport.cli import _main
class Speaks:
    def __del__(self):
        os.write(2, b"teardown ran\\n")
speaks = Speaks()
if {busy}:
    atexit.register(lambda: os.write(2, f"atexit ran, collector {{gc.isenabled()}}\\n".encode()))
real = _main.exit_now
def watched(code):
    os.write(2, f"exit with the collector {{gc.isenabled()}}\\n".encode())
    real(code)
_main.exit_now = watched
sys.argv = ["torchport", *{argv!r}, "tiny.py"]
raise SystemExit(_main.main())
"""
PORTABLE = "import torch\nmodel = torch.nn.Linear(2, 2)\nprint(model(torch.ones(2)).cuda())\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv", [["port", "--diff"], ["fix", "--diff", "--unsafe"], ["check", "--diff"], ["port"]]
)
def test_fix_and_port_programs_end_as_a_checks(tmp_path: Path, argv: list[str]) -> None:
    runs = []
    for work in (False, True):
        (tmp_path / "tiny.py").write_text(PORTABLE)
        runs.append(
            subprocess.run(
                [sys.executable, "-c", _FIX_PROGRAM.format(busy=work, argv=argv)],
                cwd=tmp_path,
                capture_output=True,
                check=False,
            )
        )
        runs[-1].written = (tmp_path / "tiny.py").read_text()  # type: ignore[attr-defined]
    idle, busy = runs
    assert idle.returncode == busy.returncode
    assert idle.stdout == busy.stdout
    assert idle.written == busy.written  # type: ignore[attr-defined]
    assert (idle.written != PORTABLE) == (argv == ["port"])  # type: ignore[attr-defined]
    assert b"exit with the collector False" in idle.stderr, idle.stderr
    assert b"teardown ran" not in idle.stderr and b"atexit ran" not in idle.stderr
    assert b"atexit ran, collector True" in busy.stderr, busy.stderr
    assert b"teardown ran" in busy.stderr
