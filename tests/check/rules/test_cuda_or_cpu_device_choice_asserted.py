"""TP109 leaves a CUDA-or-CPU choice whose very next statement asserts it is CUDA.

Held-out sample AC (class F5; medical-imaging's ``lr_find_unet2d_static.py``): ``device =
torch.device('cuda' if torch.cuda.is_available() else 'cpu')`` then ``assert device.type ==
'cuda', "Ensure a GPU is available."``, judged low: the program goes on only on CUDA, so
picking the accelerator there changes nothing (``rules/_idle_choices.py``).

The oracle is the table of next statements, each marked by hand with whether it asserts that
the chosen name is CUDA (or that CUDA is available); the choice's form, the name, where the
choice stands and whether a statement comes between are drawn. TP109 reports the choice
unless the statement right after it is so marked.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

CHOICES = (
    "{n} = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
    "{n} = 'cuda' if torch.cuda.is_available() else 'cpu'",
    "{n} = torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu')",
)
# The statement after the choice: True where it asserts the chosen name is CUDA
NEXT = {
    "assert {n}.type == 'cuda'": True,
    "assert {n}.type == 'cuda', f'Expected CUDA, got {{{n}}}'": True,
    "assert 'cuda' == {n}.type": True,
    "assert {n} == 'cuda'": True,
    "assert torch.cuda.is_available()": True,
    "assert {n}.type != 'cuda'": False,
    "assert {n}.type in ('cuda', 'mps')": False,
    "assert {n}.type == 'cpu'": False,
    "assert other.type == 'cuda'": False,
    "assert x.device.type == 'cuda'": False,
    "assert {n}.type == 'cuda' or allow_cpu": False,
    "assert torch.cuda.is_available() or allow_cpu": False,
    "print({n})": False,
    "model = model.to({n})": False,
}
WHERE = {"module": "", "function": "def main(model, x, other, allow_cpu):\n"}


@settings(max_examples=120)
@given(
    choice=st.sampled_from(CHOICES),
    following=st.sampled_from(sorted(NEXT)),
    name=st.sampled_from(["device", "dev"]),
    where=st.sampled_from(sorted(WHERE)),
    between=st.booleans(),
)
def test_a_choice_asserted_cuda_at_once_is_left(
    choice: str, following: str, name: str, where: str, between: bool
) -> None:
    indent = "    " if where == "function" else ""
    lines = [choice.format(n=name)]
    if between:
        lines.append("print('chosen')")
    lines += [following.format(n=name), "model = model.to(" + name + ")"]
    source = "import torch\n\n" + WHERE[where] + "".join(f"{indent}{line}\n" for line in lines)
    found = [f.code for f in check_source(source, select=["TP109"])]
    left = NEXT[following] and not between
    assert (found == []) == left, source
    assert found in ([], ["TP109"]), source
