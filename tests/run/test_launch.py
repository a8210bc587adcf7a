"""The torchrun command line that `torchport run --nproc` builds."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport import ConfigError
from torchport.cli._main import build_parser
from torchport.run._launch import Rendezvous, torchrun_argv
from torchport.run._target import Target

SCRIPT = Target("train.py", ("--lr", "3e-4"))


def test_single_node_is_standalone_and_workers_run_under_torchport() -> None:
    argv = torchrun_argv(SCRIPT, nproc=4, device="cpu", python="py")
    assert argv == [
        "py", "-m", "torch.distributed.run", "--nproc-per-node", "4", "--standalone",
        "-m", "torchport", "run", "--device", "cpu", "train.py", "--lr", "3e-4",
    ]  # fmt: skip


def test_rendezvous_options_pass_through_and_disable_standalone() -> None:
    rdzv = Rendezvous(
        nnodes="2", node_rank=1, rdzv_endpoint="head:29400", rdzv_backend="c10d", rdzv_id="job7"
    )
    argv = torchrun_argv(SCRIPT, nproc=8, rendezvous=rdzv, audit=True, strict=True, python="py")
    assert "--standalone" not in argv
    launcher, worker = argv[: argv.index("torchport")], argv[argv.index("torchport") :]
    assert launcher[5:] == [
        "--nnodes", "2", "--node-rank", "1", "--rdzv-endpoint", "head:29400",
        "--rdzv-backend", "c10d", "--rdzv-id", "job7", "-m",
    ]  # fmt: skip
    assert worker == ["torchport", "run", "--audit", "--strict", "train.py", "--lr", "3e-4"]


def test_master_port_alone_is_not_standalone() -> None:
    argv = torchrun_argv(SCRIPT, nproc=2, rendezvous=Rendezvous(master_port=29501))
    assert argv[0] == sys.executable
    assert "--standalone" not in argv and argv[argv.index("--master-port") + 1] == "29501"


def test_module_target_is_passed_with_its_flag() -> None:
    argv = torchrun_argv(Target("pkg.train", ("x",), module=True), nproc=1)
    assert argv[-3:] == ["-m", "pkg.train", "x"]
    assert "--device" not in argv  # each worker lets pick_device() use LOCAL_RANK


@given(nproc=st.integers(max_value=0))
def test_nproc_below_one_is_a_config_error(nproc: int) -> None:
    with pytest.raises(ConfigError, match="--nproc must be at least 1"):
        torchrun_argv(SCRIPT, nproc=nproc)


@given(
    args=st.lists(
        st.text(
            st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=8
        ),
        max_size=5,
    )
)
def test_script_arguments_reach_the_worker_untouched(args: list[str]) -> None:
    argv = torchrun_argv(Target("s.py", tuple(args)), nproc=2)
    assert argv[argv.index("s.py") + 1 :] == args


def test_cli_flags_reach_the_launcher() -> None:
    args = build_parser().parse_args(
        ["run", "--nproc", "2", "--nnodes", "1:2", "--max-restarts", "3", "s.py", "--nproc", "9"]
    )
    assert (args.nproc, args.nnodes, args.max_restarts) == (2, "1:2", 3)
    assert args.command == ["s.py", "--nproc", "9"]  # the script's own flags stay its own


def test_the_launcher_never_imports_torch() -> None:
    # It waits on torchrun for the whole run; torch would only cost it seconds and memory.
    code = (
        "import sys\n"
        "from torchport.cli._main import build_parser\n"
        "from torchport.run._launch import torchrun_argv\n"
        "from torchport.run._target import Target, check_target\n"
        "build_parser().parse_args(['run', '--nproc', '2', 'x.py'])\n"
        "check_target(Target('torchport.cli.run', module=True))\n"
        "torchrun_argv(Target('x.py'), nproc=2)\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "False\n"
