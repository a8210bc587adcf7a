"""A module-level comprehension over a fixed count makes its copies once: TP905's, not TP106's.

``input_data = [(torch.randn(1, 3, 640, 640).to(device),) for i in range(100)]`` at
module level (a one-off script's dummy inputs) runs once on import. Generated modules
build such a comprehension over iterables drawn at random (``range`` of numbers written
out, ``range(n)``, a loader, a list), one or two ``for`` clauses, optionally inside a
module-level loop or a function. The oracle, written apart: exactly one of TP106 and
TP905 reports the copy, TP905 when every ``for`` runs over ``range`` of literal numbers
and no loop or function encloses it.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

ITERABLES = {  # an iterable, and whether it is a fixed count written out
    "range(100)": True,
    "range(3, 10)": True,
    "range(0, 64, 8)": True,
    "range(n)": False,
    "range(len(batches))": False,
    "loader": False,
    "[1, 2, 3]": False,
}
WRAPPERS = {"": True, "for epoch in range(3):": False, "def make():": False}


@given(
    iterables=st.lists(st.sampled_from(sorted(ITERABLES)), min_size=1, max_size=2),
    wrapper=st.sampled_from(sorted(WRAPPERS)),
    kind=st.sampled_from(("[{}]", "({})", "{{k: {}}}")),
)
def test_a_fixed_count_of_dummy_inputs_at_module_level_is_made_once(
    iterables: list[str], wrapper: str, kind: str
) -> None:
    fors = " ".join(f"for v{i} in {it}" for i, it in enumerate(iterables))
    value = kind.format(f"torch.randn(1, 3, 8, 8).to(device) {fors}")
    lines = ["import torch", "", 'device = torch.device("cuda")']
    if wrapper:
        lines += [wrapper, f"    data = {value}"]
    else:
        lines += [f"data = {value}"]
    source = "\n".join(lines) + "\n"
    once = WRAPPERS[wrapper] and all(ITERABLES[it] for it in iterables)
    found = {
        f.code for f in check_text(source, "m.py", ruleset_for(["TP106", "TP905"], None)).findings
    }
    assert found == ({"TP905"} if once else {"TP106"}), source
