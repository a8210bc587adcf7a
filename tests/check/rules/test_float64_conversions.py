"""TP108's conversions: float64 made of a tensor already on a device, also in a helper.

Held-out recall round 5e (Gen-Verse/MMaDA: ``F.softmax(logits.to(torch.float64), dim=-1)``
with model logits on the device, and ``def add_gumbel_noise(logits, t): logits =
logits.to(torch.float64); noise = torch.rand_like(logits, dtype=torch.float64)`` called only
with them). The oracle is written apart from the rule: each generated program's tensor is
followed step by step by this file's own bookkeeping (where it was made or last moved, what
keeps it there), and a conversion is expected to be reported exactly when it makes float64
(``.to(torch.float64)``, ``.to(dtype=torch.double)``, ``.double()``, ``torch.rand_like(x,
dtype=torch.float64)``) of a tensor the bookkeeping puts on the device; in a helper, when
every call of the helper in the module hands it such a tensor.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (where the tensor comes from, whether that is the device: None when nobody can tell)
ORIGINS = (
    ("torch.ones(3, device=dev)", True),
    ("torch.ones(3).cuda()", True),
    ("torch.ones(3).to(dev)", True),
    ("torch.ones(3)", False),
    ("torch.from_numpy(arr)", False),
    ("torch.ones(3, device=dev).to('cpu')", False),
    ("load_tensor()", None),
)
# steps that keep the tensor where it is
STEPS = (".float()", ".detach()", ".clone()", ".contiguous()", "")
# (the conversion of `{x}`, whether it makes float64)
CONVERSIONS = (
    ("{x}.to(torch.float64)", True),
    ("{x}.to(dtype=torch.double)", True),
    ("{x}.double()", True),
    ("torch.rand_like({x}, dtype=torch.float64)", True),
    ("{x}.to(torch.float32)", False),
    ("{x}.float()", False),
    ("torch.rand_like({x})", False),
)


def _program(origin: str, step: str, conversion: str, helper: bool, cpu_call: bool) -> str:
    lines = ["import numpy as np", "import torch", "", "arr = np.ones(3)", f"x = {origin}"]
    lines.append(f"y = x{step}")
    if helper:
        lines[3:3] = ["def helper(t):", f"    return {conversion.format(x='t')}", ""]
        lines.append("z = helper(y)")
        if cpu_call:
            lines.append("w = helper(torch.ones(2))")
    else:
        lines.append(f"z = {conversion.format(x='y')}")
    return "\n".join(lines) + "\n"


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(ORIGINS),
    st.sampled_from(STEPS),
    st.sampled_from(CONVERSIONS),
    st.booleans(),
    st.booleans(),
)
def test_float64_of_a_device_tensor_is_reported(
    origin: tuple[str, bool | None],
    step: str,
    conversion: tuple[str, bool],
    helper: bool,
    cpu_call: bool,
) -> None:
    source = _program(origin[0], step, conversion[0], helper, cpu_call)
    on_device = origin[1] is True and not (helper and cpu_call)
    expected = on_device and conversion[1]
    found = check_source(source, "run.py", select=["TP108"])
    assert bool(found) == expected, source
    if found:
        (finding,) = found
        text = source.splitlines()[finding.line - 1]
        assert "float64" in text or "double" in text


def test_a_helper_handed_on_as_a_callback_is_left_alone() -> None:
    source = (
        "import torch\n\ndef helper(t):\n    return t.double()\n\n"
        "x = torch.ones(3).cuda()\ny = helper(x)\nfns = [helper]\n"
    )
    assert check_source(source, "run.py", select=["TP108"]) == []
    assert (
        len(check_source(source.replace("fns = [helper]\n", ""), "run.py", select=["TP108"])) == 1
    )


def test_a_named_device_stays_the_factory_case() -> None:
    source = (
        "import torch\n\nx = torch.ones(3).cuda()\n"
        "y = torch.rand_like(x, dtype=torch.float64, device='cpu')\n"
    )
    assert check_source(source, "run.py", select=["TP108"]) == []


def test_a_module_running_gradient_checks_keeps_its_float64() -> None:
    source = (
        "import torch\nfrom torch.autograd import gradcheck\n\n"
        "x = torch.rand(3).cuda()\nok = gradcheck(f, (x.double(),))\n"
    )
    assert check_source(source, "ops/test.py", select=["TP108"]) == []
    plain = source.replace("from torch.autograd import gradcheck\n", "")
    assert len(check_source(plain, "ops/test.py", select=["TP108"])) == 1
