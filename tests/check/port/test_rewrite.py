"""`port_source`: what a port moves, what it leaves, and what it reports (no torch imported)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from torchport.check import check_source, fix_source
from torchport.check.port._rewrite import port_paths, port_source, port_text
from torchport.check.rules._snippets import DEVICE_LINE

NB = "non_blocking=True"
LOADER = "from torch.utils.data import DataLoader\n"


def ported(source: str) -> str:
    out = port_source(source)
    ast.parse(out)
    assert port_source(out) == out, "a port is a fixed point of port"
    assert "torchport" not in out
    return out


def remaining(source: str) -> list[str]:
    return [f.code for f in port_text(source).remaining]


def test_device_aware_code_is_left_alone() -> None:
    source = (
        "import torch\n\n" + DEVICE_LINE + "\n"
        "model = torch.nn.Linear(4, 2).to(device)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x, y in loader:\n"
        "    x, y = x.to(device), y.to(device)\n"
        "    loss = (model(x) - y).sum()\n"
    )
    assert port_source(source) == source
    assert remaining(source) == []


def test_model_moved_inside_wrappers_and_factories() -> None:
    source = (
        "import torch\nfrom torch import nn\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
        "class Net(nn.Module):\n    pass\n\n"
        "def build():\n    m = Net()\n    return m\n\n"
        "ddp = DDP(Net(), device_ids=None)\n"
        "fast = torch.compile(build())\n"
        "dp = nn.DataParallel(nn.Linear(2, 2))\n"
    )
    out = ported(source)
    assert "    m = Net().to(device)\n" in out
    assert "ddp = DDP(Net().to(device), device_ids=None)\n" in out
    assert "fast = torch.compile(build())\n" in out  # build() returns a moved model
    assert "dp = nn.DataParallel(nn.Linear(2, 2).to(device))\n" in out
    assert out.count("device = ") == 1


def test_submodules_and_stateless_modules_are_not_moved() -> None:
    source = (
        "import torch\nfrom torch import nn\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(2, 2)\n\n"
        "model = Net()\n"
        "loss_fn = nn.MSELoss()\n"
    )
    out = ported(source)
    assert "        self.fc = nn.Linear(2, 2)\n" in out
    assert "model = Net().to(device)\n" in out
    assert "loss_fn = nn.MSELoss()\n" in out


def test_next_of_an_iterator_is_moved_after_the_assignment() -> None:
    source = (
        "import torch\n" + LOADER + "\n"
        "model = torch.nn.Linear(4, 2)\n"
        "loader = DataLoader(ds)\n"
        "images, labels = next(iter(loader))\n"
        "print((model(images).argmax(1) == labels).float().mean())\n"
    )
    out = ported(source)
    assert (
        "images, labels = next(iter(loader))\n"
        f"images, labels = images.to(device, {NB}), labels.to(device, {NB})\n"
    ) in out


def test_unportable_batch_is_reported_not_half_moved() -> None:
    source = (
        "import torch\n" + LOADER + "\n"
        "class Batch:\n"
        "    def __init__(self, items):\n"
        "        self.x = torch.stack(items)\n\n"
        "def collate(items):\n    return Batch(items)\n\n"
        "model = torch.nn.Linear(4, 2)\n"
        "loader = DataLoader(ds, collate_fn=collate)\n"
        "for batch in loader:\n"
        "    out = model(batch)\n"
    )
    out = ported(source)
    assert "    out = model(batch)\n" in out and "batch.to(" not in out
    assert remaining(source) == ["TP520"]


def test_collate_objects_with_their_own_to_are_moved_with_it() -> None:
    source = (
        "import torch\n" + LOADER + "\n"
        "class Batch:\n"
        "    def to(self, device):\n"
        "        return self\n\n"
        "def collate(items):\n    return Batch(items)\n\n"
        "model = torch.nn.Linear(4, 2)\n"
        "loader = DataLoader(ds, collate_fn=collate)\n"
        "for batch in loader:\n"
        "    out = model(batch)\n"
    )
    out = ported(source)
    assert "    batch = batch.to(device)\n    out = model(batch)\n" in out


def test_packed_sequence_lengths_stay_on_the_cpu() -> None:
    source = (
        "import torch\nfrom torch import nn\n\n"
        "class Enc(nn.Module):\n"
        "    def forward(self, x, lens):\n"
        "        lengths = torch.tensor(lens)\n"
        "        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)\n"
        "        pos = torch.arange(x.size(1))\n"
        "        return self.rnn(packed), pos\n"
    )
    out = ported(source)
    assert "        lengths = torch.tensor(lens)\n" in out
    assert "        pos = torch.arange(x.size(1), device=x.device)\n" in out


def test_library_tensors_and_numpy_comparisons_remain_as_findings() -> None:
    source = (
        "import numpy as np\nimport torch\nfrom torchvision import transforms\n\n"
        "to_tensor = transforms.ToTensor()\n"
        "model = torch.nn.Linear(4, 2)\n"
        "x = to_tensor(img)\n"
        "expected = np.array([0, 1])\n"
        "pred = model(x).argmax(1)\n"
        "print((pred == expected).all())\n"
    )
    assert sorted(remaining(source)) == ["TP521", "TP522"]


def test_cpu_only_device_is_rebound_not_duplicated() -> None:
    source = (
        'import torch\n\ndevice = torch.device("cpu")\n'
        "model = torch.nn.Linear(4, 2)\n"
        "for x in loader:\n    out = model(x)\n"
    )
    out = ported(source)
    assert out.count("torch.accelerator.current_accelerator()") == 1
    assert DEVICE_LINE in out
    assert "model = torch.nn.Linear(4, 2).to(device)\n" in out


def test_noqa_and_select_work_on_port_rules() -> None:
    source = "import torch\n\nmodel = torch.nn.Linear(4, 2)  # noqa: TP501\n"
    assert port_source(source) == source
    loud = "import torch\n\nmodel = torch.nn.Linear(4, 2)\n"
    assert [f.code for f in check_source(loud, select=["TP5"])] == ["TP501"]


def test_plain_check_and_fix_do_not_port() -> None:
    source = "import torch\n\nmodel = torch.nn.Linear(4, 2)\nfor x in loader:\n    model(x)\n"
    assert not [f for f in check_source(source) if f.code.startswith("TP5")]
    assert fix_source(source, unsafe=True) == source


def test_formatting_comments_and_line_endings_are_kept() -> None:
    source = (
        "import torch\r\n\r\n"
        "model = torch.nn.Linear(  # wide\r\n    4, 2)\r\n"
        "loader = torch.utils.data.DataLoader(data)\r\n"
        "for x, y in loader:  # the loop\r\n"
        "    # forward\r\n"
        "    loss = (model(x) - y).sum()\r\n"
    )
    out = ported(source)
    assert "\n" not in out.replace("\r\n", "")
    assert "model = torch.nn.Linear(  # wide\r\n    4, 2).to(device)\r\n" in out
    assert "for x, y in loader:  # the loop\r\n    x, y = x.to(" in out
    assert "    # forward\r\n" in out


def test_a_file_that_does_not_parse_is_refused() -> None:
    with pytest.raises(SyntaxError):
        port_source("def f(:\n")


def test_readme_shows_the_port_of_the_example_as_it_is() -> None:
    """The README's before/after diff is exactly what `port --diff` prints for the example."""
    root = Path(__file__).resolve().parents[3]
    readme = (root / "README.md").read_text()
    section = readme.split("## Port a CPU script to the GPU", 1)[1]
    shown = section.split("```diff\n", 1)[1].split("```", 1)[0]
    cwd = Path.cwd()
    try:
        os.chdir(root)  # the diff names the example by its path from the repository root
        result = port_paths(["examples/port_cpu_script.py"], diff=True)
    finally:
        os.chdir(cwd)
    assert [c.diff for c in result.changed] == [shown]
    assert result.remaining == []


def test_models_held_by_objects_and_tensors_given_to_functions_are_moved_once() -> None:
    source = (
        "import torch\nfrom torch import nn\n\n"
        "class Trainer:\n"
        "    def __init__(self):\n"
        "        self.model = nn.Linear(4, 2)\n\n"
        "    def predict(self, x):\n"
        '        """Predict."""\n'
        "        return self.model(x).argmax(1)\n\n"
        "    def run(self):\n"
        "        return self.predict(torch.ones(3, 4) + 1)\n\n"
        "def run(model, bsz, x):\n"
        "    hidden = model.init_hidden(bsz)\n"
        "    return model(x, hidden)\n\n"
        "t = Trainer()\n"
        "x, y = next(iter(torch.utils.data.DataLoader(ds)))\n"
        "out = t.model(x)\n"
        "run(t.model, 4, torch.ones(2, 4))\n"
    )
    out = ported(source)
    assert "        self.model = nn.Linear(4, 2).to(device)\n" in out
    # predict is called only with a tensor (one plus one): moved where it arrives
    assert '        """Predict."""\n        x = x.to(device)\n' in out
    # run is handed a tensor the port itself makes on the device: no second move; bsz, an int,
    # is left alone
    assert "def run(model, bsz, x):\n    hidden = model.init_hidden(bsz)\n" in out
    assert "run(t.model, 4, torch.ones(2, 4, device=device))\n" in out
    assert "x, y = next(iter(" in out and ")))\nx = x.to(device, non_blocking=True)\n" in out


def test_values_of_unknown_kind_are_reported_never_moved() -> None:
    source = (
        "import torch\nfrom torch import nn\n\n"
        "class Trainer:\n"
        "    def __init__(self):\n"
        "        self.model = nn.Linear(4, 2)\n\n"
        "    def predict(self, x):\n"
        "        return self.model(x).argmax(1)\n\n"
        "def build(net, gamma, name):\n"
        "    return net(gamma), net(name)\n\n"
        "def evaluate(model, x, flag=None):\n"
        "    return model(x), model(flag)\n\n"
        "model = nn.Linear(2, 2)\n"
        "build(model, 0.5, 'relu')\n"
        "x, y = next(it)\n"
        "print(model(x))\n"
        "for name in ['a', 'b']:\n"
        "    model(name)\n"
        "for item in get_items():\n"
        "    model(item)\n"
    )
    out = ported(source)
    assert ".to(device)\n" not in out.replace("nn.Linear(4, 2).to(device)\n", "").replace(
        "nn.Linear(2, 2).to(device)\n", ""
    )
    assert "x.to(" not in out and "gamma.to(" not in out and "name.to(" not in out
    left = [(f.code, f.line) for f in port_text(source).remaining]
    # predict's x (no caller here), evaluate's x and flag (no caller), next(it) of an
    # unknown iterator, and the items of get_items(): reported; gamma (a float) and name
    # (a string) are not tensors: nothing to say about them.
    assert [code for code, _ in left] == ["TP520"] * 5


def test_one_device_binding_for_the_whole_file() -> None:
    """The port's moves all use one module-level binding, never a function's own `device`."""
    source = (
        "import torch\n\n"
        "model = torch.nn.Linear(4, 2)\n"
        "x0 = torch.ones(2, 4)\n"
        "print(model(x0))\n\n"
        "def main():\n"
        '    device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "    print(model(torch.ones(1, 4)))\n"
        "    return device\n"
        "main()\n"
    )
    out = ported(source)
    assert out.count(DEVICE_LINE) == 1 and "_device" not in out
    assert "print(model(torch.ones(1, 4, device=device)))" not in out  # not main's `device`
    assert "model = torch.nn.Linear(4, 2).to(device)\n" in out
    assert "x0 = torch.ones(2, 4, device=device)\n" in out
    left = port_text(source).remaining
    # inside main: reported, not moved wrongly; main's own CUDA-or-CPU choice kept, reported
    assert [f.code for f in left] == ["TP109", "TP503"]


def test_the_files_own_accelerator_choice_is_reused_and_code_above_it_reported() -> None:
    source = (
        "import torch\n\n"
        "model = torch.nn.Linear(4, 2)\n"
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "x = torch.ones(1, 4)\n"
        "print(model(x))\n"
    )
    out = ported(source)
    assert "torch.accelerator" not in out  # no second definition
    assert "x = torch.ones(1, 4, device=device)\n" in out
    assert "model = torch.nn.Linear(4, 2)\n" in out  # above `device`: no name to use there
    # the choice, kept, is reported too (TP109): on MPS or XPU it is the CPU
    assert [f.code for f in port_text(source).remaining] == ["TP501", "TP109"]
