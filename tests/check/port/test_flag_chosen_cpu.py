"""A device a command-line flag chooses, whose default is the CPU (held-out set h31o).

wangleiphy/DL4CSRC's ``2-ising/trg.py`` and ``3-flow/main.py`` pick ``device =
torch.device("cpu" if args.cuda < 0 else "cuda:" + str(args.cuda))`` with ``-cuda`` defaulting
to -1. The port keeps a program's own device (as it should), but says nothing: "0 left" for
trg.py, and for 3-flow only two unrelated findings, while on an accelerator (MPS, XPU, and
CUDA too unless the user passes the flag) everything runs on the CPU. TP109 names
``torch.cuda.is_available()`` choices only.

Now TP109 takes a flag named for CUDA compared with a number (``args.cuda < 0``,
``args.gpu >= 0``, ``opt.gpu != -1``) for the CUDA-or-CPU test it is, either arm the CPU, and
the port leaves its finding at the choice (no fix: as for any flag). The generator draws the
test's forms and the CUDA arm's (``"cuda:" + str(i)``, an f-string, ``%``, the bare index),
with near misses that stay silent: a flag not named for CUDA, or a choice between no devices.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source
from torchport.check.port import port_text

_PROGRAM = (
    "import argparse\n"
    "import torch\n\n"
    "parser = argparse.ArgumentParser()\n"
    'parser.add_argument("-cuda", type=int, default=-1)\n'
    "args = parser.parse_args([])\n"
    'device = torch.device("cpu" if args.cuda < 0 else "cuda:" + str(args.cuda))\n'
    "model = torch.nn.Linear(2, 1).to(device)\n"
    "print(model(torch.ones(3, 2, device=device)).sum().item())\n"
)


def test_a_flag_chosen_cpu_device_is_reported_where_it_is_chosen() -> None:
    outcome = port_text(_PROGRAM, "trg.py")
    assert not outcome.failures, outcome.failures
    choice = next(n for n, t in enumerate(_PROGRAM.splitlines(), 1) if t.startswith("device ="))
    assert [(f.code, f.line) for f in outcome.remaining] == [("TP109", choice)]
    assert outcome.source == _PROGRAM  # the program's own choice is kept


_TESTS = {  # the test, and whether its true arm is the CPU
    "cuda < 0": ("args.cuda < 0", True),
    "gpu >= 0": ("args.gpu >= 0", False),
    "gpu != -1": ("opt.gpu != -1", False),
    "-1 == gpu": ("-1 == cfg.gpu", True),
    "not a flag": ("args.batch < 0", True),
    "gpu_id > -1": ("args.gpu_id > -1", False),
    "gpu_ids[0] >= 0": ("opt.gpu_ids[0] >= 0", False),
    "int() of a text flag": ("int(args.gpu) >= 0", False),  # h31p's d7: `type=str`
    "text flag != '-1'": ('args.gpu != "-1"', False),  # h31p's d7b
    "text flag, not a number": ('args.gpu != "auto"', False),
}
_NO_CHOICE = ("not a flag", "text flag, not a number")  # no index compared: no choice
_ARMS = {  # the CUDA arm, of the index `i` the flag holds
    "concatenated": '"cuda:" + str({i})',
    "f-string": 'f"cuda:{{{i}}}"',
    "percent": '"cuda:%d" % {i}',
    "format": '"cuda:{{}}".format({i})',
    "bare index": "{i}",
    "no device": '"fast"',
}


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(_TESTS)), st.sampled_from(sorted(_ARMS)), st.booleans())
def test_a_cuda_index_flag_is_a_cuda_or_cpu_choice(test: str, arm: str, wrapped: bool) -> None:
    condition, cpu_first = _TESTS[test]
    flag = condition.replace("-1 == ", "").split()[0]  # (`opt.gpu_ids[0]` too)
    cuda = _ARMS[arm].format(i=flag)
    arms = ('"cpu"', cuda) if cpu_first else (cuda, '"cpu"')
    choice = f"{arms[0]} if {condition} else {arms[1]}"
    choice = f"torch.device({choice})" if wrapped and arm != "no device" else choice
    source = f"import torch\n\ndevice = {choice}\n"
    found = [f.code for f in check_source(source, "train.py", select=["TP109"])]
    # the oracle: a flag named for CUDA, choosing the CPU or a CUDA device
    expected = test not in _NO_CHOICE and arm != "no device"
    assert found == (["TP109"] if expected else []), source


@pytest.mark.parametrize("flag", ["args.gpu", "args.gpu_id", "args.cuda"])
def test_an_if_on_a_cuda_index_flag_that_moves_to_cuda_is_a_choice(flag: str) -> None:
    """pytorch/examples' ImageNet shape: ``if args.gpu >= 0: model = model.cuda(args.gpu)``
    (8e497a0b: nothing at all, TP101 leaving the guarded move to TP109, which did not know the
    test); a branch that only prints is no choice."""
    moves = f"import torch\n\nif {flag} >= 0:\n    model = model.cuda({flag})\n"
    prints = f"import torch\n\nif {flag} >= 0:\n    print({flag})\n"
    assert [f.code for f in check_source(moves, "train.py", select=["TP109"])] == ["TP109"]
    assert check_source(prints, "train.py", select=["TP109"]) == []


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(_TESTS)), st.sampled_from(sorted(_ARMS)), st.booleans())
def test_an_if_statement_on_a_cuda_index_flag_that_picks_a_cuda_device(
    test: str, arm: str, wrapped: bool
) -> None:
    """b26's c4b, pytorch-CycleGAN's shape: ``if opt.gpu_ids[0] >= 0: device =
    torch.device("cuda:%d" % opt.gpu_ids[0])`` (d5a0de11: TP115 alone, the port "0 left" of a
    program that stops on any other accelerator given a GPU id). The statement form of the
    test above: the branch taken on CUDA assigns the device string built from the flag."""
    condition, cpu_first = _TESTS[test]
    flag = condition.replace("-1 == ", "").split()[0]
    cuda = _ARMS[arm].format(i=flag)
    cuda = f"torch.device({cuda})" if wrapped else cuda
    arms = ('"cpu"', cuda) if cpu_first else (cuda, '"cpu"')
    source = (
        f"import torch\n\nif {condition}:\n    device = {arms[0]}\nelse:\n    device = {arms[1]}\n"
    )
    found = [f.code for f in check_source(source, "train.py", select=["TP109"])]
    # the oracle: a flag named for CUDA whose CUDA branch builds a "cuda:" device string
    # (a bare index names no device in a statement: `device = args.gpu` may be anything)
    expected = test not in _NO_CHOICE and arm not in ("no device", "bare index")
    assert found == (["TP109"] if expected else []), source
