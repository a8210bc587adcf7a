"""Whether a module is torch code at all: it binds a name from torch somewhere.

A module that imports nothing from torch (a PaddlePaddle program's
``use_cuda=False``, a gym client's ``observation.tolist()``) holds no torch
values of its own: rules whose pattern is as common outside torch as inside it
(a CUDA flag parameter, a ``.tolist()`` in a loop) ask this first. A name that
the project view resolves to torch (``from .compat import torch``) counts as
torch's, as an ``import torch`` inside ``try``, a function or a class does.
"""

from __future__ import annotations

import weakref

from torchport.check._context import Context
from torchport.check.semantic import TorchImport

__all__ = ["binds_torch"]

_FOUND: weakref.WeakKeyDictionary[Context, bool] = weakref.WeakKeyDictionary()


def binds_torch(ctx: Context) -> bool:
    """Whether the module imports torch, or binds any name resolved to torch or its parts."""
    found = _FOUND.get(ctx)
    if found is None:
        scopes = ctx.scopes
        found = scopes.torch_import()[0] is not TorchImport.NONE or any(
            b.qualified is not None and (b.qualified == "torch" or b.qualified.startswith("torch."))
            for scope in scopes.scopes.values()
            for bound in scope.bindings.values()
            for b in bound
        )
        _FOUND[ctx] = found
    return found
