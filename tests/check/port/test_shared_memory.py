"""A tensor the device flow moves that shares its memory with an array: placed or said.

``t = torch.from_numpy(a)`` then ``a[0, 0] = 5.0`` and ``model(t)``: on the CPU the model sees
the write; the port wrote ``torch.from_numpy(a).to(device)``, a copy made before it, and the
ported program computed other values, "0 left" (k31ah's strict xfail, issue 31). The invariant
(``port/_shared_memory``): such a tensor is moved only where no write can be seen through the
sharing (the array's later uses only read it into new values, the tensor is not written in
place, or the statement rebinds the array's name), else reported (TP503, no fix); the same of
a call of the file's own function returning such a tensor of its parameter (g31ak: the
argument it is handed shares, silent on the base).

The oracle (``no_cuda_sim.placed_or_said``, written apart from the port): the original on the
CPU, the port on the simulated accelerator: the original's values with every output on
``sim:0``, or a finding left. Near forms (nothing written through the sharing) must be placed
with nothing left. A view of the array (``torch.from_numpy(a[:, :3])``) is the array's to the
invariant (k31ak: it was said whatever followed).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said
from torchport.check.port import port_text

pytest.importorskip("torch")

MAKERS = {
    "from_numpy": "torch.from_numpy(a)",
    "as_tensor": "torch.as_tensor(a)",
    "asarray": "torch.asarray(a)",
    "from_numpy, cast": "torch.from_numpy(a).float()",
    # k31ak: a view of the array shares its memory too (said whole on be62ecb8, even unwritten:
    # hunkim/PyTorchZeroToAll's `from_numpy(xy[:, [-1]])`); followed as the array's name
    "from_numpy of a view": "torch.from_numpy(a[:, :3])",
    "as_tensor of rows": "torch.as_tensor(a[0:1])",
    "a helper": "to_tensor(a)",  # the file's own function returning the sharing tensor (g31ak)
}
_HELPER = "def to_tensor(arr):\n    return torch.from_numpy(arr)\n\n"
WRITES = {  # after the tensor is made: each one seen through the sharing on the CPU
    "an item": "a[0, 0] = 5.0",
    "added to": "a += 1.0",
    "filled": "a.fill(2.0)",
    "shuffled": "np.random.default_rng(0).shuffle(a)",
    "through a view": "a.T[1, 0] = 3.0",
    "through a row": "row = a[0]\nrow[2] = 7.0",
    "the tensor, then the array read": "t[0, 1] = 4.0\nOUT.append(torch.tensor(a.sum()))",
    "the tensor in place": "t.mul_(2.0)\nOUT.append(torch.tensor(a[0, 1]))",
}
NEAR = {  # nothing written through the sharing: placed, nothing left
    "read only": "print(a.shape, a.sum(), len(a))",
    "written before": None,  # (the write comes before the tensor is made)
    "rebound": "a = np.ones((1, 3), dtype=np.float32)",
    "a copy written": "b = a.copy()\nb[0, 0] = 9.0",
}
PLACES = ("the module", "a main")


def _program(maker: str, use: str, place: str) -> str:
    head = "import numpy as np\nimport torch\nimport torch.nn as nn\n\nmodel = nn.Linear(3, 2)\n"
    head += _HELPER if maker == "a helper" else ""
    body = ["a = np.zeros((1, 3), dtype=np.float32)"]
    if use == "written before":
        body += ["a[0, 1] = 2.0", f"t = {MAKERS[maker]}"]
    else:
        body += [f"t = {MAKERS[maker]}", *(WRITES | NEAR)[use].split("\n")]
    body += ["OUT.append(model(t))"]
    if place == "a main":
        return head + "def main():\n" + "".join(f"    {b}\n" for b in body) + "main()\n"
    return head + "".join(f"{b}\n" for b in body)


CASE = st.tuples(
    st.sampled_from(sorted(MAKERS)), st.sampled_from(sorted(WRITES)), st.sampled_from(PLACES)
)
_EACH = [(m, w, "the module") for m, w in zip(itertools.cycle(sorted(MAKERS)), sorted(WRITES))]


# the default run: the explicit cases only (each example is a child's run on `sim`); the
# whole table, every case drawn here, is the slow test below (`-m slow`)
@settings(deadline=None, phases=(Phase.explicit,))
@given(st.lists(CASE, min_size=3, max_size=6))
@example(_EACH)
def test_a_model_input_sharing_an_arrays_memory_is_placed_or_said(
    cases: list[tuple[str, str, str]],
) -> None:
    placed_or_said([_program(*case) for case in cases])


def test_a_written_array_is_said_with_the_tensor_where_it_is_made() -> None:
    ported = port_text(_program("from_numpy", "an item", "the module"))
    assert "torch.from_numpy(a)\n" in ported.source, ported.source  # not moved
    (left,) = ported.remaining
    assert left.code == "TP503" and "shares its memory with `a`" in left.message, left


@pytest.mark.parametrize("use", sorted(NEAR))
def test_nothing_written_through_the_sharing_is_placed(use: str) -> None:
    for maker, place in itertools.product(sorted(MAKERS), PLACES):
        ported = port_text(_program(maker, use, place))
        assert not ported.remaining, (maker, place, ported.remaining, ported.source)
        assert ".to(device)" in ported.source or "device=device" in ported.source


@pytest.mark.slow  # every maker x write x place in one child
def test_every_shared_array_write_is_placed_or_said() -> None:
    table = itertools.product(sorted(MAKERS), sorted(WRITES | NEAR), PLACES)
    placed_or_said([_program(*case) for case in table])
