"""port: run a CUDA-only script on any device, and hand many-GPU runs to torchrun."""

from __future__ import annotations

from torchport.port._error import RedirectError
from torchport.port._redirect import redirect

__all__ = ["RedirectError", "redirect"]
