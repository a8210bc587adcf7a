"""What an object's own ``.to`` could change in the input: recorded, compared, put back.

An object with its own ``.to`` is moved by that ``.to`` called on a shallow copy
(``place/_mover_recipe.py``, ``place/_whole.py``). The copy shares every container
the input holds (a dict attribute, a list inside it), so a ``.to`` that writes into
one (``self.table["w"] = self.table["w"].to(device)``) changes the input. A class
with its own ``__copy__`` (PyTorch Geometric's ``Data``, ``TensorDict``) says what
its copy shares; its ``.to`` is trusted to leave the input alone once a move of an
object of the class with the same attribute names was checked and did (:func:`watch`:
a ``Data`` subclass whose ``.to`` writes into a dict that ``Data.__copy__`` shares is
caught on such a move). For any other class, and until such a move,
:func:`snapshot` records, before the call, what each mutable container and object
the walker would go through holds (by identity), :meth:`Snapshot.changed` says
whether any of them now holds anything else, and :meth:`Snapshot.restore` puts back
what each held. The movers refuse such a ``.to`` and restore the input first, so
that after any error the input holds exactly the objects it held. An object whose
attribute names match a checked one's but whose ``.to`` writes through only for
some values is not caught once its class is trusted.

What is recorded is what the walker reads: the items of dicts, lists, deques and
sets (and their subclasses), the items of tuples (not recorded themselves: they
cannot change), and the ``__dict__`` and slots of objects the walker walks or
moves with their own ``.to``. Tensors, values and the objects a batch only refers
to (classes, modules, functions: ``place/_objects.py``'s values) are not looked
into. What a tensor holds (its data) is not recorded: a ``.to`` that copies into an
input tensor in place is not caught.
"""

from __future__ import annotations

import collections
import contextlib
from typing import Any

import torch

from torchport.place._copying import State, defines_copy, read_state, slot_descriptors
from torchport.place._lasting import lasting
from torchport.place._leaf_kinds import KIND, PLAIN, TENSOR
from torchport.place._objects import VALUE, kind_of_object

__all__ = ["Snapshot", "checked", "snapshot", "watch"]

_DICT = 0
_LIST = 1
_DEQUE = 2
_SET = 3
_STATE = 4


# Classes with a __copy__ of their own (and that last: ``place/_lasting.py``) whose .to
# was checked on a move and left the input alone, each with the names of the attributes
# that object had (its __dict__'s keys, in order; () for one without a __dict__): an
# object of the class with the same names is not recorded again, one with other names
# (a PyG ``Data`` given a ``_cache`` dict) is checked once more. Bounded: past
# _CHECKED_MAX entries every move is recorded.
_COPY_CHECKED: set[tuple[type, tuple[str, ...]]] = set()
_CHECKED_MAX = 1024


def watch(obj: Any) -> Snapshot | None:
    """What to check a call of ``obj``'s own ``.to`` on its shallow copy against; None: trusted.

    Every class without a ``__copy__`` of its own is recorded on every move; one with
    its own ``__copy__`` until a move of an object with the same attribute names was
    checked (:func:`checked`).
    """
    return None if (type(obj), _names(obj)) in _COPY_CHECKED else snapshot(obj)


def checked(obj: Any) -> None:
    """Note that a move of ``obj`` by its own ``.to`` left the input alone (see :func:`watch`)."""
    cls = type(obj)
    if defines_copy(cls) and lasting(cls) and len(_COPY_CHECKED) < _CHECKED_MAX:
        _COPY_CHECKED.add((cls, _names(obj)))


def _names(obj: Any) -> tuple[str, ...]:
    try:
        return tuple(object.__getattribute__(obj, "__dict__"))
    except (AttributeError, TypeError):
        return ()


class Snapshot:
    """What each container and object reachable from one object held, by identity."""

    __slots__ = ("_entries",)

    def __init__(self, entries: list[tuple[Any, int, Any]]) -> None:
        # (node, what it is, what it held): see _held.
        self._entries = entries

    def changed(self) -> bool:
        """Whether any recorded node now holds anything else (or in another order)."""
        return any(not _same_held(node, kind, held) for node, kind, held in self._entries)

    def restore(self) -> None:
        """Make every recorded node that changed hold again exactly what it held."""
        for node, kind, held in self._entries:
            if not _same_held(node, kind, held):
                _put_back(node, kind, held)


def snapshot(obj: Any) -> Snapshot:
    """Record what ``obj`` and every container and object reachable from it hold.

    Each node is recorded once (a cycle or a node held twice is fine).
    """
    entries: list[tuple[Any, int, Any]] = []
    seen: set[int] = set()
    pending = [obj]
    while pending:
        node = pending.pop()
        cls = type(node)
        kind = KIND.get(cls)
        if kind in (TENSOR, PLAIN) or isinstance(node, torch.Tensor):
            continue
        key = id(node)
        if key in seen:
            continue
        seen.add(key)
        if isinstance(node, tuple):
            pending.extend(node)
        elif isinstance(node, dict):
            items = list(dict.items(node))
            entries.append((node, _DICT, items))
            pending.extend(value for _, value in items)
        elif isinstance(node, list):
            items = list.copy(node)
            entries.append((node, _LIST, items))
            pending.extend(items)
        elif isinstance(node, collections.deque):
            items = list(node)
            entries.append((node, _DEQUE, items))
            pending.extend(items)
        elif isinstance(node, set):
            items = list(node)
            entries.append((node, _SET, items))
            pending.extend(items)
        elif isinstance(node, frozenset):
            pending.extend(node)
        if _walks_state(cls):
            state = read_state(node)
            entries.append((node, _STATE, state))
            pending.extend(state.values)
    return Snapshot(entries)


def _walks_state(cls: type) -> bool:
    """Whether the walker reads the state of objects of ``cls`` (their attributes)."""
    if cls is dict or cls is list or cls is tuple or cls is set or cls is frozenset:
        return False
    return kind_of_object(cls) != VALUE


def _same_held(node: Any, kind: int, held: Any) -> bool:
    if kind == _STATE:
        now = read_state(node)
        return now.names == held.names and _same_items(now.values, held.values)
    if kind == _DICT:
        items = list(dict.items(node))
        return len(items) == len(held) and all(
            a[0] is b[0] and a[1] is b[1] for a, b in zip(items, held, strict=True)
        )
    if kind == _SET:
        return len(node) == len(held) and {id(x) for x in node} == {id(x) for x in held}
    return _same_items(list(node), held)


def _same_items(now: list[Any], held: list[Any]) -> bool:
    return len(now) == len(held) and all(a is b for a, b in zip(now, held, strict=True))


def _put_back(node: Any, kind: int, held: Any) -> None:
    """Make ``node`` hold ``held`` again, with the base type's own methods."""
    if kind == _DICT:
        dict.clear(node)
        dict.update(node, held)
    elif kind == _LIST:
        list.__setitem__(node, slice(None), held)
    elif kind == _DEQUE:
        collections.deque.clear(node)
        collections.deque.extend(node, held)
    elif kind == _SET:
        set.clear(node)
        set.update(node, held)
    else:
        _put_back_state(node, held)


def _put_back_state(node: Any, held: State) -> None:
    """Give ``node`` exactly the attributes ``held`` recorded, past ``__setattr__``."""
    try:
        own: dict[str, Any] | None = object.__getattribute__(node, "__dict__")
    except (AttributeError, TypeError):
        own = None
    if own is not None:
        own.clear()
        own.update(zip(held.names[: held.in_dict], held.values[: held.in_dict], strict=True))
    filled = dict(zip(held.names[held.in_dict :], held.values[held.in_dict :], strict=True))
    for name, descriptor in slot_descriptors(type(node)):
        if name in filled:
            descriptor.__set__(node, filled[name])
        else:
            with contextlib.suppress(AttributeError):  # empty before and after
                descriptor.__delete__(node)
