"""`torchport run` reaches every process: children, torchrun workers, and its own end (signals)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchport.run._children import through_torchport

SCRIPTS = Path(__file__).parent / "scripts"
# PYTHONFAULTHANDLER: a child that hangs prints every thread's stack on SIGABRT (finish()).
ENV = {
    **os.environ,
    "PYTHONWARNINGS": "ignore",
    "OMP_NUM_THREADS": "1",
    "PYTHONFAULTHANDLER": "1",
}
for _name in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID"):
    ENV.pop(_name, None)


def torch_file() -> str:
    import torch

    return str(Path(torch.__file__).parent / "utils" / "collect_env.py")


def _interruptible() -> None:
    # A test run started in the background of a shell script (`pytest ... &`) inherits SIGINT
    # ignored, and so would every child: Python then installs no KeyboardInterrupt handler
    # and Ctrl-C does nothing, by design. The child gets SIGINT as a terminal's job has it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def torchport_run(*argv: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "torchport", "run", "-q", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,  # the child runs no thread before exec
        **kwargs,  # type: ignore[call-overload]
    )


def finish(process: subprocess.Popen[str], timeout: float = 120) -> tuple[str, str]:
    """The child's output once it ends; past ``timeout``, a failure showing where it hangs."""
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)  # faulthandler (ENV) dumps every thread's stack
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            out, err = "", "(no stack: the child did not answer SIGABRT)"
        raise AssertionError(
            f"the child ran past {timeout} s; stdout:\n{out}\nstderr:\n{err}"
        ) from None
    finally:
        if process.poll() is None:
            process.kill()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# Each child prints: tag, is_available(), the top-level DEVICE, where .cuda() and Module.to(0) land.
REDIRECTED = "True cuda cpu cpu"


@pytest.mark.parametrize("methods", [("spawn", "fork")])
def test_children_started_with_multiprocessing_are_redirected(methods: tuple[str, ...]) -> None:
    process = torchport_run("--device", "cpu", str(SCRIPTS / "children.py"), *methods, env=ENV)
    out, err = finish(process)
    assert process.returncode == 0, err[-3000:]
    assert out.splitlines() == [f"{method} {REDIRECTED}" for method in methods]


def test_python_scripts_started_with_subprocess_are_redirected() -> None:
    script = str(SCRIPTS / "subprocess_child.py")
    process = torchport_run("--device", "cpu", script, "parent", env=ENV)
    out, err = finish(process)
    assert process.returncode == 0, err[-3000:]
    # The child's own arguments stay its own (--device x is not torchport's).
    assert out.splitlines() == [
        "['parent'] True cpu",
        "['child', '--device', 'x'] True cpu",
    ]


HERE = str(SCRIPTS / "echo_args.py")
RUN = ["-m", "torchport", "run", "--quiet", "--device", "cpu"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([sys.executable, HERE, "1"], [sys.executable, *RUN, HERE, "1"]),
        (
            (sys.executable, "-u", "-W", "ignore", "-Xutf8", Path(HERE), "-m", "x"),
            [sys.executable, "-u", "-W", "ignore", "-Xutf8", *RUN, HERE, "-m", "x"],
        ),
        ([sys.executable, "echo_args.py"], [sys.executable, *RUN, "echo_args.py"]),  # in cwd
        ([sys.executable, "-m", "initpkg.ranks"], [sys.executable, *RUN, "-m", "initpkg.ranks"]),
        ([sys.executable, "-m", "pip", "list"], None),  # -m pip must stay pip
        ([sys.executable, "-m", "json.tool"], None),  # the standard library's modules too
        ([sys.executable, "-m", "no_such_module_xyz"], None),  # python's own error, unchanged
        ([sys.executable, "-c", "print(1)"], None),
        ([sys.executable, "--unknown-option", HERE], None),
        ([sys.executable, "no/such/script.py"], None),
        (["/bin/echo", HERE], None),  # another program
        (f"{sys.executable} {HERE}", None),  # a string, for a shell or not
        ([sys.executable, torch_file()], None),  # torch's own scripts are torch's business
    ],
)
def test_which_commands_go_through_torchport(args: object, expected: list[str] | None) -> None:
    assert through_torchport(args, "cpu", cwd=SCRIPTS) == expected


@pytest.mark.slow
def test_forkserver_and_torch_multiprocessing_spawn_children_are_redirected() -> None:
    argv = ("forkserver", "torch.multiprocessing.spawn")
    process = torchport_run("--device", "cpu", str(SCRIPTS / "children.py"), *argv, env=ENV)
    out, err = finish(process)
    assert process.returncode == 0, err[-3000:]
    assert sorted(out.splitlines()) == [f"{tag} {REDIRECTED}" for tag in ("0", "1", "forkserver")]


def test_a_redirected_child_writes_each_line_in_one_write() -> None:
    # An unbuffered child (spawn passes `-u` on) would write a print's text and its
    # newline apart, and siblings' lines would land between them.
    code = (
        "import sys\n"
        "from torchport.run._redirect import enter_in_child\n"
        "enter_in_child('cpu', 1)\n"
        "print(type(sys.stdout).__name__, 'a', 'b', sep=' ')\n"
    )
    out = subprocess.run(
        [sys.executable, "-u", "-c", code], env=ENV, capture_output=True, text=True, check=True
    ).stdout
    assert out == "WholeLines a b\n"


def test_ctrl_c_prints_the_traceback_runs_atexit_and_dies_by_sigint() -> None:
    process = torchport_run("--device", "cpu", str(SCRIPTS / "interrupted.py"), env=ENV)
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        process.send_signal(signal.SIGINT)
    finally:
        out, err = finish(process)
    assert process.returncode == -signal.SIGINT  # killed by the signal: `while` loops in sh stop
    assert out == "atexit cpu\n"  # the handler ran while the redirect was still in place
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].startswith(f'  File "{SCRIPTS / "interrupted.py"}"')
    assert lines[-1] == "KeyboardInterrupt" and "torchport" not in err


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_launcher_stops_torchrun_and_every_worker(signum: signal.Signals) -> None:
    # SIGTERM is passed on to torchrun; after SIGKILL, Linux tells torchrun (PR_SET_PDEATHSIG).
    process = torchport_run("--nproc", "2", "--device", "cpu", str(SCRIPTS / "sleeper.py"), env=ENV)
    pids: set[int] = set()
    try:
        assert process.stdout is not None
        for _ in range(2):
            _, worker, launcher = process.stdout.readline().split()
            pids |= {int(worker), int(launcher)}  # the workers and torchrun, their parent
        assert len(pids) == 3 and all(alive(pid) for pid in pids)
        process.send_signal(signum)
    finally:
        finish(process, timeout=60)
    assert process.returncode == -signum
    deadline = time.monotonic() + 30  # torchrun gives workers up to 30 s before SIGKILL
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if alive(pid)]


MODULE = ("-m", "initpkg.ranks")


@pytest.mark.slow
def test_every_rank_sees_its_devices_imports_its_package_once_and_writes_whole_lines(
    tmp_path: Path,
) -> None:
    log = tmp_path / "imports.log"
    env = {**ENV, "INITPKG_LOG": str(log), "RANKS_BARRIER": str(tmp_path / "barrier")}
    process = subprocess.Popen(
        [sys.executable, "-m", "torchport", "run", "--nproc", "2", "--device", "cpu", *MODULE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=SCRIPTS,
    )
    out, err = finish(process)
    assert process.returncode == 0, err[-3000:]
    # Once per worker, never in the launcher, and always after the redirect was in place.
    imports = log.read_text().splitlines()
    assert len(imports) == 2 and all(line.endswith(" True") for line in imports)
    lines = out.splitlines()
    assert sorted(line for line in lines if line.startswith("rank")) == [
        "rank 0 count 2 current 0 on cpu",
        "rank 1 count 2 current 1 on cpu",
    ]
    body = [line for line in lines if not line.startswith("rank")]
    pattern = r"line [01] \d+ x{50} |more [01] \d+"
    broken = [line for line in body if not re.fullmatch(pattern, line)]
    assert len(body) == 8000 and not broken, broken[:3]  # no line mixes two workers' writes
    assert err.count("torchport run: CUDA is redirected to cpu: the script sees 2 devices") == 1
