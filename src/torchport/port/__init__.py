"""Deprecated: the runtime behind ``torchport run`` moved to :mod:`torchport.run`.

``torchport.port.redirect`` and ``torchport.port.RedirectError`` keep working for
one release, with a :class:`DeprecationWarning`; use ``torchport.redirect`` and
``torchport.RedirectError``. ``torchport port`` (the source rewrite) lives in
:mod:`torchport.check.port`.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["RedirectError", "redirect"]

_MOVED = {"redirect": "torchport.redirect", "RedirectError": "torchport.RedirectError"}


def __getattr__(name: str) -> Any:
    new = _MOVED.get(name)
    if new is None:
        raise AttributeError(f"module 'torchport.port' has no attribute {name!r}")
    warnings.warn(
        f"torchport.port.{name} is deprecated and will be removed in torchport 0.3; use {new}",
        DeprecationWarning,
        stacklevel=2,
    )
    import torchport.run

    return getattr(torchport.run, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
