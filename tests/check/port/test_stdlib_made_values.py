"""What the standard library makes out of plain values holds no tensor, however far it is followed.

A parameter given ``Path(__file__).resolve().parent`` (a project's root folder, handed
to a function that also gets the model's outputs) was reported "cannot tell whether the
argument is a tensor": the port read ``Path(__file__)`` and ``.resolve()`` as plain
values but an attribute of one (``.parent``) as unknown, and ``__file__`` itself as
unknown. Found on a real repository's evaluation script (a CIFAR-10 error analysis:
``analyze_width(width, args, root_dir, loader, device)``).

Invariant: an attribute, or a method given nothing to move, of a call of a standard-library
function or class that hands back nothing it was given, itself given nothing to move, is
nothing to move (:func:`~torchport.check.port._calls.made_by_stdlib`); any step given a
tensor, a pass-through call at the root (``random.choice``), or a name in between keeps the
port unsure, and it says so.
"""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from torchport.check.port import port_text

_PROGRAM = """import datetime
import os
import pathlib
import random
from pathlib import Path

import torch
import torch.nn as nn

w = torch.ones(2)


def collect(model, loader, device):
    confusion = torch.zeros(2, 2, device=device)
    for x in loader:
        confusion += model(x.to(device)).sum()
    return confusion


def save(confusion, path):
    path.write_text(str(confusion.sum().item()))


def analyze(where, device):
    model = nn.Linear(2, 2).to(device)
    confusion = collect(model, [torch.ones(2, device=device)], device)
    out_dir = where / "x"
    save(confusion, out_dir / "a.csv")


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    root = {value}
    analyze(root, device)


main()
"""

# roots the standard library makes from plain values
_ROOTS = [
    "Path(__file__)",
    'Path("data")',
    'pathlib.PurePath("a", "b")',
    'os.path.join(os.path.dirname(__file__), "x")',
    "datetime.datetime.now()",
]
# steps of a chain, each given plain values
_STEPS = [".parent", ".resolve()", '.with_suffix(".pt")', ".name", ".upper()", '.joinpath("x")']


@st.composite
def _chains(draw: st.DrawFn, tensor: bool = False) -> str:
    steps = draw(st.lists(st.sampled_from(_STEPS), min_size=1, max_size=4))
    if tensor:  # one step given the tensor `w`, an attribute of its result read after it
        at = draw(st.integers(min_value=0, max_value=len(steps)))
        steps[at:at] = [".joinpath(w)", ".parent"]
    return draw(st.sampled_from(_ROOTS)) + "".join(steps)


def _left(value: str) -> list[str]:
    outcome = port_text(_PROGRAM.format(value=value), "prog.py")
    assert not outcome.failures, outcome.failures
    return sorted(f.code for f in outcome.remaining if "`where`" in f.message)


@settings(max_examples=25, deadline=None)
@given(_chains())
def test_a_chain_the_standard_library_makes_is_nothing_to_move(value: str) -> None:
    assert _left(value) == [], value


@settings(max_examples=15, deadline=None)
@given(_chains(tensor=True))
def test_a_tensor_anywhere_in_the_chain_keeps_the_port_unsure(value: str) -> None:
    # (a chain ending in `.upper()` gives a str or raises, whatever it was given: text, which
    # every caller of `analyze` hands `where`, so nothing to move: n31an's `given_text`)
    assume(not value.endswith(".upper()"))
    assert _left(value) == ["TP520"], value


def test_a_chain_ending_in_a_str_method_is_text() -> None:
    """n31an: ``where`` is handed ``Path(__file__).joinpath(w).parent.upper()`` by every call
    site: a str (no tensor has ``upper``), so no TP520, tensor in the chain or not."""
    assert _left("Path(__file__).joinpath(w).parent.upper()") == []


def test_a_pass_through_root_or_a_name_between_keeps_the_port_unsure() -> None:
    assert _left("random.choice([w, w]).real") == ["TP520"]
    assert _left("random.choice([Path('a'), Path('b')]).parent") == ["TP520"]  # (what was handed)
    # a name in between: what was stored on it is not followed
    program = _PROGRAM.replace("    root = {value}\n", "    p = Path('a')\n    root = p.parent\n")
    assert program != _PROGRAM
    outcome = port_text(program, "prog.py")
    assert [f.code for f in outcome.remaining if "`where`" in f.message] == ["TP520"]


def test_the_module_file_name_is_a_plain_value() -> None:
    assert _left("__file__") == []
    assert _left("os.path.basename(__file__)") == []
