"""TP101 leaves CUDA a test sets up on purpose inside ``with pytest.warns(...)``.

``with pytest.warns(UserWarning, match="on the GPU"): model.device = torch.device("cuda")``
pretends to be on the GPU to trigger a warning: on another device the warning does not
come and the test fails, so rewriting the CUDA breaks the test. The block kinds, the CUDA
statement and whether it sits in a function of its own inside the block are drawn at
random; the oracle: quiet exactly when a warning-expecting block (``pytest.warns``,
``self.assertWarns``/``assertWarnsRegex``/``assertLogs``, ``pytest.deprecated_call``)
encloses the statement in the same function; any other block (``torch.no_grad()``,
``open(p)``, ``warnings.catch_warnings()``) leaves it reported.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

BLOCKS = {  # a `with` item, and whether it expects a warning
    'pytest.warns(UserWarning, match="GPU")': True,
    "pytest.warns(UserWarning)": True,
    "self.assertWarns(UserWarning)": True,
    'self.assertWarnsRegex(UserWarning, "cuda")': True,
    "self.assertLogs(level='WARNING')": True,
    "pytest.deprecated_call()": True,
    "torch.no_grad()": False,
    "open(path)": False,
    "warnings.catch_warnings()": False,
}
CUDA = (
    'model.device = torch.device("cuda")',
    "x = x.cuda()",
    'x = x.to("cuda")',
    'y = torch.zeros(3, device="cuda")',
)


@given(
    outer=st.lists(st.sampled_from(sorted(BLOCKS)), min_size=1, max_size=2),
    statement=st.sampled_from(CUDA),
    own_function=st.booleans(),
)
def test_cuda_set_up_inside_an_expected_warning_is_left(
    outer: list[str], statement: str, own_function: bool
) -> None:
    lines, indent = ["import pytest", "import torch", "", "def test_it(self, x, model):"], 1
    for block in outer:
        lines.append("    " * indent + f"with {block}:")
        indent += 1
    if own_function:
        lines.append("    " * indent + "def helper(x):")
        indent += 1
    lines.append("    " * indent + statement)
    source = "\n".join(lines) + "\n"
    quiet = not own_function and any(BLOCKS[b] for b in outer)
    found = check_text(source, "m.py", ruleset_for(["TP101"], None)).findings
    assert bool(found) != quiet, source
