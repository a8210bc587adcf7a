"""TP109 on generated ``if <CUDA test>: with <autocast>: <work>`` statements (sample AH).

Held-out sample AH's snake-dqn (``colab/h100_apex_v1.py``: ``if torch.cuda.is_available():
with torch.amp.autocast('cuda', dtype=...): <train step>``, once with no ``else`` and once with
an ``else`` running the same step) was judged noise twice: the branch picks a mixed-precision
context for work on a device chosen elsewhere, no device. Oracle (by hand, per part): the
branch is one ``with`` of torch's autocast on ``"cuda"`` and nothing else naming CUDA, its work
names no CUDA, and the ``else`` is absent or the very same work; anything else may pick a
device (the CPU in the ``else``, ``.cuda()`` in the work, a user's ``autocast``) and stays
reported.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (the with's context, whether it is torch's autocast on "cuda" and nothing more)
CONTEXTS = [
    ('torch.amp.autocast("cuda", dtype=torch.bfloat16)', True),
    ('torch.autocast(device_type="cuda", dtype=torch.float16)', True),
    ('autocast("cuda")', True),  # `from torch import autocast` (module header)
    ('torch.autocast("cuda", enabled=x.cuda() is not None)', False),
    ('my_autocast("cuda")', False),  # the module's own function: may place anything
    ("torch.cuda.amp.autocast()", False),  # CUDA's own API: kept (as on the base)
    ('torch.autocast("cuda"), torch.no_grad()', False),  # more than the one autocast
]
# (the work under the with, whether it names no CUDA)
WORKS = [
    ("y = model(x)", True),
    ("y = model(x)\n{i}loss = y.sum()", True),
    ("y = model(x.cuda())", False),
    ('y = model(x.to("cuda"))', False),
    ("y = model(x)\n{i}torch.cuda.synchronize()", False),
]
ELSES = ["none", "same", "other", "cpu"]
TESTS = ["torch.cuda.is_available()", "use_cuda"]
HEADER = (
    "import torch\nfrom torch import autocast\n\n"
    "def my_autocast(kind):\n    return torch.zeros(1, device=kind)\n\n"
    "def run(model, x):\n    use_cuda = torch.cuda.is_available()\n"
)


def _source(context: str, work: str, orelse: str, test: str) -> str:
    body = work.format(i=" " * 12)
    source = HEADER + f"    if {test}:\n        with {context}:\n            {body}\n"
    if orelse == "same":
        source += f"    else:\n        {work.format(i=' ' * 8)}\n"
    elif orelse == "other":
        source += "    else:\n        y = model(x) * 2\n"
    elif orelse == "cpu":
        source += "    else:\n        y = model.cpu()(x)\n"
    return source + "    return y\n"


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(CONTEXTS),
    st.sampled_from(WORKS),
    st.sampled_from(ELSES),
    st.sampled_from(TESTS),
)
def test_an_autocast_under_a_cuda_test_picks_no_device(
    context: tuple[str, bool], work: tuple[str, bool], orelse: str, test: str
) -> None:
    (with_context, autocast), (body, plain) = context, work
    source = _source(with_context, body, orelse, test)
    line = HEADER.count("\n") + 1
    reported = line in {f.line for f in check_source(source, select=["TP109"])}
    assert reported == (not (autocast and plain and orelse in ("none", "same"))), source


def test_the_samples_two_branches_are_left_and_a_device_choice_beside_them_is_not() -> None:
    """AH's own shapes, with a real choice of the device above them."""
    source = (
        "import torch\n\n"
        "def train(model, batch, dtype):\n"
        '    device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "    batch = batch.to(device)\n"
        "    if torch.cuda.is_available():\n"
        "        with torch.amp.autocast('cuda', dtype=dtype):\n"
        "            _ = model(batch)\n"
        "    if torch.cuda.is_available():\n"
        "        with torch.amp.autocast('cuda', dtype=dtype):\n"
        "            loss = model(batch)\n"
        "    else:\n"
        "        loss = model(batch)\n"
        "    return loss\n"
    )
    assert {f.line for f in check_source(source, select=["TP109"])} == {4}
