"""Recall round 5d's missed classes (issue 34, branch r34m), kept as strict xfails, not fixes.

Each class is a line maintainers changed when they ported their code off CUDA
(benchmarks/data/recall_sites_round5d.csv) that ``check --select ALL`` did not report.
Each xfail has a control beside it: the same line in the form the rules already read,
reported today, so the xfail fails only for the reason it names. A fix of the class
turns its xfail into an XPASS, which strict mode reports as a failure to be removed.
The round's other misses are left out on purpose: quiet by a rule's documented standard
(a test's CUDA-or-CPU device list, TP109's test code; ``torch.cuda.manual_seed_all`` right
after ``torch.manual_seed``, TP402), or reported on another line (``from torch.cuda.amp
import GradScaler``: TP403 reports the call).

- torch reached only through a project module's star import (jinyeying/night-enhancement:
  ``from networks import *`` then ``torch.load(...)``): read as torch since branch x34
  (the resolver binds what a star import of a project module binds; no longer an xfail);
- the call sites of a project helper whose body calls ``.cuda()`` (MIC-DKFZ/nnUNet:
  ``data = to_cuda(data)``): only the helper's body is reported;
- a factory that meets a tensor argument's rows (ludwig-ai/ludwig:
  ``torch.cat((torch.full((n,), -100), target))`` for ``target in targets[name]``, with
  ``targets: Dict[str, torch.Tensor]``): TP117 reads neither the sequence given to
  ``torch.cat``/``torch.stack`` nor a loop over the argument's rows (two xfails).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from torchport.check import check_paths, check_source


def _lines(root: Path, files: dict[str, str], name: str) -> set[int]:
    """The lines of ``name`` that ``check --select ALL`` reports in the project ``files``."""
    folder = Path(tempfile.mkdtemp(dir=root))
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    result = check_paths([folder], select=["ALL"], jobs=1)
    return {f.line for f in result.findings if Path(f.path).name == name}


_LOADER = (
    "class Runner:\n"
    "    def __init__(self, args):\n"
    "        self.device = args.device\n\n"
    "    def load(self, path):\n"
    "        return torch.load(path)\n"
)
_NETWORKS = "import torch\n\n\ndef build(device):\n    return torch.nn.Linear(2, 2).to(device)\n"


def test_control_a_load_in_a_file_that_imports_torch_is_reported(tmp_path: Path) -> None:
    files = {"networks.py": _NETWORKS, "runner.py": "import torch\n\n" + _LOADER}
    assert 8 in _lines(tmp_path, files, "runner.py")


def test_a_load_through_a_star_imported_torch_is_reported(tmp_path: Path) -> None:
    files = {"networks.py": _NETWORKS, "runner.py": "from networks import *\n\n" + _LOADER}
    assert 8 in _lines(tmp_path, files, "runner.py")


_HELPER = (
    "import torch\n\n\n"
    "def to_cuda(data, gpu_id=0):\n"
    "    return data.cuda(gpu_id, non_blocking=True)\n"
)
_TRAIN = (
    "import torch\n"
    "from to_torch import to_cuda\n\n\n"
    "def step(model, batch):\n"
    "    data = {move}\n"
    "    return model(data)\n"
)


def test_control_the_cuda_call_itself_is_reported(tmp_path: Path) -> None:
    files = {"to_torch.py": _HELPER, "train.py": _TRAIN.format(move="batch.cuda(0)")}
    assert 6 in _lines(tmp_path, files, "train.py")


def test_a_call_of_a_project_helper_that_calls_cuda_is_reported(tmp_path: Path) -> None:
    files = {"to_torch.py": _HELPER, "train.py": _TRAIN.format(move="to_cuda(batch)")}
    assert 6 in _lines(tmp_path, files, "train.py")


_PAD = (
    "from typing import Dict\n\n"
    "import torch\n\n\n"
    "def pad(targets: Dict[str, torch.Tensor], name: str):\n"
    "{body}"
)
# The factory is always on line 8; ``target`` is a tensor of the argument ``targets``.
_DIRECT = "    target = targets[name]\n    padding = torch.full((3,), -100)\n    return {meet}\n"
_ROWS = (
    "    for target in targets[name]:\n"
    "        padding = torch.full((3,), -100)\n"
    "        yield padding + target\n"
)


def _tp117(body: str) -> set[int]:
    return {f.line for f in check_source(_PAD.format(body=body), "pad.py", select=["TP117"])}


def test_control_a_factory_added_to_a_tensor_of_the_argument_is_reported() -> None:
    assert 8 in _tp117(_DIRECT.format(meet="padding + target"))


def test_a_factory_concatenated_with_a_tensor_of_the_argument_is_reported() -> None:
    assert 8 in _tp117(_DIRECT.format(meet="torch.cat((padding, target))"))


def test_a_factory_added_to_the_rows_of_the_argument_is_reported() -> None:
    assert 8 in _tp117(_ROWS)
