"""How long the walker's optree registrations last: for good, or for one walk.

A class that lasts (``place/_lasting.py``) is registered in the walker's namespace
once and stays registered. A class made at run time is registered for the walk
that needed it: the outermost walk of a thread (:func:`open_walk`) holds every
such registration made while it runs, nested walks included, and the last walk
holding one drops it (:func:`close_walk`). optree's structure of a flattened
batch keeps what it needs to rebuild the batch, so dropping the registration
after the flatten is safe; threads holding the same class count as one each.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import optree

from torchport.place._containers import NAMESPACE, register_recipe
from torchport.place._lasting import forget_with, lasting

__all__ = ["close_walk", "open_walk", "register"]

# Per thread: `held`, the classes registered for the outermost walk running (None: no walk).
_LOCAL = threading.local()
# Registrations of classes that do not last, by how many walks hold each.
_HELD: dict[type, int] = {}
_LOCK = threading.RLock()


def open_walk() -> list[type] | None:
    """Start this thread's outermost walk: the list its registrations go in; None when nested."""
    if getattr(_LOCAL, "held", None) is not None:
        return None
    held: list[type] = []
    _LOCAL.held = held
    return held


def close_walk(held: list[type]) -> None:
    """End the outermost walk: drop the registrations it held that no other walk holds."""
    _LOCAL.held = None
    if not held:
        return
    with _LOCK:
        for cls in held:
            count = _HELD.get(cls, 0) - 1
            if count > 0:
                _HELD[cls] = count
                continue
            _HELD.pop(cls, None)
            with contextlib.suppress(ValueError):  # not registered (any more)
                optree.unregister_pytree_node(cls, namespace=NAMESPACE)


def _unregister(cls: type) -> None:
    """Drop the lasting registration of ``cls``, which turned out not to last (``_lasting``)."""
    with _LOCK:
        if cls not in _HELD:  # (a walk holding it drops it at its end)
            with contextlib.suppress(ValueError):  # not registered
                optree.unregister_pytree_node(cls, namespace=NAMESPACE)


forget_with(call=_unregister)


def register(cls: type, recipe: Any) -> bool:
    """Register ``cls`` with ``recipe``; say whether it is a node now.

    One that does not last is held for the current walk (see the module).
    """
    with _LOCK:
        if not register_recipe(cls, recipe, NAMESPACE):
            return False
        if not lasting(cls):
            held: list[type] | None = getattr(_LOCAL, "held", None)
            if held is None:  # pragma: no cover - registrations happen inside a walk
                held = _LOCAL.held = []
            _HELD[cls] = _HELD.get(cls, 0) + 1
            held.append(cls)
    return True
