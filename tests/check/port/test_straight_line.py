"""A helper whose local is rebound from numpy to a tensor just before it is returned.

Found on MorvanZhou/PyTorch-Tutorial's ``406_GAN.py`` (held out, round 4):
``paintings = a * np.power(PAINT_POINTS, 2) + (a - 1)`` then ``paintings =
torch.from_numpy(paintings).float()`` then ``return paintings``; the model meets
``artist_works()``. Every value of ``paintings`` was asked, the numpy one too, so the
helper was not known to return a CPU tensor: no move, a TP523 left, and the ported
program stopped on the simulated accelerator. Now the value the statements just before
the ``return`` assign is the one read (:mod:`torchport.check.port._straight_line`).

Two oracles, apart from the code. Python itself: generated helpers (assignments of
numpy arrays, tensors and numbers to ``x``, under ``if``, in loops, unpacked, through a
walrus or a nested function's ``nonlocal``, then ``return x`` or ``return x.float()``)
are called with the flag both ways; a helper said to return a CPU tensor must return one
on every call, and a helper whose last top-level statement before the ``return`` is
``x = <tensor>`` must be said to (unless a nested function rebinds ``x`` through
``nonlocal``: then the port stays unsure, on purpose). And the simulated accelerator:
the GAN-shaped program, ported, runs to its end there.
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.port._module_functions import own_tensor_functions

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

_VALUES = {
    "numpy": "np.ones(3)",
    "tensor": "torch.ones(3)",
    "from_numpy": "torch.from_numpy(np.ones(3)).float()",
    "number": "3",
}
_TENSORS = ("tensor", "from_numpy")


def _statement(kind: str, value: str) -> str:
    v = _VALUES[value]
    return {
        "assign": f"x = {v}",
        "if": f"if flag:\n    x = {v}",
        "else": f"if flag:\n    pass\nelse:\n    x = {v}",
        "loop": f"for _ in range(1):\n    x = {v}",
        "empty_loop": f"for _ in range(0):\n    x = {v}",
        "unpacked": f"x, y = {v}, 1",
        "walrus": f"(x := {v})",
        "nonlocal": f"def inner():\n    nonlocal x\n    x = {v}\ninner()",
        "other_name": f"z = {v}",
        "augmented": "x += 0",
    }[kind]


_KINDS = ("assign", "if", "else", "loop", "empty_loop", "unpacked", "walrus", "nonlocal")
_KINDS += ("other_name", "augmented")
statements = st.tuples(st.sampled_from(_KINDS), st.sampled_from(tuple(_VALUES)))


def _helper(body: list[tuple[str, str]], first: str, suffix: str) -> str:
    lines = [f"x = {_VALUES[first]}"]
    lines += [_statement(kind, value) for kind, value in body]
    lines.append(f"return x{suffix}")
    inner = "\n".join("    " + line for text in lines for line in text.splitlines())
    return f"import numpy as np\nimport torch\n\n\ndef helper(flag):\n{inner}\n"


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(
    st.lists(statements, max_size=5),
    st.sampled_from(tuple(_VALUES)),
    st.sampled_from(["", ".float()"]),
)
def test_a_helper_said_to_return_a_cpu_tensor_returns_one_on_every_path(
    body: list[tuple[str, str]], first: str, suffix: str
) -> None:
    source = _helper(body, first, suffix)
    said = "helper" in own_tensor_functions(Context(source, "m.py", ast.parse(source)))
    results = []
    for flag in (True, False):
        space: dict[str, object] = {}
        exec(compile(source, "m.py", "exec"), space)
        try:
            results.append(space["helper"](flag))  # type: ignore[operator]
        except (AttributeError, TypeError):  # `.float()` of a number or an array, `+=`
            results.append(None)
    if said:
        assert all(isinstance(r, torch.Tensor) and r.device.type == "cpu" for r in results), source
    last = body[-1] if body else ("assign", first)
    nonlocal_anywhere = any(kind == "nonlocal" for kind, _ in body)  # left "not sure", on purpose
    if last[0] == "assign" and last[1] in _TENSORS and not nonlocal_anywhere:
        assert said, source  # the value read is the one just assigned: a CPU tensor


_GAN = """\
import numpy as np
import torch
import torch.nn as nn

POINTS = np.vstack([np.linspace(-1, 1, 3) for _ in range(4)])


def artist_works():
    a = np.random.uniform(1, 2, size=4)[:, np.newaxis]
    paintings = a * np.power(POINTS, 2) + (a - 1)
    paintings = torch.from_numpy(paintings).float()
    return paintings


D = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
for step in range(3):
    real = artist_works()
    print(D(real).shape)
"""


def test_the_gan_shaped_program_is_ported_whole_and_runs_on_the_simulator() -> None:
    from tests.check.port.no_cuda_sim import stops_on_sim
    from torchport.check import port_paths

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "gan.py")
        path.write_text(_GAN, encoding="utf-8")
        result = port_paths([str(path)], jobs=1)
        ported = path.read_text(encoding="utf-8")
        assert not result.errors, result.errors
        assert "artist_works().to(device)" in ported, ported
        assert not result.remaining, [f.message for f in result.remaining]
        assert stops_on_sim([str(path)]) == [None]
