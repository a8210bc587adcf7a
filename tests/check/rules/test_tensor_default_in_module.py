"""TP504: a tensor made as the default of a module method's parameter stays on the CPU.

Recall round 5c (PatchmatchNet's ``forward(..., view_weights: torch.Tensor =
torch.empty(0))``): the default is made once, on the CPU, when the class is defined;
``model.to(device)`` never moves it, and a call that leaves the argument out meets
device tensors with it. The oracle is written from what Python and torch do, apart from
the rule: a default is evaluated at ``def`` time (so it is the class's, not the
call's), a 0-dim tensor mixes with any device, ``device=`` places it, a class that is
no ``nn.Module`` is never moved by ``.to``, and ``__init__``'s defaults are consumed
while the module is built (moved with it when kept as a parameter or buffer).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (default as written, whether it is a tensor of at least one dimension on the CPU)
DEFAULTS = (
    ("torch.empty(0)", True),
    ("torch.zeros(3)", True),
    ("torch.ones(2, 2)", True),
    ("torch.arange(4)", True),
    ("torch.tensor([1.0, 2.0])", True),
    ("torch.empty(0, device='cuda')", False),  # placed: the author chose its device
    ("torch.tensor(1.0)", False),  # 0-dim: mixes with any device
    ("None", False),
)
METHODS = ("forward", "step", "__init__")
BASES = (("nn.Module", True), ("object", False))


def _program(default: str, method: str, base: str, keyword_only: bool) -> tuple[str, int]:
    star = "*, " if keyword_only else ""
    init = "        super().__init__()\n" if method == "__init__" else ""
    source = (
        "import torch\nfrom torch import nn\n\n\n"
        f"class Block({base}):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(2, 2, 1)\n\n"
    )
    if method == "__init__":  # the method under test replaces the plain __init__ above
        source = f"import torch\nfrom torch import nn\n\n\nclass Block({base}):\n"
    source += (
        f"    def {method}(\n"
        "        self,\n"
        "        x: torch.Tensor = None,\n"
        f"        {star}weights: torch.Tensor = {default},\n"
        "    ):\n"
        f"{init}"
        "        return x * weights\n"
    )
    line = source.splitlines().index(f"        {star}weights: torch.Tensor = {default},") + 1
    return source, line


@settings(max_examples=80, deadline=None)
@given(
    default=st.sampled_from(DEFAULTS),
    method=st.sampled_from(METHODS),
    base=st.sampled_from(BASES),
    keyword_only=st.booleans(),
)
def test_a_cpu_tensor_default_of_a_module_method_is_reported(
    default: tuple[str, bool], method: str, base: tuple[str, bool], keyword_only: bool
) -> None:
    text, on_cpu = default
    written, is_module = base
    source, line = _program(text, method, written, keyword_only)
    expected = on_cpu and is_module and method != "__init__"
    found = [f for f in check_source(source, select=["TP504"]) if f.line == line]
    assert bool(found) == expected, (source, found)
    if found:
        assert found[0].fix is None  # the default is the signature's: no edit is safe
        assert "default" in found[0].message
