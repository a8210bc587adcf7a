"""sim: a simulated accelerator, ``sim:0``: real values and CUDA's device rules, on any machine.

``simulate_accelerator()`` installs it for the process; afterwards PyTorch reports it
as the accelerator, so unchanged code (``pick_device()``, ``model.to(device)``) runs on
it, and every mixed-device op, ``.numpy()`` of a device tensor, early read of an
asynchronous copy and out-of-memory fails as it would on a GPU. Users reach it as
:func:`torchport.testing.simulate_accelerator`, ``TORCHPORT_DEVICE=sim`` and
``torchport run --device sim``.
"""

from __future__ import annotations

from torchport.sim._install import installed, is_simulated, simulate_accelerator, supported
from torchport.sim._ledger import LEDGER

__all__ = ["installed", "is_simulated", "simulate_accelerator", "storages_placed", "supported"]


def storages_placed() -> int:
    """How many tensor storages the simulated accelerator has held in this process, ever:
    0 when the program never put a tensor there (whatever it freed or reset since)."""
    return LEDGER.storages_charged()
