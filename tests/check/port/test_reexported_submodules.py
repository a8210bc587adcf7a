"""A model class reached through a submodule its package re-exports (``pkg.model.Net()``).

The class (r31ak, "what a package re-exports, of every kind"; ``port/_reexports.py``): an
importer of a package gets what the package binds. Its near forms that hold: the importer
imports the submodule itself (``import pkg.model`` then ``pkg.model.Net()``, or ``import
pkg.model as m``): the model and its input are moved. Left (b31al, 0b4c999a; strict xfail):
the package binds the submodule (``pkg/__init__.py``: ``import pkg.model`` or ``from . import
model``) and the importer reaches it through the package (``import pkg`` then
``pkg.model.Net()``): the model and its input stay on the CPU, "0 left" (on the simulated
accelerator: right values, every output on ``cpu``; not placed, not said).

Child-free: the ported script is read (the sim runs are in benchmarks/RESULTS.md, b31al).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from torchport.check import port_paths

_MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""
_USE = "net = {call}()\nx = torch.randn(3, 4)\nOUT.append(net(x))\n"
HOLDS = {  # (pkg/__init__.py, the script's import, the call)
    "the submodule imported": ("", "import pkg.model", "pkg.model.Net"),
    "the submodule imported as": ("", "import pkg.model as m", "m.Net"),
}
LEFT = {
    "the package imports it": ("import pkg.model\n", "import pkg", "pkg.model.Net"),
    "the package imports it relatively": ("from . import model\n", "import pkg", "pkg.model.Net"),
}


def _placed_or_said(init: str, imported: str, call: str) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pkg").mkdir()
        (root / "pkg" / "__init__.py").write_text(init, encoding="utf-8")
        (root / "pkg" / "model.py").write_text(_MODEL, encoding="utf-8")
        script = f"import torch\n{imported}\n\n" + _USE.format(call=call)
        (root / "train.py").write_text(script, encoding="utf-8")
        result = port_paths([root], jobs=1)
        assert not result.errors, result.errors
        ported = (root / "train.py").read_text(encoding="utf-8")
    placed = f"{call}().to(device)" in ported and "torch.randn(3, 4).to(device)" in ported
    return placed or bool(result.remaining)


@pytest.mark.parametrize("case", sorted(HOLDS))
def test_a_submodule_the_script_imports_is_followed(case: str) -> None:
    assert _placed_or_said(*HOLDS[case])


@pytest.mark.xfail(strict=True, reason="b31al: pkg.model.Net() through the package: 0 left, CPU")
@pytest.mark.parametrize("case", sorted(LEFT))
def test_a_submodule_the_package_binds_is_followed(case: str) -> None:
    assert _placed_or_said(*LEFT[case])
