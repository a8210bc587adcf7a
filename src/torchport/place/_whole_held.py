"""Small batches of builtin containers (own-``.to`` objects inside too), moved without the walker.

``{"graph": batch, "y": labels}``, ``[data, mask]``, ``{"input": {"ids": t}, "y": t}``:
dicts, lists and tuples (of exactly those types, at any depth, holding at most 64 items
in all) whose leaves are tensors, values and objects with their own ``.to`` (PyG
``Data``/``Batch``, ``TensorDict``...). Each such object is one leaf of the container's
walk and moves by the whole-object path (``place/_whole.py``: its class's plan, every
check of a top-level move, one checked move of an object at a time), the container's
tensors as ``to_device`` moves a flat list of them (``Tensor.to``, or the copy engine
where it packs or waits), and the containers are rebuilt around both. So an object
costs in a container about what it costs alone (plus the container's read and
rebuild), and gives the same result; a small nested batch of tensors skips the walker's
flatten, structure and rebuild.

The walker's guarantees hold because this path is taken only when nothing is held
twice across the parts: an object met twice is moved once and comes back as one
result; but a tensor, container or object held both inside an object and elsewhere
in the batch (``{"obj": data, "x": data.x}``), in two objects, or a container or
tensor held twice by the containers, sends the batch to the walker (``NOT_FLAT``),
which keeps each one object (it deep-copies such an object around the batch's moved
tensors). Whether anything overlaps is decided by ids the whole-object read gives
(its tensors and the nodes it opened), and, where the container holds a tuple or
there are two objects, by the ids of the tuples the object's nodes hold (a tuple of
values shows in nothing else; the empty tuple is a value, as in the walker). Any
other type in the containers (a dataclass, a namedtuple, an ``OrderedDict``, a type
not classified yet) also goes to the walker. The containers are rebuilt from their
items as read (one C-level copy of each), so a container changed meanwhile (another
thread, an object's ``.to``) gives the batch as read, as the walker's flatten does.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from torchport import hardware
from torchport.place._direct import NOT_FLAT, move_few
from torchport.place._leaf_kinds import PLAIN_TENSOR_TYPES
from torchport.place._node_codes import CODES as _CODES
from torchport.place._node_codes import DICT_CODE as _DICT
from torchport.place._node_codes import LIST_CODE as _LIST
from torchport.place._node_codes import MOVES_CODE as _MOVES
from torchport.place._node_codes import MOVES_STATE_CODE as _MOVES_STATE
from torchport.place._node_codes import TENSOR_CODE as _TENSOR
from torchport.place._node_codes import TUPLE_CODE as _TUPLE
from torchport.place._node_codes import VALUE_CODE as _VALUE
from torchport.place._node_codes import code_of as _code_of
from torchport.place._node_codes import node_values as _values
from torchport.place._whole import Inside, move_whole, whole_tensors

__all__ = ["move_held"]

_ONLY_TENSORS = PLAIN_TENSOR_TYPES.issuperset
_PLAIN = torch.Tensor
_CONTAINERS = (dict, list, tuple)  # (exact types: subclasses never reach the rebuild)

# Batches whose containers hold more items than this go to the walker: its C-speed
# flatten wins there, and a large batch without any object is not read twice (this also
# bounds how deep the read recurses).
_MAX_ITEMS = 64
_first = operator.itemgetter(0)
_second = operator.itemgetter(1)


def move_held(obj: Any, target: torch.device, non_blocking: bool | None, pack: bool | None) -> Any:
    """Move ``obj`` (a builtin dict, list or tuple) as the walker would; or ``NOT_FLAT``.

    ``NOT_FLAT`` when it holds anything this path leaves to the walker (see the module).
    Synchronizes as the copy engine does for the container's tensors (to the CPU or
    MPS: one wait before returning) and as each object's ``.to`` does.

    Raises:
        UnsupportedBatchError: An object's move was refused (``place/_whole.py``); the
            message names its path in ``obj``.
    """
    if type(obj) is dict and len(obj) == 2:
        paired = _pair(obj, target, non_blocking, pack)
        if paired is not NOT_FLAT:
            return paired
    tensors: list[torch.Tensor] = []
    movers: dict[int, Any] = {}  # by id: each object once
    containers: set[int] = set()
    parents: set[int] = set()  # the containers that hold a container
    read: dict[int, Any] = {}  # by list/dict id: its items as read (rebuilt from these)
    counts = [_MAX_ITEMS, 0]  # items left to read; tuples met under the top
    try:
        nested = _read(obj, tensors, movers, containers, parents, counts, read)
    except RuntimeError:  # changed while read (another thread): the walker reports it
        return NOT_FLAT
    if nested is None:
        return NOT_FLAT
    ids = set(map(id, tensors))
    if len(ids) != len(tensors):
        return NOT_FLAT  # a tensor held twice: the walker copies it once
    late = len(movers) > 1  # one object's .to runs before another moves: read again then
    insides: list[tuple[Any, Inside]] = []
    for mover in movers.values():
        inside = whole_tensors(mover, lay=not late)
        if inside is None:
            return NOT_FLAT
        opened = inside.opened
        # Held both inside it and elsewhere (a tensor, a container, or another object):
        # the walker keeps each one object.
        if not ids.isdisjoint(inside.ids) or not containers.isdisjoint(opened):
            return NOT_FLAT
        if late or counts[1]:
            # A tuple of values held inside it and elsewhere: no tensor or node of it
            # tells (a .to rebuilding it would split it in two): the walker keeps it one.
            tuples = _tuples_in(inside.nodes)
            if not containers.isdisjoint(tuples):
                return NOT_FLAT
            if late:
                containers.update(tuples)
        if late:  # (so the next object is checked against this one too)
            ids.update(inside.ids)
            containers.update(opened)
        insides.append((mover, inside))
    new: dict[int, Any] = {}
    if tensors:
        # A few plain tensors by Tensor.to, as to_device moves a flat list of them; else
        # (packing, a wait to end with, subclasses) the copy engine, as the walker does.
        moved: Any = move_few(tensors, list, target, non_blocking, pack)
        if moved is NOT_FLAT:
            plan = hardware.plan_copy(tensors, target, pack=pack, distinct=True)
            moved = plan.run(non_blocking=non_blocking, measure=False).tensors
        new.update(zip(map(id, tensors), moved, strict=True))
    for mover, inside in insides:
        new[id(mover)] = move_whole(mover, inside, target, non_blocking, obj)
    return _rebuilt(obj, new, parents, read)


def _pair(obj: Any, target: torch.device, non_blocking: bool | None, pack: bool | None) -> Any:
    """``{"graph": batch, "y": labels}``: one object and one plain tensor; else ``NOT_FLAT``.

    What :func:`move_held` does for this dict, without its general read: the same
    overlap tests (the tensor one of the object's, the dict one of its nodes), the
    tensor moved first by ``move_few``, then the object by ``move_whole``, the dict
    rebuilt from its items as read. Anything else (or ``move_few`` declining) goes
    to :func:`move_held`'s general read, nothing moved yet.
    """
    (ka, a), (kb, b) = obj.items()  # (keys and values as read, in one C-level copy)
    if type(a) is _PLAIN:
        tensor, mover = a, b
    elif type(b) is _PLAIN:
        tensor, mover = b, a
    else:
        return NOT_FLAT
    code = _CODES.get(type(mover))
    if code is not _MOVES and code is not _MOVES_STATE:
        return NOT_FLAT  # (a value, another tensor, a type not classified yet: the read)
    inside = whole_tensors(mover)
    if inside is None or id(tensor) in inside.ids or id(obj) in inside.opened:
        return NOT_FLAT  # (held both inside it and beside it: the walker keeps it one)
    moved = move_few([tensor], list, target, non_blocking, pack)
    if moved is NOT_FLAT:
        return NOT_FLAT
    made = move_whole(mover, inside, target, non_blocking, obj)
    return {ka: moved[0], kb: made} if tensor is a else {ka: made, kb: moved[0]}


def _read(
    x: Any,
    tensors: list[torch.Tensor],
    movers: dict[int, Any],
    containers: set[int],
    parents: set[int],
    left: list[int],
    read: dict[int, Any],
) -> bool | None:
    """Read the container ``x``; None when the walker must move the batch.

    Its tensors go to ``tensors``, its objects with a ``.to`` to ``movers``, the ids of
    it and the containers in it to ``containers``, those that hold a container to
    ``parents``. True when it holds a container.
    ``left``: how many more items may be read (the batch goes to the walker past it),
    then how many tuples were met (counted up). ``read``: each list's and dict's items
    as read, by its id (a dict's as keys and values), taken in one C-level copy: the
    result is rebuilt from these, so a container another thread changes meanwhile
    gives the batch as read here (as the walker's one flatten does), never an item
    added since (a host tensor in the result) or one whose id was reused.
    """
    left[0] -= len(x)
    if left[0] < 0:
        return None
    key = id(x)
    if key in containers:
        return None  # held twice (or a cycle): the walker keeps it one
    containers.add(key)
    cls = type(x)
    values: Any
    if cls is dict:
        pairs = list(x.items())  # (keys and values in one C-level copy)
        values = list(map(_second, pairs))
        read[key] = (pairs, values)
    elif cls is list:
        values = read[key] = list(x)
    else:
        values = x  # (a tuple cannot change)
    if _ONLY_TENSORS(map(type, values)):
        tensors.extend(values)  # the common run of plain tensors, at C speed
        return False
    codes = _CODES.get
    add = tensors.append
    nested = False
    for item in values:
        cls = type(item)
        code = codes(cls)
        if code is None:
            code = _code_of(cls)
            if code is None:
                return None  # not classified yet, a value to look into, a leaf .to
        if code is _TENSOR:
            add(item)
        elif code is _VALUE:
            continue
        elif code is _MOVES or code is _MOVES_STATE:
            movers[id(item)] = item
        elif code is _DICT or code is _LIST or code is _TUPLE:
            if code is _TUPLE:
                if not item:
                    continue  # the empty tuple: a value (place/_sharing.py)
                left[1] += 1
            if _read(item, tensors, movers, containers, parents, left, read) is None:
                return None
            nested = True
        else:
            return None  # an object the walker walks (a dataclass...): the walker
    if nested:
        parents.add(key)
    return nested


def _tuples_in(nodes: list[Any]) -> set[int]:
    """The ids of the non-empty tuples the ``nodes`` of an object's read hold, at any depth.

    The whole-object read opens no tuple (``place/_whole.py``): a tuple holding a
    tensor or a node is told by those, a tuple of values only by its own id. The
    empty tuple is a value (one object in CPython, holding nothing), here as in the
    walker (``place/_sharing.py``).
    """
    codes = _CODES.get
    pending: list[tuple[Any, ...]] = []
    push = pending.append
    for node in nodes:
        cls = type(node)
        if cls is dict:
            values: Any = node.values()
        elif cls is list:
            values = node
        else:
            code = codes(cls)
            if code is None:
                code = _code_of(cls)
            values = _values(node, code) if code is not None else ()
        for value in values:
            if type(value) is tuple and value:
                push(value)
    found: set[int] = set()
    while pending:
        held = pending.pop()
        if id(held) not in found:
            found.add(id(held))
            pending.extend(v for v in held if type(v) is tuple and v)
    return found


def _rebuilt(x: Any, new: dict[int, Any], parents: set[int], read: dict[int, Any]) -> Any:
    """``x`` as read (``read``), each tensor and object replaced by ``new[id]``; containers anew.

    A container that holds no container (not in ``parents``) is mapped at C speed. A
    tuple in which nothing changed is the very tuple (immutable; the walker's sharing
    promise then holds of it trivially).
    """
    get = new.get  # (a value's id is no tensor's or object's: all are alive, held by read)
    cls = type(x)
    values = read.get(id(x), x)  # (a tuple, the empty one unread too, is as it was)
    if cls is dict:
        pairs, values = values
    if id(x) in parents:
        items = [
            _rebuilt(v, new, parents, read) if type(v) in _CONTAINERS else get(id(v), v)
            for v in values
        ]
    else:
        items = list(map(get, map(id, values), values))
    if cls is dict:
        return dict(zip(map(_first, pairs), items, strict=True))
    if cls is list:
        return items
    return x if all(map(operator.is_, items, x)) else tuple(items)
