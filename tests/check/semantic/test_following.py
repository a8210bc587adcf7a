"""Whether a device choice's fix may move the device: the reasons it may not, named."""

from __future__ import annotations

import pytest

from torchport.check import check_source, fix_source

CHOICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


def _fixable(body: str) -> tuple[bool, str]:
    source = "import torch\n" + body
    finding = check_source(source, select=["TP109"])[0]
    return finding.fix is not None, finding.message


@pytest.mark.parametrize(
    "body",
    [
        CHOICE,
        CHOICE + "model = torch.nn.Linear(2, 2).to(device)\nout = model(x.to(device))\n",
        CHOICE + "model = Net()\nmodel.to(device)\nout = model(torch.ones(2, device=device))\n",
        CHOICE + 'print(f"using {device}")\nif device == "cuda":\n    print("fast")\n',
        CHOICE + "def train(model, device):\n    return model(torch.ones(1, 2).to(device))\n"
        "net = torch.nn.Linear(2, 2).to(device)\ntrain(net, device)\n",
        "def load(path, device=None):\n"
        '    if device is None:\n        device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "    return torch.load(path, map_location=device)\n",
    ],
)
def test_fix_offered_where_everything_follows(body: str) -> None:
    fixable, message = _fixable(body)
    assert fixable, message


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            "class Runner:\n    def __init__(self):\n"
            '        self.device = "cuda" if torch.cuda.is_available() else "cpu"\n',
            "kept in `self.device`",
        ),
        (CHOICE + "model = torch.nn.Linear(2, 2)\nout = model(x.to(device))\n", "not moved"),
        (CHOICE + "model = Net().to(device)\nx = x.cuda()\n", "moves to CUDA apart"),
        (CHOICE + 'if device.type != "cpu":\n    pass\n', "decides"),
        (CHOICE + "mask = torch.ones(2)\ny = x.to(device) * mask\n", "made on the CPU"),
        (CHOICE + "def step(model, x):\n    return model(x.to(device))\n", "callers"),
        (CHOICE + "cfg = {'device': device}\n", "stored in a dict under `'device'`"),
        (CHOICE + "cfg = {\n    'a': 1,\n    'device': str(device),\n}\n", "under `'device'`"),
        (CHOICE + "cfg = dict(**{**base, **device})\n", "stored in a dict unpacked"),
        (CHOICE + "devices = [\n    device,\n]\n", "used in `[device,`"),
        (CHOICE + "run(device)\n", "cannot follow"),
        (
            CHOICE + "class Runner:\n    def __init__(self, model):\n        self.model = model\n"
            "    def go(self, x):\n        return self.model(x.to(device))\n",
            "`self.model` gets values on the device",
        ),
    ],
)
def test_fix_refused_and_the_finding_says_why(body: str, reason: str) -> None:
    fixable, message = _fixable(body)
    assert not fixable
    assert "no automatic fix" in message and reason in message, message


def test_refused_fix_leaves_the_source_alone() -> None:
    source = "import torch\n" + CHOICE + "model = torch.nn.Linear(2, 2)\ny = model(x.to(device))\n"
    assert fix_source(source, select=["TP109"], unsafe=True) == source


@pytest.mark.parametrize(
    "made",
    ["torch.load('m.pt')", "torch.jit.load('m.pt')", "torch.hub.load('r', 'm')", "get_model()"],
)
def test_a_module_that_comes_from_elsewhere_blocks_the_fix(made: str) -> None:
    body = CHOICE + f"model = {made}\nout = model(x.to(device))\n"
    fixable, message = _fixable(body)
    assert not fixable and "`model` gets values on the device" in message, message


def test_a_loss_module_without_tensors_follows() -> None:
    body = (
        CHOICE + "net = torch.nn.Linear(2, 2).to(device)\ncriterion = torch.nn.CrossEntropyLoss()\n"
        "loss = criterion(net(x.to(device)), y.to(device))\n"
    )
    fixable, message = _fixable(body)
    assert fixable, message
