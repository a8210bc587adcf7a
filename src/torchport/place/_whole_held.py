"""A batch of builtin containers holding objects with their own ``.to``, moved without the walker.

``{"graph": batch, "y": labels}``, ``[data, mask]``: dicts, lists and tuples (of
exactly those types, at any depth) whose leaves are tensors, values and objects
with their own ``.to`` (PyG ``Data``/``Batch``, ``TensorDict``...). Each such object
is one leaf of the container's walk and moves by the whole-object path
(``place/_whole.py``: its class's plan, every check of a top-level move, one checked
move of an object at a time), the container's tensors by the copy engine, and the
containers are rebuilt around both. So an object costs in a container what it costs
alone, and gives the same result.

The walker's guarantees hold because this path is taken only when nothing is held
twice across the parts: an object met twice is moved once and comes back as one
result; but a tensor, container or object held both inside an object and elsewhere
in the batch (``{"obj": data, "x": data.x}``), in two objects, or a container or
tensor held twice by the containers, sends the batch to the walker (``NOT_FLAT``),
which keeps each one object (it deep-copies such an object around the batch's moved
tensors). Whether anything overlaps is decided by ids the whole-object read gives
(its tensors and the nodes it opened). Any other type in the containers (a
dataclass, a namedtuple, an ``OrderedDict``, a type not classified yet) also goes
to the walker.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from torchport import hardware
from torchport.place._direct import NOT_FLAT
from torchport.place._node_codes import CODES as _CODES
from torchport.place._node_codes import DICT_CODE as _DICT
from torchport.place._node_codes import LIST_CODE as _LIST
from torchport.place._node_codes import MOVES_CODE as _MOVES
from torchport.place._node_codes import MOVES_STATE_CODE as _MOVES_STATE
from torchport.place._node_codes import TENSOR_CODE as _TENSOR
from torchport.place._node_codes import TUPLE_CODE as _TUPLE
from torchport.place._node_codes import VALUE_CODE as _VALUE
from torchport.place._node_codes import code_of as _code_of
from torchport.place._whole import Inside, move_whole, whole_tensors

__all__ = ["move_held"]

# Containers nested deeper than this go to the walker (which names a cycle or a depth).
_MAX_DEPTH = 32


class _Found:
    """What the read of a batch found: its tensors, its objects with a ``.to``, its containers."""

    __slots__ = ("containers", "movers", "tensors")

    def __init__(self) -> None:
        self.tensors: list[torch.Tensor] = []
        self.movers: dict[int, Any] = {}  # by id: each object once
        self.containers: set[int] = set()


def move_held(obj: Any, target: torch.device, non_blocking: bool | None, pack: bool | None) -> Any:
    """Move ``obj`` (a builtin dict, list or tuple) as the walker would; or ``NOT_FLAT``.

    ``NOT_FLAT`` when it holds no object with its own ``.to``, or anything this path
    leaves to the walker (see the module). Synchronizes as the copy engine does for
    the container's tensors (to the CPU or MPS: one wait before returning) and as
    each object's ``.to`` does.

    Raises:
        UnsupportedBatchError: An object's move was refused (``place/_whole.py``); the
            message names its path in ``obj``.
    """
    found = _Found()
    if not _read(obj, found, 0) or not found.movers:
        return NOT_FLAT
    tensors = found.tensors
    ids = set(map(id, tensors))
    if len(ids) != len(tensors):
        return NOT_FLAT  # a tensor held twice: the walker copies it once
    containers = found.containers
    movers = list(found.movers.values())
    late = len(movers) > 1  # one object's .to runs before another moves: read again then
    insides: list[Inside] = []
    for mover in movers:
        inside = whole_tensors(mover, lay=not late)
        if inside is None:
            return NOT_FLAT
        opened = inside.opened
        # Held both inside it and elsewhere (a tensor, a container, or another object):
        # the walker keeps each one object.
        if not ids.isdisjoint(inside.ids) or not containers.isdisjoint(opened):
            return NOT_FLAT
        ids.update(inside.ids)  # (so the next object is checked against this one too)
        containers.update(opened)
        insides.append(inside)
    new: dict[int, Any] = {}
    if tensors:
        plan = hardware.plan_copy(tensors, target, pack=pack, distinct=True)
        if not plan.noop:
            moved = plan.run(non_blocking=non_blocking, measure=False).tensors
            new.update(zip(map(id, tensors), moved, strict=True))
    for mover, inside in zip(movers, insides, strict=True):
        new[id(mover)] = move_whole(mover, inside, target, non_blocking, obj)
    return _rebuilt(obj, new)


def _read(x: Any, found: _Found, depth: int) -> bool:
    """Read the container ``x`` into ``found``; False when the walker must move the batch."""
    if depth > _MAX_DEPTH:
        return False
    key = id(x)
    if key in found.containers:
        return False  # held twice (or a cycle): the walker keeps it one
    found.containers.add(key)
    codes = _CODES.get
    add = found.tensors.append
    for item in x.values() if type(x) is dict else x:
        cls = type(item)
        code = codes(cls)
        if code is None:
            code = _code_of(cls)
            if code is None:
                return False  # not classified yet, a value to look into, a leaf .to
        if code is _TENSOR:
            add(item)
        elif code is _VALUE:
            continue
        elif code is _MOVES or code is _MOVES_STATE:
            found.movers[id(item)] = item
        elif code is _DICT or code is _LIST or code is _TUPLE:
            if not _read(item, found, depth + 1):
                return False
        else:
            return False  # an object the walker walks (a dataclass...): the walker
    return True


def _rebuilt(x: Any, new: dict[int, Any]) -> Any:
    """``x`` with each tensor and object replaced by ``new[id]``; containers made anew.

    A tuple in which nothing changed is the very tuple (immutable; the walker's
    sharing promise then holds of it trivially).
    """
    cls = type(x)
    if cls is dict:
        return {k: _rebuilt(v, new) for k, v in x.items()}
    if cls is list:
        return [_rebuilt(v, new) for v in x]
    if cls is tuple:
        items = tuple(_rebuilt(v, new) for v in x)
        return x if all(map(operator.is_, items, x)) else items
    return new.get(id(x), x)  # (a value's id is no tensor's: both are alive)
