"""Silent classes the held-out port set of branch x31b found (x31c made them said).

Each was a strict xfail: the port placed the model, left a tensor on the CPU that met
it, and said "0 left". The oracle: the ported program run with ``meta`` standing in for
the accelerator (a forward whose inputs, parameters or buffers are off the device is
recorded, or the program raises), and what the port said was left. TP504 now reports
both (``tests/check/port/test_module_leftovers.py`` has their variants).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

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


def test_a_helper_s_cpu_tensor_used_in_forward_is_placed_or_said() -> None:
    _placed_or_said({"model.py": _NET_WITH_HELPER, "train.py": _TRAIN})


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
