"""TP109 on generated ``<autocast> if <CUDA test> else <context>`` conditionals (sample AF's N3).

Held-out sample AF's cosmos_distillation (``torch.autocast("cuda", dtype=torch.bfloat16) if
str(device).startswith("cuda") and torch.cuda.is_available() else nullcontext()``) was judged
noise: the conditional picks a mixed-precision context for work on a device chosen elsewhere,
no device. Oracle (by hand, per arm): the CUDA arm is torch's autocast on ``"cuda"`` with
nothing else naming CUDA, and the other arm is ``nullcontext()`` with no argument; anything
else picks a device or may (a CPU autocast, a device string, a user's ``autocast``), and stays
reported.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (CUDA arm, whether it is torch's autocast on "cuda" and nothing more)
CUDA_ARMS = [
    ('torch.autocast("cuda", dtype=torch.bfloat16)', True),
    ('torch.autocast(device_type="cuda", dtype=torch.float16)', True),
    ('torch.amp.autocast("cuda")', True),
    ('autocast("cuda", enabled=amp)', True),  # `from torch import autocast` (module header)
    ('torch.autocast("cuda:0")', True),
    ('torch.autocast("cuda", enabled=x.cuda() is not None)', False),
    ('torch.autocast("cuda", dtype=torch.float16, cache_enabled=("cuda" == kind))', False),
    ('my_autocast("cuda")', False),  # the module's own function: may place anything
    ('"cuda"', False),
    ('torch.device("cuda")', False),
    ("torch.cuda.amp.autocast()", False),  # CUDA's own API: TP109 keeps it (as on the base)
]
# (other arm, whether it is `nullcontext()` with no argument)
OTHER_ARMS = [
    ("nullcontext()", True),
    ("contextlib.nullcontext()", True),
    ("nc()", True),  # `from contextlib import nullcontext as nc`
    ('torch.autocast("cpu")', False),
    ('torch.autocast("cpu", dtype=torch.bfloat16)', False),
    ('nullcontext(torch.device("cpu"))', False),
    ('"cpu"', False),
    ("torch.device('cpu')", False),
]
TESTS = [
    "torch.cuda.is_available()",
    'str(device).startswith("cuda") and torch.cuda.is_available()',
    "use_cuda",
]
HEADER = (
    "import contextlib\nimport torch\nfrom contextlib import nullcontext\n"
    "from contextlib import nullcontext as nc\nfrom torch import autocast\n\n"
    "def my_autocast(kind):\n    return torch.zeros(1, device=kind)\n\n"
    "def run(model, x, device, amp, kind, use_cuda):\n"
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(CUDA_ARMS), st.sampled_from(OTHER_ARMS), st.sampled_from(TESTS))
def test_an_autocast_or_nothing_picks_no_device(
    cuda_arm: tuple[str, bool], other_arm: tuple[str, bool], test: str
) -> None:
    (body, autocast), (orelse, nothing) = cuda_arm, other_arm
    source = HEADER + f"    context = {body} if {test} else {orelse}\n    with context:\n"
    source += "        return model(x)\n"
    line = HEADER.count("\n") + 1
    reported = line in {f.line for f in check_source(source, select=["TP109"])}
    assert reported == (not (autocast and nothing)), source


def test_the_samples_conditional_is_left_and_a_device_choice_beside_it_is_not() -> None:
    """AF's own shape, with a real choice of the device two lines above it."""
    source = (
        "import torch\nfrom contextlib import nullcontext\n\n"
        "def run_generation(model, inputs, *, device):\n"
        '    device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "    autocast_context = (\n"
        '        torch.autocast("cuda", dtype=torch.bfloat16)\n'
        '        if str(device).startswith("cuda") and torch.cuda.is_available()\n'
        "        else nullcontext()\n"
        "    )\n"
        "    with torch.inference_mode(), autocast_context:\n"
        "        return model(inputs.to(device))\n"
    )
    assert {f.line for f in check_source(source, select=["TP109"])} == {5}
