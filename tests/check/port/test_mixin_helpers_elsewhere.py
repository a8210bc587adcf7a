"""A plain class holding the device whose helpers come from a mixin base class (issue 34 recall).

DeepADoTS' ``AutoEncoder(Algorithm, PyTorchUtils)`` moves its model with
``self.to_device(self.aed)`` and its batches with ``self.to_var(ts)``, helpers of
``PyTorchUtils`` (a plain class, not a Module) in ``algorithm_utils.py``, then calls
``output.data.numpy()`` on the model's output: on a CUDA machine that fails (its maintainers
added ``.cpu()``, recall round 5b). With the base class in the same file the port's call flow
follows the helpers and TP506 reports the ``.numpy()``; with the base class in another module
of the project, nothing in the class's file is reported (branch t34an; the flow's method
lookup, ``_call_sites.method_of_receiver``, walks the file's own classes only). The oracle is
the site itself, marked by hand: the ``.numpy()`` line of ``fit``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchport.check import check_paths

_BASE = """\
import torch


class PyTorchUtils:
    def __init__(self, gpu):
        self.gpu = gpu

    @property
    def device(self):
        return torch.device(f"cuda:{self.gpu}" if torch.cuda.is_available() else "cpu")

    def to_var(self, t):
        return t.to(self.device)

    def to_device(self, model):
        model.to(self.device)
"""
_ALGO = """\
import torch.nn as nn
{imports}

class Algo({base}):
    def __init__(self, gpu=None):
        {base}.__init__(self, gpu)
        self.net = None

    def fit(self, x):
        self.net = nn.Linear(3, 3)
        self.to_device(self.net)
        out = self.net(self.to_var(x))
        return out.data.numpy()
"""
_SPELLINGS = {  # how algo.py names the base class of utils.py: (imports, base)
    "from-relative": ("from .utils import PyTorchUtils\n", "PyTorchUtils"),
    "module-relative": ("from . import utils\n", "utils.PyTorchUtils"),
}


def _numpy_line(source: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if ".numpy()" in line)


def _reported(path: Path, line: int) -> set[str]:
    found = check_paths([path.parent], select=["ALL"], jobs=1).findings
    return {f.code for f in found if Path(f.path).name == path.name and f.line == line}


def test_helpers_of_a_base_class_in_the_same_file(tmp_path: Path) -> None:
    source = _BASE + "\n\n" + _ALGO.format(imports="", base="PyTorchUtils")
    path = tmp_path / "algo.py"
    path.write_text(source)
    assert "TP506" in _reported(path, _numpy_line(source))


@pytest.mark.xfail(
    strict=True,
    reason="the call flow does not follow a base class of another module (branch t34an, Left)",
)
@pytest.mark.parametrize("spelling", sorted(_SPELLINGS))
def test_helpers_of_a_base_class_in_another_module(tmp_path: Path, spelling: str) -> None:
    imports, base = _SPELLINGS[spelling]
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "utils.py").write_text(_BASE)
    source = _ALGO.format(imports=imports, base=base)
    path = package / "algo.py"
    path.write_text(source)
    assert "TP506" in _reported(path, _numpy_line(source))
