"""``torchport port --verify``: "verified" only after a run on the simulated accelerator.

The oracle is the run itself (a child process on ``sim``, CUDA's device rules):
a project the port places fully runs to its end and is verified; one where data
stays on the CPU stops at a device error, which is reported at the user's
``file:line`` and makes the exit status 1, whatever the static count says.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchport.check.port._verify import find_entry
from torchport.cli._main import main

_MODEL = (
    "from torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
    "    def forward(self, x):\n        return self.fc(x)\n"
)


@pytest.mark.needs_simulator  # runs the project on sim:0: needs torch 2.7+
def test_a_fully_placed_project_is_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "model.py").write_text(_MODEL)
    (tmp_path / "train.py").write_text(
        "import sys\nimport torch\nfrom model import Net\n\n"
        "if __name__ == '__main__':\n    net = Net()\n    x = torch.ones(int(sys.argv[1]), 4)\n"
        "    print(net(x).sum().item())\n"
    )
    assert main(["port", str(tmp_path), "--verify", "--", "3"]) == 0
    out = capsys.readouterr().out
    assert "Verified on the simulated accelerator" in out
    assert "Not verified" not in out


@pytest.mark.needs_simulator  # runs the project on sim:0: needs torch 2.7+
def test_data_left_on_the_cpu_is_a_finding_with_its_line_and_no_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "zipped.py"
    script.write_text(  # the inputs go through a list comprehension the port does not follow
        "import torch\n\nmodel = torch.nn.Linear(4, 2)\n"
        "xs = [torch.randn(3, 4) for _ in range(2)]\n"
        "outs = [model(x) for x in xs]\nprint(len(outs))\n"
    )
    assert main(["port", str(script), "--verify"]) == 1
    out = capsys.readouterr().out
    assert "Verified on the simulated accelerator" not in out
    assert "zipped.py:" in out and "verify: " in out and "at a device error" in out
    found = re.search(r"zipped\.py:(\d+): verify: ", out)
    assert found is not None, out
    line = int(found[1])
    assert "model(x)" in script.read_text().splitlines()[line - 1]


def test_verify_refuses_a_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "a.py"
    script.write_text("import torch\n")
    assert main(["port", "--diff", str(script), "--verify"]) == 2
    assert "--verify runs the ported files" in capsys.readouterr().err


def test_the_entry_is_the_one_main_script(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(_MODEL)
    assert find_entry([str(tmp_path)])[0] is None  # no script: said, not guessed
    (tmp_path / "eval.py").write_text("if __name__ == '__main__':\n    pass\n")
    assert find_entry([str(tmp_path)])[0] == tmp_path / "eval.py"
    (tmp_path / "train.py").write_text("if __name__ == '__main__':\n    pass\n")
    assert find_entry([str(tmp_path)])[0] == tmp_path / "train.py"
    (tmp_path / "train.py").rename(tmp_path / "other.py")
    entry, why = find_entry([str(tmp_path)])
    assert entry is None and "several scripts" in why
