"""A tensor sharing an array's memory, written through a view of the tensor: said, not moved.

The class (``port/_shared_memory``'s invariant): ``t = torch.from_numpy(a)`` is moved only
where no write can be seen through the sharing. Its near form that held on the base: the
tensor written in place by its own name (``t[0, 0] = 9.0``, ``t.mul_(2.0)``), reported
(TP503). The silent form (b31al, 0b4c999a): the tensor written through a name bound to a
view of it (``u = t.view(-1); u[0] = 9.0``, ``row = t[0]; row += 1``, ``u = t.T``,
``torch.flatten(t)``, ``for row in t``, ``t.numpy()``): the port moved ``t`` ("0 left"), the
write no longer reached ``a``, and a later read of ``a`` computed other values (checked on
the simulated accelerator with ``port --verify``'s oracle, the original on the CPU: 8 of 8
view forms silent). Now a name bound to a view of the tensor is the tensor's to the
invariant. A new tensor (``t.sum(0)``, ``t * 2``, ``t.clone()``) written stays placed.

The tensor written where the syntax-only rule did not look (strict xfails until the lead's
change of 2026-12-02): in a function (``def bump(): t[0, 0] = 9.0``), by a callee it is handed
(``bump(t)``, ``torch.nn.init.zeros_(t)``), through a container (``holder = [t]``) or a tuple
unpacking (``u, w = t, 1``): said now (``test_shared_memory_handed_on.py`` for the class).
"""

from __future__ import annotations

import pytest

from torchport.check.port import port_text

_PROGRAM = """import numpy as np
import torch
import torch.nn as nn

a = np.ones((3, 4), dtype=np.float32)
t = torch.from_numpy(a)
{write}
model = nn.Linear(4, 2)
OUT.append(model(t) + float(a.sum()))
"""

VIEW_WRITES = {  # silent on the base: the write seen through `a` on the CPU only
    "view": "u = t.view(-1)\nu[0] = 9.0",
    "reshape": "u = t.reshape(12)\nu[0] = 9.0",
    "a row": "row = t[0]\nrow += 1.0",
    "transposed": "u = t.T\nu[0, 0] = 9.0",
    "unsqueezed, in place": "u = t.unsqueeze(0)\nu.mul_(2.0)",
    "narrowed, filled": "u = t.narrow(0, 0, 1)\nu.fill_(3.0)",
    "torch.flatten": "u = torch.flatten(t)\nu[1] = 4.0",
    "detached": "u = t.detach()\nu[0, 0] = 9.0",
    "a view of a view": "u = t.view(3, 4)\nv = u.T\nv[0, 0] = 9.0",
    "a chunk": "u = t.chunk(3)[0]\nu.zero_()",
    "its array": "n = t.numpy()\nn[0, 0] = 9.0",
    "rows iterated": "for row in t:\n    row += 1.0",
}
NEW_TENSORS = {  # a new tensor written: nothing reaches `a`; placed, nothing left
    "a sum": "u = t.sum(0)\nu[0] = 9.0",
    "a product": "u = t * 2\nu[0, 0] = 9.0",
    "a clone": "u = t.clone()\nu[0, 0] = 9.0",
}
LEFT = {  # silent until 2026-12-02: the write is where the syntax-only rule did not look
    "in a function": "def bump():\n    t[0, 0] = 9.0\n\nbump()",
    "by a callee": "def bump(x):\n    x[0, 0] = 9.0\n\nbump(t)",
    "by torch.nn.init": "torch.nn.init.zeros_(t)",
    "through a list": "holder = [t]\nholder[0][0, 0] = 9.0",
    "unpacked": "u, w = t, 1\nu[0, 0] = 9.0",
}


def _said(write: str) -> bool:
    """The port left the tensor where it is and a TP503 on it (said, not moved)."""
    outcome = port_text(_PROGRAM.format(write=write), "p.py")
    assert not outcome.failures, outcome.failures
    moved = "torch.from_numpy(a).to(" in outcome.source
    return not moved and any(f.code == "TP503" for f in outcome.remaining)


@pytest.mark.parametrize("write", sorted(VIEW_WRITES))
def test_a_write_through_a_view_of_the_tensor_is_said(write: str) -> None:
    assert _said(VIEW_WRITES[write])


@pytest.mark.parametrize("write", sorted(NEW_TENSORS))
def test_a_new_tensor_written_is_placed(write: str) -> None:
    outcome = port_text(_PROGRAM.format(write=NEW_TENSORS[write]), "p.py")
    assert "torch.from_numpy(a).to(" in outcome.source
    assert not outcome.remaining, outcome.remaining


@pytest.mark.parametrize("write", sorted(LEFT))
def test_a_write_elsewhere_is_said(write: str) -> None:
    assert _said(LEFT[write])


@pytest.mark.slow  # one simulated-accelerator child for the table
def test_view_writes_are_placed_or_said_on_sim() -> None:
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said(
        [_PROGRAM.format(write=w) for w in (*VIEW_WRITES.values(), *NEW_TENSORS.values())]
    )
