"""TP510 and the CPU-tensor-in-a-module rule never write ``next(self.parameters()).device``
where the module may have no parameters yet (issue 34: unsafe fixes stay runnable).

Found on sentence-transformers and pykeen: ``self.auto_model = AutoModel.from_pretrained(...)`` in
``_load_model``, which ``__init__`` calls, became ``....to(next(self.parameters()).device)``:
the module's first parameters, so ``next`` raised ``StopIteration`` when it was built;
pykeen's ``Combination.output_shape`` runs a module that has no weights at all.
Oracle: the fixed module is built and run on the CPU, as the original is.
"""

from __future__ import annotations

import pytest
import torch

from torchport.check import fix_source

_HEAD = "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
_PROGRAMS = {
    "loader called by __init__": _HEAD + "    def __init__(self):\n        super().__init__()\n"
    "        self._load()\n\n    def _load(self):\n        self.inner = nn.Linear(2, 2)\n"
    "        self.register_buffer('scale', torch.ones(2))\n\n"
    "    def forward(self, x):\n        return self.inner(x) * self.scale\n",
    "registered outside __init__": _HEAD + "    def __init__(self):\n        super().__init__()\n"
    "        self.inner = None\n\n    def build(self):\n        self.inner = nn.Linear(2, 2)\n"
    "        return self\n\n    def forward(self, x):\n        return self.inner(x)\n",
    # pykeen's `Combination`: a module without weights runs itself on empty tensors
    "no weights, abstract, a mixin": "import abc\n\n\nclass ReprMixin:\n    pass\n\n\n"
    + _HEAD.replace("(nn.Module)", "(nn.Module, ReprMixin, abc.ABC)")
    + "    def forward(self, x):\n        return torch.cat([x, x], -1)\n\n"
    "    def output_shape(self, shape):\n        return self(torch.empty(size=shape)).shape\n",
    "no weights at all": _HEAD
    + "    def forward(self, x):\n        return torch.cat([x, x], -1)\n\n"
    "    def output_shape(self, shape):\n        return self(torch.empty(size=shape)).shape\n",
}
_RUN = "torch.manual_seed(0)\nnet = Net()\nif hasattr(net, 'build'):\n    net = net.build()\n"


@pytest.mark.parametrize("kind", sorted(_PROGRAMS))
def test_fixed_module_is_still_built(kind: str) -> None:
    source = _PROGRAMS[kind]
    fixed = fix_source(source, select=["ALL"], unsafe=True)
    results = []
    for text in (source, fixed):
        namespace: dict[str, object] = {}
        run = (
            "OUT = net(torch.ones(1, 2)), net.output_shape((1, 2))\n"
            if "output_shape" in text
            else "OUT = net(torch.ones(1, 2)), None\n"
        )
        exec(compile(text + _RUN + run, "<net>", "exec"), namespace)
        results.append(namespace["OUT"])
    assert torch.equal(results[0][0], results[1][0]), fixed
    assert results[0][1] == results[1][1], fixed
