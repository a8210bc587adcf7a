"""run: what ``torchport run`` does: a CUDA-only script on any device, many GPUs through torchrun.

``redirect`` is resolved lazily (PEP 562): the ``torchport run --nproc`` launcher
imports this package's torchrun hand-off and never needs torch itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchport._lazy import lazy_exports
from torchport.errors import RedirectError
from torchport.run._command import RunOptions, run_command
from torchport.run._launch import Rendezvous

if TYPE_CHECKING:
    from torchport.run._redirect import redirect

__all__ = ["RedirectError", "Rendezvous", "RunOptions", "redirect", "run_command"]


__getattr__, __dir__ = lazy_exports(globals(), {"redirect": "torchport.run._redirect"})
