"""TP118: a tensor made without the device every other tensor of its class is made on.

Recall round 5c (HLR/DomiKnowS's solver): ``torch.ones(1, device=self.current_device)``
and ``torch.zeros(n, device=self.current_device)`` throughout the class, then
``lossTensor = torch.zeros(len(lossList))`` filled with the device losses. The oracle is
written apart from the rule: the class itself says where its tensors live when at
least two other factories in it name the same ``self`` attribute as their device; a
factory with no ``device=`` there is on the CPU; a 0-dim tensor mixes with any device;
a module's method is TP504's.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (factory under test, whether it is a CPU tensor of one dimension or more)
FACTORIES = (
    ("torch.zeros(len(losses))", True),
    ("torch.ones(3, dtype=torch.bool)", True),
    ("torch.arange(n)", True),
    ("torch.zeros(len(losses), device=self.current_device)", False),
    ("torch.zeros(len(losses), out=self.buffer)", False),  # made into a tensor it holds
    ("torch.tensor(0.0)", False),
)
SIBLING = "        t{i} = torch.ones({i} + 1, device=self.{attr}, requires_grad=True)\n"


def _program(factory: str, siblings: int, same_attr: bool, base: str) -> tuple[str, int]:
    source = "import torch\nfrom torch import nn\n\n\n"
    source += f"class Solver({base}):\n    def prepare(self, n):\n"
    for i in range(siblings):
        attr = "current_device" if same_attr or i == 0 else f"other_device_{i}"
        source += SIBLING.format(i=i, attr=attr)
    source += "        return n\n\n    def loss(self, losses, n):\n"
    source += f"        total = {factory}\n"
    source += "        for i, entry in enumerate(losses):\n            total[i] = entry\n"
    source += "        return total\n"
    line = source.splitlines().index(f"        total = {factory}") + 1
    return source, line


@settings(max_examples=80, deadline=None)
@given(
    factory=st.sampled_from(FACTORIES),
    siblings=st.integers(min_value=0, max_value=3),
    same_attr=st.booleans(),
    base=st.sampled_from(("object", "nn.Module")),
)
def test_a_factory_without_its_siblings_device_is_reported(
    factory: tuple[str, bool], siblings: int, same_attr: bool, base: str
) -> None:
    source, line = _program(factory[0], siblings, same_attr, base)
    named = siblings if same_attr else min(siblings, 1)  # siblings naming one attribute
    expected = factory[1] and named >= 2 and base == "object"
    found = [f for f in check_source(source, select=["TP118"]) if f.line == line]
    assert bool(found) == expected, source
    assert len(check_source(source, select=["TP118"])) == int(expected), source
