"""`torchport run`: a CUDA-only script runs unchanged on the CPU, as `python script.py` would."""

from __future__ import annotations

import atexit
import json
import os
import runpy
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import serialization

from torchport.cli._main import main

SCRIPTS = Path(__file__).parents[1] / "run" / "scripts"
ECHO = str(SCRIPTS / "echo_args.py")
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


@pytest.fixture
def gpu_checkpoint(tmp_path: Path) -> Path:
    """A small state dict saved with its storages tagged ``cuda:0``."""
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    entry = (-1000, lambda storage: "cuda:0", lambda storage, location: None)
    serialization._package_registry.insert(0, entry)  # taggers are tried in order
    try:
        torch.save(model.state_dict(), tmp_path / "model.pt")
    finally:
        serialization._package_registry.remove(entry)
    return tmp_path / "model.pt"


def run_cli(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", "run", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )


def test_cuda_only_script_matches_its_hand_port(
    gpu_checkpoint: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The hand port runs in this process with plain python semantics, no torchport.
    monkeypatch.setattr(sys, "argv", [str(SCRIPTS / "cpu_train.py"), str(gpu_checkpoint)])
    runpy.run_path(str(SCRIPTS / "cpu_train.py"), run_name="__main__")
    ported = capsys.readouterr().out
    redirected = run_cli("--device", "cpu", str(SCRIPTS / "cuda_train.py"), str(gpu_checkpoint))
    assert redirected.returncode == 0, redirected.stderr
    assert redirected.stdout == ported
    assert ported.count("loss") == 3
    # A script that already runs on the CPU gives the same results under run --device cpu.
    assert main(["run", "--device", "cpu", str(SCRIPTS / "cpu_train.py"), str(gpu_checkpoint)]) == 0
    assert capsys.readouterr().out == ported


def test_stdin_argv_and_exit_code_pass_through() -> None:
    result = run_cli("--device", "cpu", ECHO, "5", "--stdin", "--device", "x", stdin="piped in\n")
    assert result.returncode == 5, result.stderr
    seen = json.loads(result.stdout)
    assert seen == {
        "argv": [ECHO, "5", "--stdin", "--device", "x"],
        "name": "__main__",
        "file": ECHO,
        "path0": str(SCRIPTS),
        "stdin": "piped in\n",
    }


def test_bad_input_is_one_line_and_exit_2_in_a_real_process() -> None:
    result = run_cli("--device", "cpu", "no/such/script.py")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        "torchport run: error: script 'no/such/script.py' does not exist"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["missing.py"], "does not exist"),
        ([str(SCRIPTS)], "is a folder without __main__.py"),
        (["-m", "no_such_module_xyz"], "no module named 'no_such_module_xyz'"),
        (["-m", "torchport.cli"], "no module named 'torchport.cli'"),  # package without __main__
        (["--device", "gpu9", ECHO], "--device='gpu9' is not a device string"),
        (["--device", "cuda:99", ECHO], "pass one of those to --device"),
        (["--nproc", "0", ECHO], "--nproc must be at least 1"),
        ([], "nothing to run"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert captured.err.startswith("torchport run: error: ") and expected in captured.err


def test_argv_name_and_path_match_python(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--device", "cpu", ECHO, "3", "--audit", "-m"]) == 3
    seen = json.loads(capsys.readouterr().out)
    assert seen["argv"] == [ECHO, "3", "--audit", "-m"]
    assert (seen["name"], seen["path0"]) == ("__main__", str(SCRIPTS))
    assert sys.argv[0] != ECHO  # restored


def test_argv_0_stays_as_given_and_file_is_absolute(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(SCRIPTS.parent)
    assert main(["run", "-q", "--device", "cpu", "scripts/echo_args.py", "0"]) == 0
    seen = json.loads(capsys.readouterr().out)
    assert seen["argv"] == ["scripts/echo_args.py", "0"]  # as `python scripts/echo_args.py 0`
    assert (seen["file"], seen["path0"]) == (ECHO, str(SCRIPTS))


def test_a_folder_runs_its_main_as_python_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text(
        "import sys, torch\nprint(sys.argv, sys.path[0], __name__, torch.ones(1).cuda().device)\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "-q", "--device", "cpu", "app", "x"]) == 0
    assert capsys.readouterr().out == f"['app', 'x'] {app} __main__ cpu\n"  # as `python app x`


def test_module_runs_its_package_init_once_and_redirected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "imports.log"
    monkeypatch.setenv("INITPKG_LOG", str(log))
    monkeypatch.chdir(SCRIPTS)
    for name in ("initpkg", "initpkg.ranks"):
        monkeypatch.delitem(sys.modules, name, raising=False)  # monkeypatch drops ours after
    assert main(["run", "-q", "--device", "cpu", "-m", "initpkg.ranks"]) == 0
    assert capsys.readouterr().out.startswith("rank 0 count 1 current 0 on cpu\n")
    assert log.read_text() == f"{os.getpid()} True\n"  # once, with CUDA already redirected


def test_threads_and_atexit_handlers_finish_before_the_redirect_ends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    register = atexit.register
    assert main(["run", "-q", "--device", "cpu", str(SCRIPTS / "lingering.py")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines[:2]) == ["main done", "pool cpu"]  # the open pool still ran its work
    # Python's order at exit: threads joined, then atexit handlers, last registered first.
    assert lines[2:] == ["thread True cpu", "atexit second 1", "atexit first cpu"]
    assert atexit.register is register  # the script's handlers ran here, not at pytest's exit


_ANNOUNCED = (
    "torchport run: CUDA is redirected to cpu: the script sees 1 device and each one is cpu "
    "(--quiet hides this line)\n"
)

# Each asks for CUDA once, in a different way the redirect changes; prints after it.
_TOUCHES_CUDA = [
    "import sys, torch\nprint(torch.cuda.is_available(), file=sys.stderr)\n",
    "import sys, torch\nx = torch.zeros(2, device='cuda:0')\nprint(x.device, file=sys.stderr)\n",
    "import sys, torch\nx = torch.ones(1).to(0)\nprint(x.device, file=sys.stderr)\n",
    "import sys, torch\nm = torch.nn.Linear(1, 1).cuda()\nprint('moved', file=sys.stderr)\n",
    "import sys, torch\nx = torch.cuda.FloatTensor(2)\nprint(x.device, file=sys.stderr)\n",
]


# A child run each: every rank for the first way in the default run, the other ways with no
# rank; the slow run (`-m slow`) has the rest.
_ANNOUNCING = [
    pytest.param(rank, said, source, marks=() if rank is None or i == 0 else pytest.mark.slow)
    for i, source in enumerate(_TOUCHES_CUDA)
    for rank, said in [(None, True), ("0", True), ("1", False)]
]


@pytest.mark.parametrize(("rank", "said", "source"), _ANNOUNCING)
def test_the_redirect_is_announced_once_on_stderr_when_it_acts(
    rank: str | None,
    said: bool,
    source: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if rank is None:
        monkeypatch.delenv("RANK", raising=False)
    else:
        monkeypatch.setenv("RANK", rank)
    script = tmp_path / "touches.py"
    script.write_text(source + "import torch\ntorch.cuda.is_available()\n")  # and again
    assert main(["run", "--device", "cpu", str(script)]) == 0
    err = capsys.readouterr().err
    if said:  # once, before what the script printed about it
        assert err.startswith(_ANNOUNCED) and err.count("CUDA is redirected") == 1
    else:
        assert "CUDA is redirected" not in err


def test_a_script_that_never_names_cuda_is_not_told_it_is_redirected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the quickstart: the device comes from torchport, whose own CUDA probes do not count."""
    monkeypatch.delenv("RANK", raising=False)
    script = tmp_path / "portable.py"
    script.write_text(
        "import torch, torchport as tp\n"
        "device = tp.pick_device()\n"
        "tp.doctor()\n"
        "x = torch.ones(3, device=device).to(device)\n"
        "print(device.type == 'cuda', x.sum().item())\n"
    )
    assert main(["run", "--device", "cpu", str(script)]) == 0
    out, err = capsys.readouterr()
    assert out == "False 3.0\n"
    assert "CUDA is redirected" not in err


def test_module_form(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(SCRIPTS)
    assert main(["run", "--device", "cpu", "-m", "echo_args", "4", "x"]) == 4
    seen = json.loads(capsys.readouterr().out)
    assert seen["argv"] == [ECHO, "4", "x"]  # as python -m: argv[0] is the module's file
    assert (seen["name"], seen["path0"]) == ("__main__", str(SCRIPTS))


@pytest.mark.parametrize(("arg", "code"), [("0", 0), ("message", 1), ("none", 0)])
def test_exit_codes(arg: str, code: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--quiet", "--device", "cpu", ECHO, arg]) == code
    if arg == "message":
        assert capsys.readouterr().err == "a message for stderr\n"


def test_script_exception_prints_its_traceback_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "-q", "--device", "cpu", ECHO, "raise"]) == 1
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].startswith(f'  File "{ECHO}"')  # torchport's and runpy's frames trimmed
    assert lines[-1] == "KeyError: 'from the script'"


def test_cuda_graph_fails_with_the_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--device", "cpu", str(SCRIPTS / "cuda_graph.py")]) == 1
    captured = capsys.readouterr()
    assert captured.out == "before the graph\n"
    last = captured.err.splitlines()[-1]
    assert last.startswith("torchport.RedirectError: torch.cuda.CUDAGraph has no meaning on cpu")
    assert "torchport/run" not in captured.err  # the stand-in's own frame is trimmed


AUDIT_ME = str(SCRIPTS / "audit_me.py")


@pytest.mark.parametrize(("args", "code"), [((), 3), (("mismatch",), 1)])
def test_audit_report_is_printed_at_exit_however_the_script_ends(
    args: tuple[str, ...], code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--device", "cpu", "--audit", AUDIT_ME, *args]) == code
    captured = capsys.readouterr()
    assert captured.out == "3.0\n"
    assert "audit_me.py:8" in captured.err  # the .item() line, reported by source line
    if code == 1:  # the traceback comes first, the report after it
        assert captured.err.index("Traceback") < captured.err.index("audit_me.py:8")


def test_strict_names_the_mismatch(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--device", "cpu", "--strict", AUDIT_ME, "mismatch"]) == 1
    err = capsys.readouterr().err
    last = err.splitlines()[-1]
    assert last.startswith("torchport.DeviceMismatchError: device mismatch: Linear got input 0")
    assert "on meta" in last and "torchport/run" not in err


def test_ctrl_c_before_the_script_starts_also_ends_by_sigint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torchport.run._command

    def interrupted(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt  # as if Ctrl-C came while torch was being imported

    signals: list[int] = []
    monkeypatch.setattr(torchport.run._command, "run_target", interrupted)
    monkeypatch.setattr(
        torchport.run._command, "die_by_signal", lambda signum: signals.append(signum) or 130
    )
    assert main(["run", ECHO]) == 130
    assert signals == [signal.SIGINT]  # the real one kills this process by SIGINT
