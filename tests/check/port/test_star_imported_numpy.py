"""The silent class the fourth held-out port set (branch h31d) found: numpy by a star import.

mingen-pan/Reinforcement-Learning-Q-learning-Gridworld-Pytorch's ``main.py`` never imports
numpy itself: ``np`` comes with ``from gridworld import *`` (the sibling module imports it).
The port placed the model and its input, but ``np.argmax(qval.data)`` of the model's output
was not reported (TP522 was only when ``np`` is imported by the file itself): "0 left", and
the ported program stopped on the accelerator at that line (``.numpy()`` of a device
tensor). Since branch x34 the resolver binds what a star import of a project module binds
(``np`` is ``helpers``'s ``import numpy as np``), and TP522 reports the line.

The oracle: the ported project run with ``meta`` standing in for the accelerator (numpy
refuses a meta tensor, as it refuses a device one), and what the port said was left.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.check.port.siblings import load
from torchport.check import port_paths

project_fuzz = load("project_fuzz_for_star_numpy", Path(__file__).parent / "test_project_fuzz.py")

_WORLD = """import numpy as np

def start():
    return np.ones(4, dtype=np.float32)
"""

_TRAIN = """NUMPY
import torch

model = torch.nn.Linear(4, 3)
state = torch.from_numpy(start()).view(1, -1)
qval = model(state)
OUT.append(int(np.argmax(qval.data)))
"""


def _placed_or_said(numpy_import: str) -> bool:
    return _project_placed_or_said(
        {"world.py": _WORLD, "train.py": _TRAIN.replace("NUMPY", numpy_import)}
    )


def _project_placed_or_said(files: dict[str, str]) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        project_fuzz._write(root, files)
        on_cpu, _ = project_fuzz._run(root, meta=False)
        assert not isinstance(on_cpu, BaseException), on_cpu  # the original runs on the CPU
        result = port_paths([root], jobs=1)
        ran, off = project_fuzz._run(root, meta=True)
        return (not off and not isinstance(ran, BaseException)) or bool(result.remaining)


def test_numpy_of_the_output_is_said_when_np_comes_by_a_star_import() -> None:
    assert _placed_or_said("from world import *")


def test_numpy_and_a_tensor_helper_through_a_chain_of_star_imports_are_said() -> None:
    """``train.py`` star-imports ``grid.py``, which star-imports ``world.py``: ``np`` and
    ``start`` (a function making a CPU tensor) come two steps away."""
    helper = _WORLD.replace(
        "np.ones(4, dtype=np.float32)", "torch.from_numpy(np.ones(4, dtype=np.float32))"
    )
    train = _TRAIN.replace("NUMPY", "from grid import *").replace(
        "torch.from_numpy(start())", "start()"
    )
    files = {
        "world.py": "import torch\n" + helper,
        "grid.py": "from world import *\n",
        "train.py": train,
    }
    assert _project_placed_or_said(files)
    with tempfile.TemporaryDirectory() as tmp:  # and the numpy line itself is said
        root = Path(tmp) / "project"
        project_fuzz._write(root, files)
        result = port_paths([root], jobs=1)
        lines = {f.line for f in result.remaining if Path(f.path).name == "train.py"}
        ported = (root / "train.py").read_text().splitlines()
    assert 1 + ported.index("OUT.append(int(np.argmax(qval.data)))") in lines  # told where


def test_numpy_of_the_output_is_said_when_the_file_imports_numpy() -> None:
    """Not blind: the same program with its own `import numpy as np` is reported (TP522)."""
    assert _placed_or_said("from world import *\nimport numpy as np")


def test_the_oracle_sees_the_leftover() -> None:
    """Not blind: ported, the star-import program fails with `meta` standing in."""
    files = {"world.py": _WORLD, "train.py": _TRAIN.replace("NUMPY", "from world import *")}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        project_fuzz._write(root, files)
        port_paths([root], jobs=1)
        ran, off = project_fuzz._run(root, meta=True)
        assert off or isinstance(ran, BaseException)
