"""Where an object's own ``.to`` keeps its bookkeeping, and the check that it moved what it had to.

An object with its own ``.to`` is moved by that ``.to`` on a shallow copy
(``place/_mover_recipe.py``, ``place/_whole.py``). The tensors that ``.to`` leaves where
they are stay there (PyG's ``_slice_dict``/``_inc_dict``), so "every tensor on the
target" cannot be asked of its result; what can be asked: a ``.to`` that moved none of
the tensors that had to move (it ignores its device: returns ``self``, an unmoved copy)
is refused (:func:`check_moved`), so that its host tensors are never handed back as
moved. Which tensors had to move: the input's tensors off the target, except those
where the class keeps its bookkeeping, a place being the attribute names on the way to
a tensor (dict keys and indices left out: they differ from batch to batch). The places
are learned from the class's first ``_TRIES`` calls that moved something (where they
left tensors off the target and moved none); PyG's are known before any move (a
``Batch`` collated on the target, or moved again, has only its bookkeeping off it).

Not caught: a class whose first moving calls left tensors at a place it moves on
other calls (that place then counts as bookkeeping when a later call moves nothing);
a leaf with a ``.to`` and no state the walker reads (its tensors are not known).
"""

from __future__ import annotations

import collections
import functools
import operator
from collections.abc import Callable
from typing import Any

import torch

from torchport.place._copying import RebuildRefused, has_state, read_state
from torchport.place._lasting import lasting
from torchport.place._locate import find_path, find_state_path
from torchport.place._objects import VALUE, kind_of_object, on_device

__all__ = ["LEAVES", "check_moved", "where_in"]


def where_in(root: Any, name: str, t: torch.Tensor) -> str:
    """Where ``t`` sits inside ``root`` (a path from ``name``), for a message."""
    wanted = functools.partial(operator.is_, t)
    return find_state_path(root, name, wanted) or find_path(root, name, wanted) or "inside it"


# Per class with its own .to (those that last): where its first _TRIES .to calls that
# moved something left tensors off the target and moved none there (its bookkeeping,
# as PyG's _slice_dict), each place as the attribute names on the way to it (dict keys
# and indices left out: they differ from batch to batch); read when a later .to moves
# nothing. A class enters LEAVES after those calls (each costs a walk of the input);
# until then _LEARNING holds what they found and how many there were.
LEAVES: dict[type, frozenset[tuple[str, ...]]] = {}
_LEARNING: dict[type, tuple[int, frozenset[tuple[str, ...]]]] = {}
_TRIES = 8
# Known before any move: PyTorch Geometric's bookkeeping (see the module), by the last name.
_PYG_LEAVES = frozenset({"_slice_dict", "_inc_dict"})


def check_moved(
    obj: Any,
    result: Any,
    tensors: list[torch.Tensor],
    target: torch.device,
    find: Callable[[list[Any]], list[torch.Tensor]],
    moved: bool,
    reached: list[torch.Tensor] | None = None,
) -> None:
    """Raise if ``obj``'s ``.to`` (which gave ``result``) moved none of those that had to move.

    ``moved``: ``result`` holds a tensor that is not one of ``tensors`` (the input's):
    the ``.to`` moved something (that each such tensor is on ``target`` is
    :func:`check_reached`'s). Otherwise every input tensor off ``target`` must sit
    where the class's ``.to`` leaves its bookkeeping (``LEAVES``): a ``.to`` that
    ignores its device (returns ``self``, an unmoved copy) is refused rather than its
    host tensors handed back as moved. The first ``.to`` calls of a class that move
    something teach ``LEAVES`` (``reached``: what ``result`` holds, found when None).

    Raises:
        RebuildRefused: It moved none of them; the message names one.
    """
    cls = type(obj)
    if moved:
        if cls not in LEAVES and lasting(cls):
            found = find([result]) if reached is None else reached
            tried, learned = _LEARNING.get(cls, (0, frozenset()))
            learned |= _left_places(obj, tensors, found, target)
            if tried + 1 >= _TRIES:
                LEAVES[cls] = learned
            else:
                _LEARNING[cls] = (tried + 1, learned)
        return
    off = [t for t in tensors if not on_device(t, target)]
    known = LEAVES.get(cls) or _LEARNING.get(cls, (0, frozenset()))[1]
    pyg = any(base.__module__.startswith("torch_geometric.") for base in cls.__mro__)
    if off and (known or pyg):
        places = _places(obj)
        off = [
            t
            for t in off
            if places.get(id(t)) not in known
            and not (pyg and places.get(id(t), ("",))[-1:][0] in _PYG_LEAVES)
        ]
    if not off:
        return  # only its bookkeeping was off the target: nothing had to move
    t = off[0]
    raise RebuildRefused(
        f"its .to({str(target)!r}) moved none of the {len(off)} tensor(s) of the input "
        f"that are not on {target} (one on {t.device} at {where_in(obj, 'input', t)}): "
        "it returned them where they were (a .to that ignores its device, returns "
        "self or an unmoved copy), and torchport refuses rather than hand them back "
        "as moved (the input is as it was)"
    )


def _places(obj: Any) -> dict[int, tuple[str, ...]]:
    """Per tensor inside ``obj`` (by id), the attribute names on the way to it (first found).

    Read through attributes (``__dict__`` and slots), dict items, list, tuple, deque
    and set items, each node entered once; state only, as ``find_state_path`` reads.
    """
    places: dict[int, tuple[str, ...]] = {}
    stack: list[tuple[Any, tuple[str, ...]]] = [(obj, ())]
    seen: set[int] = set()
    while stack:
        node, names = stack.pop()
        if isinstance(node, torch.Tensor):
            places.setdefault(id(node), names)
            continue
        if id(node) in seen or isinstance(node, str | bytes):
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            stack.extend((v, names) for v in dict.values(node))
        elif isinstance(node, list | tuple | collections.deque | set | frozenset):
            stack.extend((v, names) for v in node)
        if has_state(type(node)) and kind_of_object(type(node)) != VALUE:
            state = read_state(node)
            pairs = zip(state.names, state.values, strict=True)
            stack.extend((v, (*names, name)) for name, v in pairs)
    return places


def _left_places(
    obj: Any, tensors: list[torch.Tensor], reached: list[torch.Tensor], target: torch.device
) -> frozenset[tuple[str, ...]]:
    """The places in ``obj`` whose ``tensors`` off ``target`` are all still in ``reached``."""
    still = set(map(id, reached))
    places = _places(obj)
    off: dict[tuple[str, ...], bool] = {}
    for t in tensors:
        place = places.get(id(t))
        if place is not None and not on_device(t, target):
            off[place] = off.get(place, True) and id(t) in still
    return frozenset(place for place, left in off.items() if left)
