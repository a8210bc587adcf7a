"""The check that an object's own ``.to`` moved something when something had to move.

An object with its own ``.to`` is moved by that ``.to`` on a shallow copy
(``place/_mover_recipe.py``, ``place/_whole.py``). The input's tensors that ``.to``
leaves where they are stay there (PyG's ``_slice_dict``/``_inc_dict``, and whatever its
``apply`` does not reach), so "every tensor on the target" cannot be asked of the
result. What is asked (:func:`check_moved`): when none of the input's tensors was on
the target, the result holds at least one tensor the ``.to`` made (moved), and at
least one of the input's tensors is no longer reachable from it (replaced by its
copy). A ``.to`` that ignores its device (returns ``self``, an unmoved copy, or such
a copy with a new tensor made on the device, a mask or a cache) is so refused
instead of its host tensors handed back as moved.

Not caught, on purpose: such a ``.to`` on an object some of whose tensors are on the
target already. That result cannot be told from a right ``.to`` on an object whose
only tensors off the target are the ones it keeps there (a PyG ``Batch`` moved again,
or collated on the device: only its bookkeeping is on the CPU, and its ``.to`` gives
every tensor back as it was); refusing it would refuse those. Nor a leaf with a ``.to``
and no state the walker reads (its tensors are not known).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import torch

from torchport.place._copying import RebuildRefused
from torchport.place._locate import find_path, find_state_path
from torchport.place._objects import on_device

__all__ = ["check_moved", "where_in"]


def where_in(root: Any, name: str, t: torch.Tensor) -> str:
    """Where ``t`` sits inside ``root`` (a path from ``name``), for a message."""
    wanted = functools.partial(operator.is_, t)
    return find_state_path(root, name, wanted) or find_path(root, name, wanted) or "inside it"


def check_moved(
    obj: Any,
    tensors: list[torch.Tensor],
    target: torch.device,
    moved: bool,
    kept: Callable[[], bool],
) -> None:
    """Raise if ``obj``'s ``.to`` moved none of its ``tensors`` while none was on ``target``.

    ``moved``: the result holds a tensor that is not one of ``tensors`` (the input's):
    the ``.to`` made something (that each such tensor is on ``target`` is checked
    apart). ``kept()``: every one of ``tensors`` is still reachable from the result
    (none was replaced by a moved copy); asked only when ``moved`` and none of
    ``tensors`` is on ``target``. See the module for what this does not catch.

    Raises:
        RebuildRefused: It moved none of them; the message names one.
    """
    if not tensors or any(on_device(t, target) for t in tensors):
        return
    if moved and not kept():
        return
    t = tensors[0]
    made = (
        "it made new tensor(s) but returned every one of the input's where it was"
        if moved
        else "it returned them where they were"
    )
    raise RebuildRefused(
        f"its .to({str(target)!r}) moved none of the input's {len(tensors)} tensor(s), "
        f"none of which is on {target} (one on {t.device} at {where_in(obj, 'input', t)}): "
        f"{made} (a .to that ignores its device, returns self "
        "or an unmoved copy), and torchport refuses rather than hand them back as "
        "moved (the input is as it was)"
    )
