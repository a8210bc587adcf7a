"""Silent classes the held-out port sets of branches x31b and h31 found.

Each is (or was) a strict xfail: the port placed the model, left a tensor on the CPU that
met it, and said "0 left". The oracle: the ported program run with ``meta`` standing in for
the accelerator (a forward whose inputs, parameters or buffers are off the device is
recorded, or the program raises), and what the port said was left. x31b's two are fixed
(branch x31c: TP504 reports both; ``tests/check/port/test_module_leftovers.py`` has their
variants); h31's four were strict xfails until branch s31 fixed them (a weight's ``.data`` set
to a host tensor is moved where it is made; a torch function of a host factory kept in
``__init__`` is reported, TP504; a model the program puts on the CPU is left there and said,
its inputs not moved; a raw weight cloned from a tensor moves that tensor):
``tests/check/port/test_static_silent_classes.py`` draws each class's other forms. n31y's
(a CPU tensor kept beside a device value in a container literal, read back by key or index)
was a strict xfail here until branch p31k closed it: ``test_literal_items.py`` draws it.
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


_NET_WITH_A_COMPUTED_SCALE = """import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = torch.sqrt(torch.FloatTensor([4]))

    def forward(self, x):
        return self.fc(x) / self.scale
"""

_WEIGHT_DATA = """import torch

x = torch.ones(1, 1, 5, 5)
conv = torch.nn.Conv2d(1, 1, kernel_size=3, bias=False)
conv.weight.data = torch.arange(9.0).view(1, 1, 3, 3)
OUT.append(conv(x).sum().item())
"""

_MODEL_MADE_ON_THE_CPU = """import torch
from torch import nn

x = torch.ones(8, 1)
model = nn.Sequential(nn.Linear(1, 4), nn.ReLU(), nn.Linear(4, 1)).cpu()
OUT.append(model(x).sum().item())
"""

_RAW_PARAMETER = """import torch

start = torch.tensor([0.5, 0.25]).float()
for name in ["SGD", "Adam"]:
    x = PARAMETER
    opt = getattr(torch.optim, name)([x], lr=0.1)
    for _ in range(3):
        loss = (x * x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    OUT.append(x.detach().tolist())
"""


def test_a_tensor_attribute_computed_in_init_is_placed_or_said() -> None:
    _placed_or_said({"model.py": _NET_WITH_A_COMPUTED_SCALE, "train.py": _TRAIN})


def test_a_weight_s_data_set_to_a_cpu_tensor_is_placed_or_said() -> None:
    _placed_or_said({"train.py": _WEIGHT_DATA})


def test_a_model_the_program_puts_on_the_cpu_is_respected_or_said() -> None:
    _placed_or_said({"train.py": _MODEL_MADE_ON_THE_CPU})


def test_a_raw_parameter_cloned_from_a_tensor_is_placed_or_said() -> None:
    assert _on_meta(_RAW_PARAMETER.replace("PARAMETER", "start.clone().requires_grad_()"))


def test_the_raw_parameter_oracle_tells_placed_from_left() -> None:
    """Not blind: meta answers every read with zeros, so a placed parameter reads 0."""
    made_here = "torch.tensor([0.5, 0.25]).requires_grad_()"
    assert _on_meta(_RAW_PARAMETER.replace("PARAMETER", made_here))


def _on_meta(program: str) -> bool:
    """Ported, on ``meta``: the values read back are meta's zeros, or the port said what is left."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        project_fuzz._write(root, {"train.py": program})
        on_cpu, _ = project_fuzz._run(root, meta=False)
        result = port_paths([root], jobs=1)
        ran, off = project_fuzz._run(root, meta=True)
        assert not isinstance(on_cpu, BaseException) and not isinstance(ran, BaseException)
        assert any(v != 0 for row in on_cpu for v in row), on_cpu  # the CPU's values are no zeros
        placed = not off and all(v == 0 for row in ran for v in row)
        return placed or bool(result.remaining)


def test_the_oracle_sees_the_leftover_of_each_class() -> None:
    """Not blind: each program, unported, runs with something off the device."""
    projects = [
        {"model.py": model, "train.py": _TRAIN}
        for model in (_NET_WITH_HELPER, _NET_WITH_LIST, _NET_WITH_A_COMPUTED_SCALE)
    ]
    projects += [{"train.py": _WEIGHT_DATA}, {"train.py": _MODEL_MADE_ON_THE_CPU}]
    for files in projects:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "project"
            project_fuzz._write(root, files)
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
