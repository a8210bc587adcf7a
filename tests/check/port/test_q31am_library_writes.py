"""A numpy "read" that writes its array, and another sharing tensor handed on: the array's tensor.

Class: n31al's library reads (``_shared_memory._reader``): a numpy function that makes a new
value counts as a read of an array a ``torch.from_numpy`` tensor shares, so the tensor is
moved. Broken by q31am, each "0 left" and the original's values lost on ``sim`` on ce9723d1
(the near form that holds: the same call without the write, ``np.exp(a)``, ``np.median(a)``,
``a.astype(np.float32)``, moved and right):

- a positional ``out`` (``np.exp(a, a)``, ``np.clip(a, 0.5, 1.0, a)``, ``np.round(a, 0, a)``,
  ``np.cumsum(a, 1, None, a)``): a call with as many positional arguments as its ``out``'s
  place is no read now (``NUMPY_OUT_AT``);
- ``np.median(a, overwrite_input=True)`` (``np.percentile``, the positional spelling), which
  partly sorts ``a`` in place: the keyword is refused as ``out=`` is;
- ``a.astype(np.float32, copy=False)`` written: the array itself where its dtype matches.

Said since the lead's change of 2026-12-02 (a strict xfail until then, counted a read as
``model(torch.from_numpy(a))`` is, the near form that holds, n31al's test): another sharing
tensor of the array that no name holds, handed to the file's own function that writes it in
place (``bump(torch.from_numpy(a))``), kept in a list and written (``us =
[torch.from_numpy(a)]``), or turned back into an array that is written
(``torch.from_numpy(a).numpy()``).

The oracle (``no_cuda_sim``, apart from the port): the original on the CPU, the port on the
simulated accelerator: a finding left, or the original's values with every output on ``sim:0``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from tests.check.port.no_cuda_sim import placed_or_said

_HEAD = (
    "import numpy as np\nimport torch\nimport torch.nn as nn\n\nmodel = nn.Linear(3, 2)\n\n"
    "def bump(x):\n    x.mul_(2.0)\n\n"
)


def _program(use: str) -> str:
    return (
        _HEAD
        + "a = np.array([[3.0, 0.5, 0.75], [1.0, 2.0, 0.25]], dtype=np.float32)\n"
        + f"t = torch.from_numpy(a)\n{use}\nOUT.append(model(t))\n"
    )


WRITES = (  # q31am, silent on ce9723d1: said now (TP503)
    "np.exp(a, a)",
    "np.clip(a, 0.5, 1.0, a)",
    "np.round(a, 0, a)",
    "np.cumsum(a, 1, None, a)",
    "print(np.median(a, overwrite_input=True))",
    "print(np.percentile(a, 50, overwrite_input=True))",
    "print(np.median(a, None, None, True))",
    "b = a.astype(np.float32, copy=False)\nb[0, 0] = 9.0",
)
READS = (  # the near forms: moved, the original's values
    "print(np.exp(a), np.clip(a, 0.5, 1.0), np.median(a), np.mean(a, 0), np.max(a, 0))",
    "b = a.astype(np.float32)\nb[0, 0] = 9.0",
)
HANDED_ON = (  # left by q31am (0 left, the original's values lost): said now
    "bump(torch.from_numpy(a))",
    "us = [torch.from_numpy(a)]\nus[0].mul_(2.0)",
    "v = torch.from_numpy(a).numpy()\nv[0, 0] = 5.0",
)


def test_a_numpy_call_that_writes_its_array_is_said_and_a_read_is_moved() -> None:
    """One child: each write said (or stops with its finding), each read moved and right."""
    placed_or_said([_program(u) for u in WRITES + READS])


@pytest.mark.parametrize(
    "use", HANDED_ON, ids=["handed to a writer", "in a list", "numpy() written"]
)
@pytest.mark.slow  # (a child per case)
def test_another_sharing_tensor_written_where_it_is_handed_on(use: str) -> None:
    placed_or_said([_program(use)])
