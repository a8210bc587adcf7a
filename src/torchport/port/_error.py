"""The error raised when a redirected script calls CUDA API that has no meaning on its device.

It lives in the one exception tree, :mod:`torchport.errors`; this module keeps the
port pillar's import path.
"""

from __future__ import annotations

from torchport.errors import RedirectError

__all__ = ["RedirectError"]
