"""The static silent classes h31's and x31b's held-out sets left (issue 31, branch s31).

Each class is drawn in several forms, and each draw goes through the project fuzzer's
oracle (:func:`check_project`: the same CPU output after the port, a second port changes
nothing, and the ported program run with ``meta`` standing in for the accelerator either
has everything on the device or the port said what is left):

* a host tensor put into a placed model's state (``conv.weight.data = t``,
  ``nn.Parameter(t)``, ``setattr``) after ``.to(device)``;
* a module's plain tensor attribute made in ``__init__`` by a torch function of a host
  factory (``torch.sqrt(torch.FloatTensor([d]))``, ``Variable(...)``);
* a model the program puts on the CPU itself (``.cpu()``, ``.to("cpu")``): left as it is,
  its inputs not moved, and the report says so;
* a weight trained by hand made from another tensor (``start.clone().requires_grad_()``,
  ``nn.Parameter(w0.clone())``, ``x.requires_grad = True``): its tensors are placed (read
  back on ``meta``: zeros) or reported;
* a module-level function that makes a CPU tensor, called through an attribute the class
  bound to it (``self.INF = INF``, then ``self.INF(4)`` in ``forward``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check import port_paths

project_fuzz = load(
    "project_fuzz_for_static_classes", Path(__file__).parent / "test_project_fuzz.py"
)

_SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------ a host tensor into a model

_VALUES = {  # a 3x3 kernel made on the CPU, as a conv's weight (1, 1, 3, 3)
    "arange": "torch.arange(9.0).view(1, 1, 3, 3)",
    "typed": "torch.Tensor([[1, 0, 1], [0, 1, 0], [1, 0, 1]]).view(1, 1, 3, 3)",
    "scaled": "torch.ones(1, 1, 3, 3) * 0.5",
}
_PUTS = {
    "data": "conv.weight.data = {value}",
    "parameter": "conv.weight = torch.nn.Parameter({value})",
    "setattr": 'setattr(conv, "weight", torch.nn.Parameter({value}))',
}


@_SETTINGS
@given(
    value=st.sampled_from(sorted(_VALUES)),
    put=st.sampled_from(sorted(_PUTS)),
    named=st.booleans(),
    data=st.booleans(),
)
def test_a_host_tensor_put_into_a_placed_model_is_placed_or_said(
    value: str, put: str, named: bool, data: bool
) -> None:
    made = _VALUES[value]
    lines = ["import torch", "", "x = torch.ones(1, 1, 5, 5)"]
    lines.append("conv = torch.nn.Conv2d(1, 1, kernel_size=3, bias=False)")
    if named:  # `kernel = ...` first, then `conv.weight.data = kernel[.data]`
        lines.append(f"kernel = {made}")
        made = "kernel.data" if data else "kernel"
    lines.append(_PUTS[put].format(value=made))
    lines.append("OUT.append(conv(x).sum().item())")
    project_fuzz.check_project({"train.py": "\n".join(lines) + "\n"})


# ------------------------------------------------ a torch function of a host factory in __init__

_FACTORIES = ("torch.FloatTensor([4])", "torch.tensor([4.0])", "torch.ones(1) * 4")
_WRAPS = (
    "torch.sqrt({})",
    "torch.exp({})",
    "torch.autograd.Variable({})",
    "torch.as_tensor({})",
    "torch.sqrt(({}).float())",
    "torch.nn.functional.relu({})",
)
_MODEL = """import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = {made}

    def forward(self, x):
        return self.fc(x) / self.scale
"""
_TRAIN = """import torch
from model import Net

net = Net()
OUT.append(net(torch.ones(2, 4)).sum().item())
"""


@_SETTINGS
@given(factory=st.sampled_from(_FACTORIES), wrap=st.sampled_from(_WRAPS), apart=st.booleans())
def test_a_wrapped_host_factory_kept_in_init_is_placed_or_said(
    factory: str, wrap: str, apart: bool
) -> None:
    model = _MODEL.format(made=wrap.format(factory))
    if apart:
        project_fuzz.check_project({"model.py": model, "train.py": _TRAIN})
    else:
        train = model + _TRAIN.replace("import torch\nfrom model import Net\n", "")
        project_fuzz.check_project({"train.py": train})


# ------------------------------------------------------------ a model the program puts on the CPU

_CHOICES = {
    "cpu": ".cpu()",
    "to-string": '.to("cpu")',
    "to-device": '.to(torch.device("cpu"))',
    "to-keyword": '.to(device="cpu")',
}
_INPUTS = ("torch.ones(8, 1)", "torch.randn(8, 1)", "torch.linspace(0, 1, 8).unsqueeze(1)")


@_SETTINGS
@given(
    choice=st.sampled_from(sorted(_CHOICES)),
    made=st.sampled_from(_INPUTS),
    later=st.booleans(),
    before=st.booleans(),
)
def test_a_model_the_program_puts_on_the_cpu_is_left_and_said(
    choice: str, made: str, later: bool, before: bool
) -> None:
    model = "nn.Sequential(nn.Linear(1, 4), nn.ReLU(), nn.Linear(4, 1))"
    put = _CHOICES[choice]
    lines = ["import torch", "from torch import nn", "", "torch.manual_seed(0)"]
    if before:
        lines.append(f"x = {made}")
    if later:  # `model = model.cpu()` before its first forward
        lines += [f"model = {model}", f"model = model{put}"]
    else:
        lines.append(f"model = {model}{put}")
    if not before:
        lines.append(f"x = {made}")
    lines.append("OUT.append(model(x).sum().item())")
    program = "\n".join(lines) + "\n"
    project_fuzz.check_project({"train.py": program})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        project_fuzz._write(root, {"train.py": program})
        result = port_paths([root], jobs=1)
        assert (root / "train.py").read_text(encoding="utf-8") == program  # nothing overruled
        said = " ".join(f.message for f in result.remaining)
        assert "the program" in said and put.strip(".")[:3] in said, said


# ------------------------------------------------------------ a weight trained by hand

_STARTS = ("torch.tensor([0.5, 0.25])", "torch.tensor([0.5, 0.25]).float()", "torch.ones(2) * 0.5")
_MAKERS = {
    "clone": "x = start.clone().requires_grad_()",
    "detach-clone": "x = start.detach().clone().requires_grad_()",
    "parameter": "x = torch.nn.Parameter(start.clone())",
    "variable": "x = torch.autograd.Variable(start.clone(), requires_grad=True)",
    "statement": "x = start.clone()\n    x.requires_grad_()",
    "attribute": "x = start.clone()\n    x.requires_grad = True",
}
_LOOP = """import torch

start = {start}
for name in ["SGD", "Adam"]:
    {maker}
    opt = getattr(torch.optim, name)([x], lr=0.1)
    for _ in range(3):
        loss = (x * x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    OUT.append(x.detach().tolist())
"""


@_SETTINGS
@given(start=st.sampled_from(_STARTS), maker=st.sampled_from(sorted(_MAKERS)))
def test_a_weight_trained_by_hand_from_another_tensor_is_placed_or_said(
    start: str, maker: str
) -> None:
    program = _LOOP.format(start=start, maker=_MAKERS[maker])
    project_fuzz.check_project({"train.py": program})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        project_fuzz._write(root, {"train.py": program})
        on_cpu, _ = project_fuzz._run(root, meta=False)
        result = port_paths([root], jobs=1)
        ran, off = project_fuzz._run(root, meta=True)
    assert not isinstance(on_cpu, BaseException) and not isinstance(ran, BaseException)
    assert any(v != 0 for row in on_cpu for v in row), on_cpu  # the CPU's values: no zeros
    placed = not off and all(v == 0 for row in ran for v in row)  # meta reads back zeros
    assert placed or result.remaining, ran


# ------------------------------------------------------------ a helper called through an attribute

_HELPERS = {
    "diag": (
        'def INF(n):\n    return -torch.diag(torch.tensor(float("inf")).repeat(n), 0)\n',
        "self.fc(x) + self.{attr}(4)[0].clamp(min=-1.0)",
    ),
    "through-a-name": (
        "def INF(n):\n    m = torch.ones(n, n)\n    return m.tril()\n",
        "self.fc(x) @ self.{attr}(4)",
    ),
    "every-return-a-tensor": (
        "def INF(n):\n    return torch.arange(n).float()\n",
        "self.fc(x) + self.{attr}(4)",
    ),
}
_HELD = """import torch
from torch import nn

{helper}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.{attr} = INF

    def forward(self, x):
        return {use}
"""


@_SETTINGS
@given(
    helper=st.sampled_from(sorted(_HELPERS)),
    attr=st.sampled_from(("INF", "make")),
    apart=st.booleans(),
)
def test_a_helper_called_through_an_attribute_is_placed_or_said(
    helper: str, attr: str, apart: bool
) -> None:
    code, use = _HELPERS[helper]
    model = _HELD.format(helper=code, attr=attr, use=use.format(attr=attr))
    if apart:
        project_fuzz.check_project({"model.py": model, "train.py": _TRAIN})
    else:
        train = model + _TRAIN.replace("import torch\nfrom model import Net\n", "")
        project_fuzz.check_project({"train.py": train})


def test_the_oracle_sees_each_class_left_on_the_cpu() -> None:
    """Not blind: each class's program, unported, runs on ``meta`` with something off the
    device (and the hand-trained weight reads back the CPU's values, not meta's zeros)."""
    cases = [
        {"train.py": "import torch\n\nx = torch.ones(1, 1, 5, 5)\n"
         "conv = torch.nn.Conv2d(1, 1, kernel_size=3, bias=False)\n"
         f"conv.weight.data = {_VALUES['arange']}\nOUT.append(conv(x).sum().item())\n"},
        {"model.py": _MODEL.format(made="torch.sqrt(torch.FloatTensor([4]))"), "train.py": _TRAIN},
        {"model.py": _HELD.format(helper=_HELPERS["diag"][0], attr="INF",
                                  use=_HELPERS["diag"][1].format(attr="INF")),
         "train.py": _TRAIN},
        {"train.py": "import torch\nfrom torch import nn\n\nx = torch.ones(8, 1)\n"
         "model = nn.Sequential(nn.Linear(1, 4)).cpu()\nOUT.append(model(x).sum().item())\n"},
    ]  # fmt: skip
    for files in cases:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "project"
            project_fuzz._write(root, files)
            _, off = project_fuzz._run(root, meta=True)
            assert off, files
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        program = _LOOP.format(start=_STARTS[0], maker=_MAKERS["clone"])
        project_fuzz._write(root, {"train.py": program})
        ran, _ = project_fuzz._run(root, meta=True)
        assert not isinstance(ran, BaseException) and any(v != 0 for row in ran for v in row)
