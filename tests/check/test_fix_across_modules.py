"""A class of another module of the project, with its own ``.cuda()``/``.to()``: left alone.

``from .batch import Batch`` binds a name whose class lives in a sibling module:
``Batch(x).cuda()`` must not become ``.to(device)`` (it would call the batch's own
``to`` instead of its ``cuda``, and raise ``AttributeError`` for a class, ``Sub`` of a
base in another file, that has no ``to``). The fix reads the sibling's classes through
the port's project view (issue 34; ``check/port/_project_owners.py``).

Oracle: the package runs on this CPU-only machine before ``fix --unsafe --select
ALL`` and must print the same after it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_FILES = {
    "pkg/__init__.py": "",
    "pkg/batch.py": (
        "class Batch:\n"
        "    def __init__(self, x):\n"
        "        self.x = x\n\n"
        "    def cuda(self):\n"
        "        print('own cuda')\n"
        "        return self\n\n"
        "    def to(self, where):\n"
        "        print('own to', where)\n"
        "        return self\n\n\n"
        "class Base:\n"
        "    def cuda(self):\n"
        "        print('base cuda')\n"
        "        return self\n"
    ),
    "pkg/train.py": (
        "import torch\n\n"
        "from .batch import Base, Batch\n\n\n"
        "class Sub(Base):\n"
        "    pass\n\n\n"
        "def main():\n"
        "    b = Batch(torch.ones(1)).cuda()\n"
        "    b = b.to('cuda')\n"
        "    s = Sub().cuda()\n"
        "    return b, s\n"
    ),
}


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=root, capture_output=True, text=True, check=False, timeout=300
    )


def test_a_class_of_a_sibling_module_keeps_its_own_cuda(tmp_path: Path) -> None:
    for name, text in _FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    program = "import pkg.train as t; t.main()"
    before = _run(tmp_path, "-c", program)
    assert before.returncode == 0, before.stderr
    fixed = _run(tmp_path, "-m", "torchport", "fix", "--unsafe", "--select", "ALL", "pkg")
    assert fixed.returncode in (0, 1), fixed.stderr
    after = _run(tmp_path, "-c", program)
    assert (after.returncode, after.stdout) == (0, before.stdout), after.stderr[-2000:]
