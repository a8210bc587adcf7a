"""A parameter rebound by a comprehension over itself (issue 31 item 5, branch n31an).

Lightning's ``fabric.py:468/474`` TP523 ("made by `self._strategy`", "made by
`self.global_rank`"): ``dataloaders = [self._setup_dataloader(d, ...) for d in dataloaders]``
over a ``*dataloaders`` parameter, ``_setup_dataloader`` returning a loader made with
``device=``. The flow read the name ``dataloaders`` whatever binding a read sees: the list of
set-up loaders is a device value, so ``d`` was an item of one, and what met ``d`` in
``_setup_dataloader`` (a rank, a strategy's settings) was reported. The same cause hid a
silent class (n31al's strict xfail): ``def run(*xs): xs = [model(x) for x in xs]`` took the
caller's CPU tensors for the model's outputs and said "0 left".

Now the read of the iterable sees the parameter: no other binding of the name before the
read's statement (``Reaching.reaching_parameters``), the comprehension's items are not device
values by the name alone, and the origins of the read follow the parameter too; a ``*xs``
parameter's origins are the arguments past the named ones.

Oracles apart from the port: a profiler records what the side value met in the set-up
function holds on the CPU (an int: no TP523 there; and the loaders' parameters, no tensors,
get no TP520: the one finding left is the real TP520 on the batch ``x`` of the set-up
loader, whose device the port cannot tell); ``no_cuda_sim`` runs the tensors' near
miss (the original on the CPU, the port on the simulated accelerator): placed or said.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

from tests.check.port.no_cuda_sim import placed_or_said
from torchport.check.port import port_text

_HEAD = """import json

import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(4, 2)
SETTINGS = json.loads('{"rank": 0, "names": ["a"]}')


def seeded(loader, rank):
    torch.manual_seed(rank)
    return loader


class OnDevice:
    def __init__(self, loader, device=None):
        self.loader, self.device = loader, device

    def __iter__(self):
        for (x,) in self.loader:
            yield x if self.device is None else x.to(self.device)


"""
SIDES = {  # what meets each loader in the set-up function: an int, by construction
    "an attribute": "self.rank",
    "a setting": 'SETTINGS["rank"]',
    "a length": "len(self.names) - 1",
}
FORMS = {  # the parameter, and how the set-up list rebinds it
    "a vararg": ("*loaders", "        loaders = [{one} for d in loaders]\n", "{made}"),
    "a list": ("loaders", "        loaders = [{one} for d in loaders]\n", "[{made}]"),
    "a list, in a loop": (
        "loaders",
        "        for _ in range(1):\n            loaders = [{one} for d in loaders]\n",
        "[{made}]",
    ),
}
ONES = {  # the set-up of one loader: a method, or a function of the file
    "a method": "self._setup_one(d)",
    "a function": "setup_one(d, self)",
}
_MADE = "DataLoader(TensorDataset(torch.ones(6, 4)), batch_size=3)"


def _program(form: str, side: str, one: str) -> str:
    parameter, rebound, handed = FORMS[form]

    def body(owner: str, indent: str) -> str:
        met = SIDES[side].replace("self", owner)
        return (
            f"{indent}seeded(loader, {met})\n"
            f"{indent}return OnDevice(loader, device={owner}.device)\n"
        )

    return (
        _HEAD
        + "def setup_one(loader, owner):\n"
        + body("owner", "    ")
        + "\n\nclass Runner:\n    def __init__(self, rank, names):\n        self.rank = rank\n"
        + "        self.names = names\n        self.device = torch.device('cpu')\n\n"
        + f"    def setup(self, {parameter}):\n"
        + rebound.format(one=ONES[one])
        + "        return loaders\n\n"
        + "    def _setup_one(self, loader):\n"
        + body("self", "        ")
        + "\n\nrunner = Runner(SETTINGS['rank'], SETTINGS['names'])\n"
        + f"(train,) = runner.setup({handed.format(made=_MADE)})\n"
        + "for x in train:\n    OUT.append(model(x))\n"
    )


def _ranks(program: str) -> list[object]:
    """The oracle: what ``seeded``'s ``rank`` holds, call by call, on the CPU."""
    seen: list[object] = []

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event == "call" and frame.f_code.co_name == "seeded":
            seen.append(frame.f_locals["rank"])

    sys.setprofile(profile)
    try:
        exec(compile(program, "<program>", "exec"), {"OUT": [], "__name__": "__main__"})
    finally:
        sys.setprofile(None)
    assert seen, program
    return seen


@settings(max_examples=8, deadline=None)
@example(form="a vararg", side="an attribute", one="a method")  # Lightning's form
@example(form="a list, in a loop", side="a setting", one="a function")
@given(
    form=st.sampled_from(sorted(FORMS)),
    side=st.sampled_from(sorted(SIDES)),
    one=st.sampled_from(sorted(ONES)),
)
def test_what_meets_a_parameter_rebound_to_set_up_loaders_is_not_reported(
    form: str, side: str, one: str
) -> None:
    program = _program(form, side, one)
    assert all(type(r) is int for r in _ranks(program)), program
    tail = program.count("\n") - 2  # `for x in train: OUT.append(model(x))`: TP520 is right
    ported = port_text(program)
    shift = ported.source.count("\n") - program.count("\n")  # the lines the port adds above
    said = [f for f in ported.remaining if f.line - shift < tail]
    assert not said, (said, ported.source)


REBOUND = {  # n31al's silent class, and its plain form: the caller's CPU tensors meet the model
    "a vararg": "def run(*xs):\n    xs = [model(x) for x in xs]\n    return xs\n\n"
    "OUT.extend(run(torch.ones(3, 4), torch.zeros(3, 4)))\n",
    "a list parameter, in a loop": "def run(xs):\n    for _ in range(1):\n"
    "        xs = [model(x) for x in xs]\n    return xs\n\n"
    "OUT.extend(run([torch.ones(3, 4), torch.zeros(3, 4)]))\n",
    "a list parameter": "def run(xs):\n    xs = [model(x) for x in xs]\n    return xs\n\n"
    "OUT.extend(run([torch.ones(3, 4), torch.zeros(3, 4)]))\n",
    "a vararg, a for statement": "def run(*xs):\n    outs = []\n    for x in xs:\n"
    "        outs.append(model(x))\n    xs = outs\n    return xs\n\n"
    "OUT.extend(run(torch.ones(3, 4), torch.zeros(3, 4)))\n",
}


def test_tensors_handed_to_a_rebound_parameter_are_placed_or_said() -> None:
    """The near miss, on ``sim`` (one child): each form is placed or said."""
    head = "import torch\n\nmodel = torch.nn.Linear(4, 2)\n\n"
    placed_or_said([head + REBOUND[form] for form in sorted(REBOUND)])
