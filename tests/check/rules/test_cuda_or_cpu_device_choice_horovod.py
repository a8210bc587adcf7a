"""TP109 leaves the CUDA-or-CPU choices of a module written for Horovod.

Horovod's collectives (``hvd.allreduce``, ``hvd.broadcast_parameters``) take CPU or CUDA
tensors only, so in a module that imports Horovod (plainly, under ``try``, inside a
function, any of its submodules) a CUDA-or-CPU choice picks between the only devices it
can use (pytorch/ignite's ``_HorovodDistModel.device()``, sample J). An import of
anything else (a name that merely contains "horovod", a module of the project named
after it) leaves the choice reported. The oracle: the first dotted part of every drawn
import, compared with ``horovod`` apart from the code.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

IMPORTS = (
    "",
    "import horovod.torch as hvd",
    "from horovod import run as hvd_run",
    "import horovod",
    "try:\n    import horovod.torch as hvd\nexcept ImportError:\n    hvd = None",
    "import my_horovod_utils",
    "import horovod_helpers",
    "from .horovod import launch",
    "import numpy as np",
)
CHOICES = (
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu"); model.to(device)',
    "if torch.cuda.is_available():\n    model.cuda()",
    'if torch.cuda.is_available():\n    return torch.device(f"cuda:{index}")\n'
    'return torch.device("cpu")',
)


def _horovod(imports: str) -> bool:
    for line in imports.splitlines():
        words = line.split()
        if words[:1] in (["import"], ["from"]) and words[1].split(".")[0] == "horovod":
            return True
    return False


@given(
    imports=st.sampled_from(IMPORTS),
    choice=st.sampled_from(CHOICES),
    in_function=st.booleans(),
)
def test_a_module_written_for_horovod_keeps_its_choice(
    imports: str, choice: str, in_function: bool
) -> None:
    body = choice.splitlines()
    if in_function or "return" in choice:
        body = ["def device(model, index):", *("    " + line for line in body)]
    source = "\n".join(["import torch", *imports.splitlines(), "", "", *body]) + "\n"
    found = check_text(source, "pkg/comp_models/dist.py", ruleset_for(["TP109"], None)).findings
    assert bool(found) != _horovod(imports), source
