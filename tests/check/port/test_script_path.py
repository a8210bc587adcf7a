"""A model found through the script's own ``sys.path`` entry (issue 31, x31b's set: hnn).

``experiment/train.py`` puts the folder above it on ``sys.path`` and imports the model
from there (greydanus/hamiltonian-nn: ``PARENT_DIR = os.path.dirname(os.path.dirname(
os.path.abspath(__file__)))``). The project view looked beside the file and at the root
above its packages, so the model was an unknown call: the port moved the data and left
the model on the CPU, and said nothing. The oracle runs the original on the CPU and the
port on the simulated accelerator with no CUDA redirect, in a child, from copies of the
project: a port that reports nothing must give the same values there.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tests.preloaded import run_python
from torchport.check import port_paths

_HEAD = "import os\nimport sys\nfrom pathlib import Path\n\nimport torch\n\n"
ENTRIES = {
    "dirname-twice": "PARENT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
    "sys.path.append(PARENT_DIR)\n",
    "literal": "sys.path.append('..')\n",
    "join": "sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))\n",
    "pathlib": "sys.path.insert(0, str(Path(__file__).resolve().parents[1]))\n",
    "pathlib-parent": "ROOT = Path(__file__).resolve().parent.parent\nsys.path.append(str(ROOT))\n",
}
_TRAIN = (
    "from nn_models import MLP\n\n"
    "torch.manual_seed(0)\n"
    "model = MLP()\n"
    "x = torch.randn(3, 4)\n"
    "OUT.append(model(x).detach())\n"
)
_MODELS = (
    "import torch\n\n\nclass MLP(torch.nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n"
    "        self.fc = torch.nn.Linear(4, 2)\n\n"
    "    def forward(self, x):\n        return self.fc(x)\n"
)


def _project(root: Path, entry: str) -> Path:
    (root / "experiment").mkdir(parents=True)
    (root / "nn_models.py").write_text(_MODELS, encoding="utf-8")
    script = root / "experiment" / "train.py"
    script.write_text(_HEAD + entry + "\n" + _TRAIN, encoding="utf-8")
    return script


def test_a_model_found_through_the_script_s_sys_path_is_placed() -> None:
    """Every entry form (few: enumerated; one child runs them all)."""
    with tempfile.TemporaryDirectory() as tmp:
        pairs = []
        for entry in sorted(ENTRIES):
            original = Path(tmp, entry, "original")
            _project(original, ENTRIES[entry])
            ported = Path(tmp, entry, "ported")
            shutil.copytree(original, ported)
            result = port_paths([ported], jobs=1)
            script = Path("experiment", "train.py")
            text = (ported / script).read_text(encoding="utf-8")
            assert "MLP().to(device)" in text, (entry, text)
            assert not result.remaining, (entry, result.remaining)
            pairs.append((str(original / script), str(ported / script)))
        for entry, got in zip(sorted(ENTRIES), _cpu_then_sim(pairs), strict=True):
            assert got["same"] and got["devices"] == ["sim:0"], (entry, got)


def test_an_entry_the_port_cannot_read_is_said() -> None:
    entry = "sys.path.append(os.environ.get('MODELS_DIR', '..'))\n"
    with tempfile.TemporaryDirectory() as tmp:
        script = _project(Path(tmp) / "p", entry)
        result = port_paths([script.parent.parent], jobs=1)
        said = [f for f in result.remaining if f.code == "TP523" and "`nn_models`" in f.message]
        assert said, result.remaining
        assert said[0].line == _HEAD.count("\n") + 1


_CHILD = """
import json, os, runpy, sys
import torch

def run(script):
    out = []
    saved = list(sys.path)
    os.chdir(os.path.dirname(script))  # where the script runs from: `..` is its parent
    for name in ("nn_models",):
        sys.modules.pop(name, None)
    torch.manual_seed(0)
    try:
        runpy.run_path(script, {"OUT": out}, "__main__")
    finally:
        sys.path[:] = saved
    return out

pairs = json.loads(sys.argv[1])
cpus = [run(original) for original, _ in pairs]
from torchport.testing import simulate_accelerator
simulate_accelerator()
found = []
for cpu, (_, ported) in zip(cpus, pairs):
    sim = run(ported)
    same = len(cpu) == len(sim) and all(torch.equal(a, b.cpu()) for a, b in zip(cpu, sim))
    found.append({"same": same, "devices": [str(t.device) for t in sim]})
print(json.dumps(found))
"""


def _cpu_then_sim(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if k != "TORCHPORT_DEVICE"}
    child = run_python(_CHILD, json.dumps(pairs), env=env)
    assert child.returncode == 0, child.stderr[-3000:]
    result: list[dict[str, Any]] = json.loads(child.stdout.splitlines()[-1])
    return result
