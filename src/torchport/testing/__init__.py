"""What torchport gives its users' test suites.

* :func:`simulate_accelerator`: a CPU-backed accelerator, ``sim:0``, with real values
  and CUDA's device rules, so device code is tested on a machine with no GPU.
* The pytest plugin (loaded by pytest itself, entry point ``pytest11``): a ``device``
  fixture and a ``devices`` marker; ``"sim"`` is one of the devices it knows.

pytest imports this package in every run of every project in the environment, so
it imports torch only when :func:`simulate_accelerator` is first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchport._lazy import lazy_exports
from torchport.testing._plugin import default_devices, missing_reason

if TYPE_CHECKING:
    from torchport.sim import simulate_accelerator

__all__ = ["default_devices", "missing_reason", "simulate_accelerator"]


__getattr__, __dir__ = lazy_exports(globals(), {"simulate_accelerator": "torchport.sim"})
