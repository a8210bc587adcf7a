"""TP101 leaves a test's CUDA copy of a value it also holds: a CPU-vs-CUDA comparison.

Samples K and M (captum's ``cuda_model = copy.deepcopy(model).cuda()``, pytorch3d's
``points1_cuda = points1.cuda()`` beside the CPU run): the test holds both and compares
them; CUDA is what it tests. Generated assignments draw the bound name (the value's name
with ``_cuda``/``_gpu`` after or ``cuda_`` before it, another name with them, a plain
name), the value read (``x.cuda()``, ``copy.deepcopy(x).cuda()``, ``x.to("cuda")``) and
the place (test code or a program). The oracle, written here: left exactly in test code
when the bound name is the value's own name plus a CUDA word.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# bound name given the value's name `{v}`, and whether it is `{v}`'s CUDA copy
NAMES = {
    "{v}_cuda": True,
    "cuda_{v}": True,
    "{v}_gpu": True,
    "y_cuda": False,  # another value's name
    "cuda_device": False,
    "{v}2": False,
    "{v}_cpu": False,
}
VALUES = ("{v}.cuda()", "copy.deepcopy({v}).cuda()", '{v}.to("cuda")', "{v}.cuda().detach()")
PLACES = {"tests/test_ops.py": True, "src/ops.py": False}


@given(
    name=st.sampled_from(sorted(NAMES)),
    value=st.sampled_from(VALUES),
    v=st.sampled_from(("points1", "model", "x")),
    place=st.sampled_from(sorted(PLACES)),
)
def test_a_cuda_copy_beside_the_cpu_value_is_left(
    name: str, value: str, v: str, place: str
) -> None:
    source = (
        "import copy\nimport torch\n\n\n"
        f"def test_compare({v}):\n"
        f"    {name.format(v=v)} = {value.format(v=v)}\n"
        "    return 0\n"
    )
    found = check_text(source, place, ruleset_for(["TP101"], None)).findings
    left = PLACES[place] and NAMES[name]
    assert bool(found) != left, (place, source)
