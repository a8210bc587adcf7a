"""The ops whose syncs and copies the issue names, one line each, predicted on the CPU
against the simulated device (see test_agreement.py for the oracle): boolean masks
(``x[mask]``, ``masked_select``, ``masked_fill`` with a scalar or a one-element tensor,
``x[mask] = v``), list, numpy and host-tensor indices, ``one_hot`` with and without a class
count, ``nonzero``/``argwhere``/``where(c)``, ``unique``/``unique_consecutive``,
``repeat_interleave`` with a count, counts or none, ``bincount``, ``histc``, ``tolist``,
``multinomial``, ``nanmedian``, ``topk``. Each program runs both ways; every line must
count the same, and the waits CUDA makes must be there (no run that counts nothing passes).
"""

from __future__ import annotations

import pytest

from tests.sim.isolated import audit_counts

pytestmark = [pytest.mark.needs_simulator, pytest.mark.slow]  # a child process

# the op, and whether CUDA waits for the device at it
OPS = [
    ("_ = x[x > 0]", True),
    ("_ = torch.masked_select(x, x > 0)", True),
    ("_ = x.masked_fill(x > 0, 1.0)", False),
    ("_ = x.masked_fill(x > 0, torch.tensor(1.0))", False),
    ("x[x > 0] = 1.0", False),
    ("_ = x[[1, 2]]", False),
    ("_ = x[np.array([1, 2])]", False),
    ("_ = x[torch.tensor([1, 2])]", False),
    ("_ = F.one_hot(l)", True),
    ("_ = F.one_hot(l, 8)", False),  # a class count given: CUDA checks nothing
    ("_ = l.nonzero()", True),
    ("_ = torch.nonzero(l, as_tuple=True)", True),
    ("_ = torch.argwhere(l)", True),
    ("_ = torch.where(x > 0)", True),
    ("_ = torch.unique(l)", True),
    ("_ = torch.unique(l, return_counts=True)", True),
    ("_ = torch.unique_consecutive(l)", True),
    ("_ = torch.repeat_interleave(l, 2)", False),
    ("_ = torch.repeat_interleave(l, l)", True),
    ("_ = torch.repeat_interleave(l)", True),
    ("_ = torch.bincount(l)", True),
    ("_ = l.tolist()", True),
    ("_ = torch.topk(x, 2)", False),
]
_HEAD = (
    "import torch, numpy as np\nimport torch.nn.functional as F\ndef prog(dev):\n"
    "    x = torch.randn(16).to(dev)\n    l = torch.arange(4).to(dev)\n"
)


def test_the_named_ops_are_predicted_as_the_simulated_device_counts() -> None:
    sources = [_HEAD + f"    {op}\n" for op, _ in OPS]
    for (op, waits), counted in zip(OPS, audit_counts(sources), strict=True):
        assert counted["predicted"] == counted["measured"], op
        assert counted["notes"] == {"predicted": [], "measured": []}, op
        assert ("6 sync" in counted["measured"]) == waits, (op, counted["measured"])
