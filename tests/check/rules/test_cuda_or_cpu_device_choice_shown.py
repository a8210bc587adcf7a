"""TP109 leaves a CUDA-or-CPU value that is no device, or that is only shown as text.

Held-out sample AC (class F2): ``gpu = torch.cuda.get_device_name(0) if
torch.cuda.is_available() else "cpu"`` for an experiment's environment record
(alexandria-audiobook2's ``distill_eval.py``), and ``_device = torch.device('cuda' if
torch.cuda.is_available() else 'cpu')`` read only in a progress bar's text,
``f'Creating projections (device={_device})...'`` (medical-imaging's Streamlit app), both
judged low: no device is chosen. The GPU's name (or properties' name, or capability) is no
device, whatever else the other side is; text with a character no device string holds (a
space, a bracket, ``=``) places nothing. A value read any other way in its function (moved
to, formatted into a string that may be a device, ``f'{dev}:0'``, stored, returned) keeps the
finding; so does a module-level one that another module may import (the Streamlit app's is
at its module's top level, in ``if`` blocks: left where its repository is found and no other
module imports it).

The oracles are the tables below, each entry marked by hand.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# The CUDA side of `x = <side> if torch.cuda.is_available() else "cpu"`: True where the
# value may be a device
SIDES = {
    "torch.cuda.get_device_name(0)": False,
    "torch.cuda.get_device_name()": False,
    "torch.cuda.get_device_properties(0).name": False,
    "torch.cuda.get_device_capability()": False,
    "'cuda'": True,
    "'cuda:0'": True,
    "torch.cuda.current_device()": True,
    "torch.device('cuda')": True,
}


@given(side=st.sampled_from(sorted(SIDES)), where=st.sampled_from(["", "def f(x):\n    "]))
def test_the_gpu_name_or_the_cpu_is_no_device_choice(side: str, where: str) -> None:
    source = f"import torch\n\n{where}gpu = {side} if torch.cuda.is_available() else 'cpu'\n"
    source += "    x.to(gpu)\n" if where else ""  # read: a choice never read decides nothing
    found = [f.code for f in check_source(source, select=["TP109"])]
    assert (found == ["TP109"]) == SIDES[side], source


CHOICES = (
    "dev = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
    "dev = 'cuda' if torch.cuda.is_available() else 'cpu'",
)
# Reads of the chosen `dev` in its function: True where it may be used as a device
READS = {
    "bar = st.progress(0, text=f'Creating projections (device={dev})...')": False,
    "label = f'running on {dev}'": False,
    "print(dev)": False,
    "logger.info(f'device={dev}')": False,
    "def show(n):\n        return f'{n} done on {dev}'": False,
    "s = f'{dev}'": True,
    "s = f'{dev}:0'": True,
    "x = x.to(dev)": True,
    "model.to(f'{dev}')": True,
    "name = str(dev)": True,
    "record = {'device': dev}": True,
    "return dev": True,
    "print(x.to(dev))": True,  # printed, but moved first
    "logger.info('moved %s', model.to(dev))": True,
    "def later(x):\n        return x.to(dev)": True,
}


@settings(max_examples=120)
@given(
    choice=st.sampled_from(CHOICES),
    reads=st.lists(st.sampled_from(sorted(READS)), min_size=1, max_size=3),
    where=st.sampled_from(["function", "module"]),
)
def test_a_choice_only_shown_as_text_is_left(choice: str, reads: list[str], where: str) -> None:
    if where == "function":
        lines = [choice, *reads, "return x"] if "return dev" not in reads else [choice, *reads]
        body = "".join(f"    {line}\n" for line in lines)
        source = f"import torch\n\ndef run(x, model, st, logger):\n{body}"
    else:
        reads = [r for r in reads if not r.startswith(("return", "def "))] or ["print(dev)"]
        source = "import torch\n\n" + "".join(f"{line}\n" for line in [choice, *reads])
    found = [f.code for f in check_source(source, select=["TP109"])]
    shown_only = where == "function" and not any(READS[r] for r in reads)
    assert (found == []) == shown_only, source
    assert len(found) <= 1, source


# A module-level choice (a Streamlit script's): where it stands, its reads in the module, what
# another module of the repository does, and whether the repository is found. Each entry is
# marked by hand with whether it may read the choice as a device.
OPENINGS = {"top": "", "if": "if mode == 'align':\n", "with": "with st.spinner('x'):\n"}
MODULE_READS = {
    "bar": ("bar = st.progress(0, text=f'Projecting (device={_device})...')", False),
    "nested": (
        "def tick(n):\n    bar.progress(n, text=f'Projecting (device={_device}) {n}')",
        False,
    ),
    "print": ("print('on', _device)", False),
    "move": ("x = x.to(_device)", True),
    "bare f-string": ("d = f'{_device}'", True),
    "globals": ("d = globals()['_device']", True),
}
MODULE_IMPORTERS = {
    "nothing": ("x = 1\n", False),
    "imports it": ("from app import _device\n", True),
    "imports the module": ("import app\n", True),
}


def _module_program(opening: str, reads: list[str]) -> str:
    indent = "    " if OPENINGS[opening] else ""
    body = ["_device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')"]
    for read in reads:
        body += MODULE_READS[read][0].split("\n")
    lines = "".join(f"{indent}{line}\n" for line in body)
    return f"import streamlit as st\nimport torch\n\n{OPENINGS[opening]}{lines}"


@settings(max_examples=40, deadline=None)
@given(
    opening=st.sampled_from(sorted(OPENINGS)),
    reads=st.lists(st.sampled_from(sorted(MODULE_READS)), min_size=1, max_size=2, unique=True),
    importer=st.sampled_from(sorted(MODULE_IMPORTERS)),
    checkout=st.booleans(),
)
def test_a_module_choice_only_shown_and_imported_nowhere_is_left(
    opening: str, reads: list[str], importer: str, checkout: bool
) -> None:
    source = _module_program(opening, reads)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        if checkout:
            (root / ".git").mkdir()
        (root / "main.py").write_text(MODULE_IMPORTERS[importer][0])
        (root / "app.py").write_text(source)
        found = [f.code for f in check_source(source, str(root / "app.py"), select=["TP109"])]
    read_as_device = any(MODULE_READS[r][1] for r in reads) or MODULE_IMPORTERS[importer][1]
    assert (found == []) == (checkout and not read_as_device), source


def test_each_read_alone_decides_the_finding() -> None:
    """Every read of the table alone, after each form of the choice, in a function."""
    for choice in CHOICES:
        for read in READS:
            lines = [choice, read] if read == "return dev" else [choice, read, "return x"]
            body = "".join(f"    {line}\n" for line in lines)
            source = f"import torch\n\ndef run(x, model, st, logger):\n{body}"
            found = [f.code for f in check_source(source, select=["TP109"])]
            assert (found == []) == (not READS[read]), source
