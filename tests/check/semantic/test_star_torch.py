"""``torch`` bound by a star import of a project module that imports it (round 5d).

jinyeying/night-enhancement: ``from networks import *`` then ``torch.load(path)``, where
``networks.py`` does ``import torch``. The oracle is Python's own star import, written
apart from the checker: a module's star import binds each of its public top-level names
(its ``__all__`` when it has one), so the importing file's ``torch`` is torch exactly when
the module binds the name ``torch`` to torch and ``__all__`` (if any) lists it, and the
importing file does not bind ``torch`` itself.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_paths

# (what networks.py's top level holds, whether it binds the name `torch` to torch)
MODULES = (
    ("import torch\n", True),
    ("import torch.nn as nn\n", False),
    ("import torch.nn\n", True),  # binds `torch`
    ("import torch as th\n", False),
    ("from compat import torch\n", True),  # compat re-export (compat.py imports torch)
    ("import numpy as np\n", False),
)
# (an `__all__` line, whether it lets `torch` through)
ALLS = (("", True), ('__all__ = ["build"]\n', False), ('__all__ = ["build", "torch"]\n', True))
# (how runner.py binds `torch` itself, whether it does)
OWN = (("", False), ("torch = None\n", True))


def _reported(module: str, all_line: str, own: str) -> bool:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "compat.py").write_text("import torch\n")
        (folder / "networks.py").write_text(module + all_line + "\n\ndef build():\n    pass\n")
        (folder / "runner.py").write_text(
            "from networks import *\n" + own + "\n\ndef load(path):\n    return torch.load(path)\n"
        )
        found = check_paths([folder / "runner.py"], select=["TP301"], jobs=1).findings
    return any(f.code == "TP301" for f in found)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(MODULES), st.sampled_from(ALLS), st.sampled_from(OWN))
def test_torch_through_a_star_import_is_torch(
    module: tuple[str, bool], all_line: tuple[str, bool], own: tuple[str, bool]
) -> None:
    expected = module[1] and all_line[1] and not own[1]
    assert _reported(module[0], all_line[0], own[0]) == expected
