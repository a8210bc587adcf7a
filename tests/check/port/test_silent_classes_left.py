"""Silent classes the held-out port set of branch x31b found and no branch has fixed yet.

Each is a strict xfail: the port places the model, leaves a tensor on the CPU that meets
it, and says "0 left". The oracle: the ported program run with ``meta`` standing in for
the accelerator (a forward whose inputs, parameters or buffers are off the device is
recorded, or the program raises), and what the port said was left. When a class is
fixed, its test passes and the strict mark fails the run: remove the mark then.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.check.port.siblings import load
from torchport.check import port_paths

project_fuzz = load(
    "project_fuzz_for_silent_classes", Path(__file__).parent / "test_project_fuzz.py"
)

_NET_WITH_HELPER = """import torch
from torch import nn

def INF(n):
    return -torch.diag(torch.tensor(float("inf")).repeat(n), 0)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) + INF(4)[0].clamp(min=-1.0)
"""

_NET_WITH_LIST = """import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 4) for _ in range(2)]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
"""

_TRAIN = """import torch
from model import Net

net = Net()
OUT.append(net(torch.ones(2, 4)).sum().item())
"""


@pytest.mark.xfail(
    strict=True,
    reason="issue 31 (x31b's held-out set, External-Attention's CrissCrossAttention): a "
    "module-level helper of the model's file makes a CPU tensor that forward uses; the "
    "port places the model and says nothing",
)
def test_a_helper_s_cpu_tensor_used_in_forward_is_placed_or_said() -> None:
    _placed_or_said({"model.py": _NET_WITH_HELPER, "train.py": _TRAIN})


@pytest.mark.xfail(
    strict=True,
    reason="issue 31 (x31b's held-out set, mlp_mixer): layers kept in a plain list "
    "attribute are not the module's children, so .to(device) leaves them on the CPU; "
    "the port says nothing",
)
def test_layers_in_a_plain_list_are_placed_or_said() -> None:
    _placed_or_said({"model.py": _NET_WITH_LIST, "train.py": _TRAIN})


def test_the_oracle_sees_the_leftover_of_each_class() -> None:
    """Not blind: ported, each program runs with something off the device."""
    for model in (_NET_WITH_HELPER, _NET_WITH_LIST):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "project"
            project_fuzz._write(root, {"model.py": model, "train.py": _TRAIN})
            port_paths([root], jobs=1)
            result, off = project_fuzz._run(root, meta=True)
            assert off or isinstance(result, BaseException)


def _placed_or_said(files: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        project_fuzz._write(root, files)
        result = port_paths([root], jobs=1)
        ran, off = project_fuzz._run(root, meta=True)
        placed = not off and not isinstance(ran, BaseException)
        assert placed or result.remaining, (off, ran)
