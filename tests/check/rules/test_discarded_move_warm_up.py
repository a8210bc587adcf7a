"""TP107 leaves a discarded move of a tensor the statement makes from a shape alone.

Held-out sample Z, N1 (stable-diffusion-webui-codex ``runtime/memory/stream.py:116``):
``torch.zeros((1, 1)).to(device, torch.float32)`` as a statement inside ``with
torch.xpu.stream(mover):`` is a warm-up run for its effect, judged noise. TP107's case is a
tensor a later line still reads on the old device; a tensor made in the statement from a
shape holds no one's data and no name holds it, so nothing is left behind. A copy of data a
name holds (``torch.tensor(x)``, ``torch.cat([x, x])``, ``x.clone()``, ``x.float()``,
``torch.as_tensor(x)``) may be the move of ``x`` meant, and stays reported.

The oracle is the two tables below, each entry marked by hand: a receiver, whether it is
made from a shape alone; a method called on it, whether its result is still only that
tensor. The receiver, up to two methods, the move and where the statement stands are drawn;
TP107 reports the statement exactly when the tensor moved is not one made from a shape.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

RECEIVERS = {
    "torch.zeros((1, 1))": True,
    "torch.randn(2, 3)": True,
    "torch.empty(4, dtype=torch.float16)": True,
    "torch.arange(8)": True,
    "torch.full((2,), 7.0)": True,
    "torch.ones_like(x)": True,  # x's shape, none of its data
    "x": False,
    "buf[0]": False,
    "(torch.zeros(3) + x)": False,  # x's data in it
    "torch.tensor(x)": False,  # a copy of x's data
    "torch.as_tensor(x)": False,  # may be x itself
    "torch.cat([x, x])": False,
    "x.clone()": False,
    "x.float()": False,
}
METHODS = {
    ".float()": True,
    ".contiguous()": True,
    ".detach()": True,
    ".view(-1)": True,
    ".half()": True,
    ".sum()": True,
    ".softmax(-1)": True,
    ".pow(x)": False,  # x's data in it
}
MOVES = (
    *(".to(device)", ".cuda()", ".cpu()"),
    *(".to(device, torch.float32)", ".to(device, non_blocking=True)"),
)
PLACES = {
    "module": "{}\n",
    "function": "def warm(self, x, batch, device):\n    {}\n",
    "stream": "def warm(self, x, batch, device):\n    with torch.cuda.stream(s):\n        {}\n",
}


@given(
    receiver=st.sampled_from(sorted(RECEIVERS)),
    methods=st.lists(st.sampled_from(sorted(METHODS)), max_size=2),
    move=st.sampled_from(MOVES),
    place=st.sampled_from(sorted(PLACES)),
)
def test_a_move_of_a_tensor_made_from_a_shape_leaves_nothing_behind(
    receiver: str, methods: list[str], move: str, place: str
) -> None:
    made_here = RECEIVERS[receiver] and all(METHODS[m] for m in methods)
    statement = receiver + "".join(methods) + move
    source = "import torch\n\nx = torch.zeros(3)\nbuf = torch.zeros(3)\n\n" + PLACES[place].format(
        statement
    )
    found = [f.code for f in check_source(source, select=["TP107"])]
    assert found == ([] if made_here else ["TP107"]), source
