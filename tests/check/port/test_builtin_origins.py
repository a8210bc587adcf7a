"""What ``round``/``min``/``max``/``abs``/``sum``/``pow`` give is named by what they are given.

timm's ``validate.py`` reported ``round(100 * precision, 4)`` as "made by ``round(100 *
precision, 4)``, which the port cannot follow" (TP523), and ``legacy_train.py`` ``sum(lrs)``:
the builtin was named, not the value it rounds or adds (``precision_score`` of scikit-learn,
``optimizer.param_groups``), so the report named the wrong thing to move. These builtins make
of tensors a tensor where they are and of numbers a number: the origin of what they give is
the origin of what they are given. The invariant: a finding never names such a builtin; a
value made only of numbers is never reported; one made of a value the port cannot follow
(``torch.load(...)``) is reported, naming that value.

Programs are generated: a builtin wrapping a number, a host number a call makes, a torch
factory or a value the port cannot follow, meeting the model's output. The findings are
checked against what the generator put in, and each original and its port run on the CPU and
on the simulated accelerator (the port runs wherever the original ran, or a finding names the
line where it stops).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.test_namespace_settings import runs_or_is_reported
from torchport.check.port import port_text

pytest.importorskip("torch")

# What the builtin is given: (text, what a finding must name, may name; None: nothing)
_VALUES = {
    "number": ("0.5", None, None),
    "item": ("x.sum().item()", None, None),
    "stdlib": ("statistics.mean([1.0, 3.0])", None, None),
    "math": ("math.sqrt(4.0)", None, None),
    # TP503 makes it on the device, or it is named where it is made
    "factory": ("torch.ones(8, 1)", None, "torch.ones"),
    "loaded": ("torch.load(io.BytesIO(saved))", "torch.load", None),
}
_WRAPPERS = (
    "round({v}, 4)",
    "round(100 * {v}, 2)",
    "abs({v})",
    "pow({v}, 2)",
    "sum([{v}, {v}])",
    "max([{v}])",
    "min({v}, {w})",
)
_BUILTINS = ("round(", "abs(", "pow(", "sum(", "max(", "min(")


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, set[str], set[str]]:
    """A program, the origins a finding must name and those it may name (no other)."""
    first, second = draw(st.lists(st.sampled_from(sorted(_VALUES)), min_size=2, max_size=2))
    wrapper = draw(st.sampled_from(_WRAPPERS))
    text = wrapper.format(v=_VALUES[first][0], w=_VALUES[second][0])
    given = [first, second] if "{w}" in wrapper else [first]
    named = {_VALUES[g][1] for g in given}
    may = {_VALUES[g][2] for g in given}
    program = (
        "import io\nimport math\nimport statistics\n\nimport torch\nimport torch.nn as nn\n"
        "\n\ndef main():\n    buf = io.BytesIO()\n    torch.save(torch.ones(8, 1), buf)\n"
        "    saved = buf.getvalue()\n"
        "    model = nn.Linear(4, 1)\n    x = torch.randn(8, 4)\n"
        f"    out = model(x)\n    value = {text}\n"
        "    OUT.append((out * value).detach().cpu())\n\n\nmain()\n"
    )
    return program, {n for n in named if n}, {n for n in may if n}


def _check(source: str, named: set[str], may: set[str]) -> None:
    left = port_text(source, "p.py").remaining
    for finding in left:
        if finding.code not in ("TP521", "TP523"):
            continue  # (TP306 asks `torch.load` for a `map_location`)
        assert not any(f"`{b}" in finding.message for b in _BUILTINS), (finding.message, source)
        assert any(n in finding.message for n in named | may), (finding.message, source)
    if named:  # (a finding names an operand's first origin: `min(torch.ones(...), ...)`)
        assert any(f.code in ("TP521", "TP523") for f in left), source


@settings(max_examples=40, deadline=None)
@given(programs())
def test_a_builtin_of_numbers_is_never_named(case: tuple[str, set[str], set[str]]) -> None:
    _check(*case)


# One child per example (a torch start): one example by default, more in the slow leg.
@settings(max_examples=1, deadline=None)
@given(st.lists(programs(), min_size=10, max_size=10))
def test_the_port_of_a_builtin_of_values_runs_or_is_reported(
    cases: list[tuple[str, set[str], set[str]]],
) -> None:
    runs_or_is_reported([source for source, _, _ in cases])


@pytest.mark.slow  # a simulated-accelerator child per example
@settings(max_examples=10, deadline=None)
@given(st.lists(programs(), min_size=10, max_size=10))
def test_the_port_of_a_builtin_of_values_runs_or_is_reported_many(
    cases: list[tuple[str, set[str], set[str]]],
) -> None:
    runs_or_is_reported([source for source, _, _ in cases])


def test_the_timm_validate_case_names_the_library() -> None:
    """``round(100 * precision, 4)`` of ``precision_score``: TP521 names scikit-learn's call."""
    source = (
        "import torch\nimport torch.nn as nn\nfrom sklearn.metrics import precision_score\n\n\n"
        "def main():\n    model = nn.Linear(4, 1)\n    out = model(torch.randn(8, 4))\n"
        "    precision = precision_score([0, 1], [0, 1])\n"
        "    print(out * round(100 * precision, 4))\n\n\nmain()\n"
    )
    left = port_text(source, "p.py").remaining
    assert [f.code for f in left] == ["TP521"], left
    assert "precision_score" in left[0].message
