"""port: run a CUDA-only script on any device, and hand many-GPU runs to torchrun.

``redirect`` is resolved lazily (PEP 562): the ``torchport run --nproc`` launcher
imports this package's torchrun hand-off and never needs torch itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torchport.port._error import RedirectError

if TYPE_CHECKING:
    from torchport.port._redirect import redirect

__all__ = ["RedirectError", "redirect"]


def __getattr__(name: str) -> Any:
    if name != "redirect":
        raise AttributeError(f"module 'torchport.port' has no attribute {name!r}")
    from torchport.port._redirect import redirect

    globals()["redirect"] = redirect  # later lookups skip this function
    return redirect


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
