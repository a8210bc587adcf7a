"""Code that already chose a device is respected by ``port`` and by ``fix --select ALL``.

The invariant: a ``torch.device("cpu")`` the program chose on purpose (a
constant, a branch, a name bound again, a file with a device flag) is left
byte for byte, and a model the program places per process (``.to(rank)``,
``.cuda(local_rank)``, ``.to(0)``) is never given a second move; the tensors
that meet it are reported, not moved to another device.
"""

from __future__ import annotations

import itertools
import re

from hypothesis import given
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import originals_on_cpu_ports_on_sim
from torchport.check import check_source, fix_source
from torchport.check.port import port_text

_BODY = "model = torch.nn.Linear(4, 2)\nx = torch.randn(3, 4)\nprint(model(x))\n"


@st.composite
def deliberate_cpu_programs(draw: st.DrawFn) -> tuple[str, str]:
    """(program, the line that chose the CPU)."""
    form = draw(st.sampled_from(["constant", "cpu_name", "branch", "try", "rebound", "flag"]))
    name = draw(st.sampled_from(["device", "dev", "run_device"]))
    cpu = 'torch.device("cpu")'
    if form == "constant":
        const = draw(st.sampled_from(["CPU_DEVICE", "HOST", "DEVICE"]))
        line = f"{const} = {cpu}"
        return f"import torch\n\n{line}\n{_BODY}stats = model(x).to({const})\n", line
    if form == "cpu_name":
        line = f"cpu_{name} = {cpu}"
        return f"import torch\n\n{line}\n{_BODY}", line
    if form == "branch":
        line = f"    {name} = {cpu}"
        text = (
            f"import torch\n\nbackend = 'gloo'\nif backend == 'gloo':\n{line}\nelse:\n"
            f"    {name} = torch.device('cuda', 0)\n{_BODY}"
        )
        return text, line
    if form == "try":
        line = f"    {name} = {cpu}"
        return (
            f"import torch\n\ntry:\n    import nothing_here\nexcept ImportError:\n{line}\n{_BODY}",
            line,
        )
    if form == "rebound":
        line = f"{name} = {cpu}"
        text = (
            f"import torch\n\nuse_accel = False\n{line}\nif use_accel:\n"
            f"    {name} = torch.accelerator.current_accelerator()\n{_BODY}"
        )
        return text, line
    flag = draw(st.sampled_from(["--cuda", "--no-cuda", "--no-accel", "--device", "--gpu"]))
    line = f"{name} = {cpu}"
    text = (
        "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
        f"parser.add_argument({flag!r}, action='store_true')\n{line}\n{_BODY}"
    )
    return text, line


@given(deliberate_cpu_programs())
def test_a_deliberate_cpu_choice_is_left_by_port_and_fix(case: tuple[str, str]) -> None:
    source, line = case
    ported = port_text(source).source
    assert line + "\n" in ported, ported
    # no second device beside the program's own
    assert not re.search(r"^_device = ", ported, re.MULTILINE), ported
    for unsafe in (False, True):
        fixed = fix_source(source, unsafe=unsafe, select=["ALL"])
        assert line + "\n" in fixed, fixed
    assert not [f for f in check_source(source, select=["TP507"])]


def test_a_cpu_only_device_is_still_ported() -> None:
    """The rule still does its job where the CPU is no choice: one unconditional binding."""
    source = 'import torch\n\ndevice = torch.device("cpu")\n' + _BODY
    ported = port_text(source).source
    assert 'device = torch.device("cpu")\n' not in ported
    assert "model = torch.nn.Linear(4, 2).to(device)" in ported


@given(
    st.sampled_from(["rank", "local_rank", "args.gpu", "gpu_id", "0", "self.device_id"]),
    st.sampled_from(["to", "cuda"]),
)
def test_a_per_process_placement_gets_no_second_move(target: str, method: str) -> None:
    source = (
        "import torch\n\n\ndef run(rank, local_rank, gpu_id, args):\n"
        f"    model = torch.nn.Linear(4, 2).{method}({target})\n"
        "    y = torch.randn(3, 2)\n"
        "    out = model(torch.ones(3, 4).cuda())\n"
        "    return ((out - y) ** 2).mean()\n"
    )
    outcome = port_text(source)
    assert f".{method}({target})" in outcome.source
    assert ".to(device)." not in outcome.source and "device =" not in outcome.source
    left = [f for f in outcome.remaining if f.code == "TP503"]
    assert left and "put its model on" in left[0].message  # `y` is said, not moved elsewhere


# A model placed under the program's own CUDA-or-CPU test (mazzamani/LSTM_pytorch:
# `USE_CUDA = torch.cuda.is_available()` ... `if USE_CUDA: model.cuda()`).
_NET = "model = torch.nn.Linear(4, 2)\n"
FLAG_PLACEMENTS = {
    "statement": _NET + "if USE_CUDA:\n    model.cuda()\n",
    "rebound": _NET + "if USE_CUDA:\n    model = model.cuda()\n",
    "availability": _NET + "if torch.cuda.is_available():\n    model.to('cuda')\n",
    "conditional": _NET + "model = model.cuda() if USE_CUDA else model\n",
    # cs230-stanford/cs230-code-examples: the CPU arm was given `.to(device)`
    "built-in-each-arm": (
        "model = torch.nn.Linear(4, 2).cuda() if USE_CUDA else torch.nn.Linear(4, 2)\n"
    ),
}
FLAG_DATA = {
    "loader": "for x in torch.utils.data.DataLoader(torch.randn(8, 4), batch_size=4):\n",
    "loader-moved": (
        "for x in torch.utils.data.DataLoader(torch.randn(8, 4), batch_size=4):\n"
        "    if USE_CUDA:\n        x = x.cuda()\n"
    ),
}


def test_a_model_placed_under_the_programs_own_cuda_flag_gets_no_second_device() -> None:
    """On an accelerator that is not CUDA (MPS, XPU: the simulated one with no CUDA
    redirect), the program's flag keeps its model on the CPU; the port's batch moves to
    "the accelerator" met it there: "Expected all tensors to be on the same device", where
    the original ran. The port reuses the program's choice: it writes no second device and
    reports what it would have moved. Every placement with every data form, in one child."""
    sources = [
        "import torch\n\nUSE_CUDA = torch.cuda.is_available()\n"
        + FLAG_PLACEMENTS[placement]
        + FLAG_DATA[data]
        + "    OUT.append(model(x).detach())\n"
        for placement, data in itertools.product(sorted(FLAG_PLACEMENTS), sorted(FLAG_DATA))
    ]
    ported = [port_text(source).source for source in sources]
    for source in ported:
        assert "device" not in source, source
    # On the simulated accelerator with no CUDA redirect, torch.cuda.is_available() is False.
    got = originals_on_cpu_ports_on_sim(list(zip(sources, ported, strict=True)))
    for source, result in zip(sources, got, strict=True):
        assert result["same"] and len(result["devices"]) == 2, (result, source)


OWN_DEVICE_FORMS = list(
    itertools.product(
        ["device", "dev", "_device"],
        ["({})", "(device={})"],
        ["agent.net(x)", "agent.act(x)"],
        ['"cpu"', '"cuda" if torch.cuda.is_available() else "cpu"'],
    )
)


def test_a_model_placed_on_its_classs_own_device_gets_no_input_on_a_second_device() -> None:
    """A class's own ``self.device`` (the CPU, or CUDA-or-CPU: the CPU on MPS or XPU, issue
    31's item 2) places its model: the tensor meeting it is reported, not moved to a second,
    module-level ``device`` (issue 31, x31 report). Every form, in one child."""
    cases = []
    for attr, move, use, choice in OWN_DEVICE_FORMS:
        source = (
            "import torch\nimport torch.nn as nn\n\n"
            "class Agent:\n"
            "    def __init__(self):\n"
            f"        self.{attr} = torch.device({choice})\n"
            f"        self.net = nn.Linear(4, 2).to{move.format('self.' + attr)}\n\n"
            "    def act(self, obs):\n"
            "        return self.net(obs)\n\n"
            "agent = Agent()\n"
            "x = torch.randn(3, 4)\n"
            f"OUT.append({use}.detach())\n"
        )
        cases.append((attr, use, source, port_text(source)))
    got = originals_on_cpu_ports_on_sim([(source, out.source) for _, _, source, out in cases])
    for (attr, use, source, outcome), result in zip(cases, got, strict=True):
        assert result["same"], (result, outcome.source)
        # nothing moved to a second device; the CPU tensor that meets the model is named
        # with the program's own placement
        assert outcome.remaining, outcome.source
        if use == "agent.net(x)":
            line = source.splitlines().index("x = torch.randn(3, 4)") + 1
            assert any(f.line == line and f"self.{attr}" in f.message for f in outcome.remaining), (
                outcome.remaining
            )
