"""Where a value lives, through the paths held-out recall round 5e's MMaDA took.

``add_gumbel_noise(logits, ...)`` converts ``logits`` to float64, and its callers hand it
``logits`` bound in two arms (``logits = model_output.logits`` after ``model_output =
MODEL(x)``; ``logits_cond, logits_uncond = torch.chunk(model_output.logits, 2)`` then
``logits = logits_uncond + ...`` after ``MODEL(torch.cat([x, un_x]))``), with ``x`` made
``device=DEVICE``. The oracle is written apart from ``semantic/_residence.py``, from the
shape drawn: a value is on the device when it is made or moved there (``device=dev``,
``.to(dev)``, ``.cuda()``) or is what a call of such a value returns, a field of that
(``out.logits``: not a fact such as ``.shape``, not a field of a module moved with ``.to``),
an element unpacked from it, or a name every arm binds on the device; one arm on the CPU
or unknown makes it unknown. TP108 reports a float64 conversion exactly of such a value,
also inside a helper its only caller hands it to.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import check_source

PRELUDE = (
    "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n\n\n"
    "net = Net().to(dev)\nxd = torch.ones(3, device=dev)\nbase = torch.ones(3)\n\n\n"
)
# (an expression, whether it is a tensor on the device)
SOURCES = (
    ("torch.zeros(2, device=dev)", True),
    ("base.to(dev)", True),
    ("base.cuda()", True),
    ("net(xd)", True),
    ("net(xd).logits", True),
    ("helper(torch.cat([xd, xd]))", True),
    ("torch.max(xd, 0).values", True),
    ("torch.ones(3)", False),
    ("base", False),
    ("unknown()", False),
    ("net.config", False),  # a module's field, not an output
    ("net(xd).shape", False),  # a fact, not a tensor
    ("helper(base).logits", False),  # a call keeps its input's place: the CPU
)
# (how the value reaches `v`: {a} and {b} are two sources, {i} the indent; which count)
PATHS = (
    ("v = {a}\n", "a"),
    ("if c:\n{i}    v = {a}\n{i}else:\n{i}    v = {b}\n", "ab"),
    ("v, w = torch.chunk({a}, 2)\n", "a"),
    ("out = helper({a})\n{i}v = out.logits\n", "a"),
    ("if c:\n{i}    out = helper({a})\n{i}    v = out.last_hidden_state\n{i}else:\n"
     "{i}    p, q = torch.chunk({b}, 2, dim=0)\n{i}    v = q + 2 * (p - q)\n", "ab"),
)  # fmt: skip
# (the code around the path: a template with {path} and its indent)
WHERE = (
    ("{path}", ""),
    ("def gen(c):\n    {path}", "    "),
    ("def gen(c):\n    for step in range(3):\n        {path}", "        "),
)
# (the conversion of `v` to float64, whether it sits in a helper called with `v`)
CONVERSIONS = (
    ("p = v.to(torch.float64)", False),
    ("p = v.double()", False),
    ("p = torch.rand_like(v, dtype=torch.float64)", False),
    ("p = noise(v)", True),
)
_HELPER = "def noise(t):\n    return t.to(dtype=torch.double)\n\n\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SOURCES),
    st.sampled_from(SOURCES),
    st.sampled_from(PATHS),
    st.sampled_from(WHERE),
    st.sampled_from(CONVERSIONS),
)
def test_a_float64_conversion_is_reported_exactly_when_the_value_is_on_the_device(
    a: tuple[str, bool],
    b: tuple[str, bool],
    path: tuple[str, str],
    where: tuple[str, str],
    conversion: tuple[str, bool],
) -> None:
    template, indent = where
    body = path[0].format(a=a[0], b=b[0], i=indent) + indent + conversion[0] + "\n"
    source = PRELUDE + (_HELPER if conversion[1] else "") + template.format(path=body)
    on_device = a[1] and (b[1] or "b" not in path[1])
    lines = source.splitlines()
    at = (
        next(n for n, text in enumerate(lines, 1) if "t.to(dtype=torch.double)" in text)
        if conversion[1]
        else len(lines)
    )
    found = {f.line for f in check_source(source, select=["TP108"])}
    assert (at in found) == on_device, source
