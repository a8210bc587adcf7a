"""A device a command-line flag chooses, whose default is the CPU (held-out set h31o).

wangleiphy/DL4CSRC's ``2-ising/trg.py`` and ``3-flow/main.py`` pick ``device =
torch.device("cpu" if args.cuda < 0 else "cuda:" + str(args.cuda))`` with ``-cuda`` defaulting
to -1. The port keeps a program's own device (as it should), but says nothing: "0 left" for
trg.py, and for 3-flow only two unrelated findings, while on an accelerator (MPS, XPU, and
CUDA too unless the user passes the flag) everything runs on the CPU. TP109 names
``torch.cuda.is_available()`` choices only.

Stated here, not closed: the port should leave a finding at the choice (as TP109 does for a
CUDA-or-CPU test). Strict xfail until it does.
"""

from __future__ import annotations

import pytest

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


@pytest.mark.xfail(strict=True, reason="h31o: a flag-chosen CPU device is kept with no finding")
def test_a_flag_chosen_cpu_device_is_reported_where_it_is_chosen() -> None:
    outcome = port_text(_PROGRAM, "trg.py")
    assert not outcome.failures, outcome.failures
    choice = next(n for n, t in enumerate(_PROGRAM.splitlines(), 1) if t.startswith("device ="))
    assert any(f.line == choice for f in outcome.remaining), outcome.remaining
