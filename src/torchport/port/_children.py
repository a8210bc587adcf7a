"""Carry a redirect into the processes a redirected script starts.

* ``fork``: the child is a copy of the parent, patches and function mode included.
* ``spawn`` and ``forkserver`` (``multiprocessing`` and ``torch.multiprocessing.spawn``):
  the child is a fresh interpreter that first unpickles a "preparation data"
  dict from its parent, then re-imports the parent's ``__main__``, then
  unpickles the process object. The parent adds one entry to that dict whose
  unpickling enters the same redirect in the child, for the child's whole life,
  so the main module's top-level code, the target function and everything they
  start are redirected. No ``sitecustomize``, ``.pth`` file or environment
  variable is involved, and nothing outside this run sees a change.

Python children started with ``subprocess`` are not redirected (run them as
``python -m torchport run ...`` instead).
"""

from __future__ import annotations

import multiprocessing.spawn
from collections.abc import Callable
from typing import Any

from torchport.port._cuda_shim import Patch

__all__ = ["child_patches", "enter_in_child"]

_KEY = "torchport_redirect"  # spawn.prepare() ignores keys it does not know


class _InChild:
    """Pickles as the call that enters the redirect in the child that unpickles it."""

    def __init__(self, device: str, count: int) -> None:
        self.device = device
        self.count = count

    def __reduce__(self) -> tuple[Callable[..., None], tuple[str, int]]:
        return enter_in_child, (self.device, self.count)


def enter_in_child(device: str, count: int) -> None:
    """Enter ``redirect(device, device_count=count)`` for the rest of this process.

    Called while a spawned child unpickles its preparation data, before it
    imports the parent's main module. The block is never exited: the process
    ends inside it, as the parent's run does.
    """
    from torchport.port._redirect import redirect

    redirect(device, device_count=count).__enter__()


def child_patches(device: str, count: int) -> list[Patch]:
    """The patch that makes spawned children enter the same redirect."""
    original: Callable[[str], dict[str, Any]] = multiprocessing.spawn.get_preparation_data

    def get_preparation_data(name: str) -> dict[str, Any]:
        data = original(name)
        data[_KEY] = _InChild(device, count)
        return data

    return [(multiprocessing.spawn, "get_preparation_data", get_preparation_data)]
