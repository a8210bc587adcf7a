"""What an object's own ``.to`` could change in the input: recorded, compared, put back.

An object with its own ``.to`` is moved by that ``.to`` called on a shallow copy
(``place/_mover_recipe.py``, ``place/_whole.py``). The copy shares what the input
holds (a dict attribute, a list inside it; a class's own ``__copy__``, such as
PyTorch Geometric's ``Data``'s, shares what it chooses to), so a ``.to`` that writes
into one (``self.table["w"] = self.table["w"].to(device)``) changes the input.

The invariant, kept on every move: after a move by an object's own ``.to``, every
container and object of the input that the walker reads holds exactly the objects
it held before (the same keys, items and attributes, by identity, in order, the
same ``__dict__``); a ``.to`` that changed any of them is refused and the input is
put back first, so that after any error the input holds exactly what it held.
This does not rest on how the change was made (through the shallow copy, a back
reference, a global, only for some values or on some calls): what the input holds
is recorded before each call and compared after it.

How it is recorded: :func:`record` takes the input's nodes (the dicts, lists and
objects the mover read on its way to the tensors: ``place/_whole.py``'s ``_read``,
or :func:`snapshot`'s own walk for the walker) and lays what each holds end to end
in one flat list, each node's run closed by a marker that nothing else holds;
:meth:`Snapshot.changed` builds the same list again and compares the two by
identity at C speed, and keeps the old objects alive, so that an id cannot be
reused by an object made during the call. Equal lists mean every node holds the
same objects: each run is read back the same way, and the marker closes it.
``place/_whole.py``'s ``_read`` lays the same runs while it reads the input (when
the class's last move called its ``.to``), so that its move records nothing more
before the call (:class:`Snapshot` takes the nodes and that list as they are).

What is recorded is what the walker reads: the items of dicts, lists, deques and
sets (and their subclasses), the items of tuples (not recorded themselves: they
cannot change), and the ``__dict__`` and slots of objects the walker walks or
moves with their own ``.to``. Tensors, values and the objects a batch only refers
to (classes, modules, functions: ``place/_objects.py``'s values) are not looked
into. A tensor's data is not recorded, but each input tensor's version counter is
(:func:`versions`: what every in-place operation of autograd's bumps, ``copy_``,
``add_``, ``resize_``, ``set_``, ``unsqueeze_``): a ``.to`` that changed one of the
input's tensors in place is refused too, though that change cannot be put back. Not
caught: what bumps no counter (``t.data = ...``, ``t.requires_grad_()``, ``t.grad =
...``, a write through ``t.data``, ``t.numpy()`` or an inference tensor, which has no
counter).

Threads: :func:`hold` serialises the checked moves of one input object, so that
threads moving the same object one after another see it as it was (a ``.to`` that
writes through is then refused in every thread, the input intact at the end; one
thread's write can no longer enter another's record). Moves of different objects
do not wait for each other; two objects that share a container, moved in two
threads at once by ``.to`` methods that both write into it, are not serialised.
"""

from __future__ import annotations

import collections
import contextlib
import operator
import threading
from typing import Any

import torch

from torchport.place._copying import has_state, read_state, slot_descriptors
from torchport.place._lasting import forget_with, lasting
from torchport.place._leaf_kinds import KIND, PLAIN, TENSOR
from torchport.place._objects import VALUE, kind_of_object

__all__ = [
    "END",
    "RESTORED",
    "STATE",
    "VERSION",
    "Snapshot",
    "busy",
    "flatten",
    "hold",
    "lay_any",
    "lays_own_dict",
    "let_go",
    "record",
    "snapshot",
    "versions",
    "wait_for",
]

_dict_of = object.__getattribute__
_BUILTINS = (dict, list, tuple, set, frozenset, collections.deque)


class _End:
    """The type of the marker closing each node's run (no input holds one)."""

    __slots__ = ()


class _State:
    """The type of the marker opening a node's state part (no input holds one)."""

    __slots__ = ()


# The markers have types of their own, so that the types of a laid record tell where
# each run starts and ends (``place/_whole.py``'s plans compare those types).
_END = _End()  # closes each node's run in the flat record
_EMPTY = object()  # an empty slot
_NO_DICT = object()  # a node without a __dict__
_STATE = _State()  # opens the state part of a node's run
END = _END  # (what ``place/_whole.py`` lays the record with while it reads the input)
STATE = _STATE
# Counts puts-back, twice each (before and after; its one item; never goes back):
# a mover that read an input before taking its guard reads it again when this moved,
# since it may have read it while another thread's refused .to had changed it.
RESTORED = [0]


class Snapshot:
    """What each recorded node held, by identity (see the module)."""

    __slots__ = ("_flat", "_nodes")

    def __init__(self, nodes: list[Any], flat: list[Any]) -> None:
        self._nodes = nodes
        self._flat = flat

    def changed(self) -> bool:
        """Whether any recorded node now holds anything else (or in another order)."""
        now = _flatten(self._nodes)
        held = self._flat
        return len(now) != len(held) or not all(map(operator.is_, now, held))

    def restore(self) -> None:
        """Make every recorded node hold again exactly what it held."""
        # Counted before and after: a read that overlaps the put-back (it read the count
        # before, or between, the two) sees the count moved and reads the input again.
        RESTORED[0] += 1
        try:
            held = self._flat
            at = 0
            for node in self._nodes:
                at = _put_back(node, held, at)
        finally:
            RESTORED[0] += 1


_VERSION = operator.attrgetter("_version")
VERSION = _VERSION  # (read inline by ``place/_whole.py``; :func:`versions` where it raises)


def versions(tensors: list[torch.Tensor]) -> list[int]:
    """Each tensor's version counter (-1 for an inference tensor, which has none).

    Two reads that differ tell that an in-place operation ran on one of ``tensors``
    (or on a view sharing its data) in between.
    """
    try:
        return list(map(_VERSION, tensors))
    except RuntimeError:  # an inference tensor does not track its version
        return [-1 if t.is_inference() else t._version for t in tensors]


def changed_tensor(cls: type) -> str:
    """Why an object's ``.to`` that changed one of the input's tensors in place is refused."""
    return (
        f"the {cls.__name__} object's .to, called on a shallow copy (copy.copy), "
        "changed one of the input's tensors in place (an in-place operation such as "
        "copy_, add_, resize_ or set_ on a tensor the copy shares with the input; that "
        "change cannot be undone, the input's containers are as they were); make the "
        ".to return new tensors (t.to(device)) instead of writing into the ones it "
        "holds, or move it yourself and pass its key in skip_keys"
    )


def record(nodes: list[Any]) -> Snapshot:
    """Record what each of ``nodes`` (dicts, lists, deques, sets, objects) holds."""
    return Snapshot(nodes, _flatten(nodes))


def snapshot(obj: Any) -> Snapshot:
    """Record what ``obj`` and every container and object reachable from it hold.

    Each node is recorded once (a cycle or a node held twice is fine).
    """
    nodes: list[Any] = []
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
        recorded = False
        if isinstance(node, tuple | frozenset):
            pending.extend(node)
        elif isinstance(node, dict):
            pending.extend(dict.values(node))
            recorded = True
        elif isinstance(node, list | collections.deque | set):
            pending.extend(_items(node))
            recorded = True
        if _walks_state(cls):
            pending.extend(read_state(node).values)
            recorded = True
        if recorded:
            nodes.append(node)
    return record(nodes)


def _walks_state(cls: type) -> bool:
    """Whether the walker reads the state of objects of ``cls`` (their attributes)."""
    if cls is dict or cls is list or cls is tuple or cls is set or cls is frozenset:
        return False
    return kind_of_object(cls) != VALUE


def _items(node: Any) -> list[Any]:
    """The items of a list, deque or set (or a subclass), read with the base type's own methods."""
    if isinstance(node, list):
        return list.copy(node)
    if isinstance(node, collections.deque):
        return list(collections.deque.__iter__(node))
    return list(set.__iter__(node))


def _flatten(nodes: list[Any]) -> list[Any]:
    """What ``nodes`` hold, end to end, each node's run closed by ``_END``.

    A run: a dict's keys then its values; the items of a list, deque or set; then,
    for any node but a plain dict or list, ``_STATE``, its ``__dict__`` (the object
    itself, or ``_NO_DICT``), that dict's keys and values, and each slot's value
    (``_EMPTY`` for an empty one).
    """
    flat: list[Any] = []
    extend = flat.extend
    add = flat.append
    plans = _PLANS.get
    end, state, dict_of = _END, _STATE, _dict_of
    for x in nodes:
        cls = type(x)
        plan = plans(cls)
        if plan is None:
            plan = _plan(cls)
        if plan is _PLAIN_DICT:
            extend(x)
            extend(x.values())
        elif plan is _OWN_DICT:
            own = dict_of(x, "__dict__")
            add(state)
            add(own)
            extend(own)
            extend(own.values())
        elif plan is _PLAIN_LIST:
            extend(x)
        else:
            _flatten_any(x, cls, flat)
        add(end)
    return flat


flatten = _flatten  # (``place/_whole.py`` compares a record it laid itself, inline)


def _flatten_any(x: Any, cls: type, flat: list[Any]) -> None:
    """A node's run (see :func:`_flatten`) for any node: items, ``__dict__``, slots."""
    if isinstance(x, dict):
        flat.extend(dict.keys(x))
        flat.extend(dict.values(x))
    elif isinstance(x, list | collections.deque | set):
        flat.extend(_items(x))
    flat.append(_STATE)
    try:
        own = _dict_of(x, "__dict__")
    except (AttributeError, TypeError):
        own = _NO_DICT
    flat.append(own)
    if own is not _NO_DICT:
        flat.extend(own)
        flat.extend(own.values())
    for _, descriptor in slot_descriptors(cls):
        try:
            flat.append(descriptor.__get__(x, cls))
        except AttributeError:
            flat.append(_EMPTY)


def lay_any(x: Any, cls: type, flat: list[Any]) -> None:
    """Lay the run of any node (not closed: the caller adds ``END``), as :func:`_flatten` does."""
    _flatten_any(x, cls, flat)


# How _flatten reads a node of each type (those that last: place/_lasting.py).
_PLAIN_DICT = 0
_PLAIN_LIST = 1
_OWN_DICT = 2  # an object whose whole state is its __dict__
_ANY = 3
_PLANS: dict[type, int] = {dict: _PLAIN_DICT, list: _PLAIN_LIST}
forget_with(_PLANS)


def _plan(cls: type) -> int:
    plain = not issubclass(cls, _BUILTINS) and not slot_descriptors(cls)
    plan = _OWN_DICT if plain and has_state(cls) else _ANY
    if lasting(cls):
        _PLANS[cls] = plan
    return plan


def lays_own_dict(cls: type) -> bool:
    """Whether :func:`_flatten` lays an object of ``cls`` as ``_STATE``, its ``__dict__``,
    that dict's keys and values (no slots, no builtin base)."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _plan(cls)
    return plan is _OWN_DICT


def _run(held: list[Any], at: int) -> tuple[list[Any], int]:
    """The run starting at ``at`` (without its ``_END``) and where the next one starts."""
    end = at
    while held[end] is not _END:
        end += 1
    return held[at:end], end + 1


def _put_back(node: Any, held: list[Any], at: int) -> int:
    """Make ``node`` hold its run of ``held`` (from ``at``) again; returns where the next starts.

    Each part is written with the base type's own methods, past ``__setattr__``.
    """
    run, after = _run(held, at)
    cls = type(node)
    if cls is dict or cls is list:
        _put_items(node, run)
        return after
    state_at = next(i for i, x in enumerate(run) if x is _STATE)
    _put_items(node, run[:state_at])
    own = run[state_at + 1]
    slots = slot_descriptors(cls)
    rest = run[state_at + 2 : len(run) - len(slots)]
    if own is not _NO_DICT:
        with contextlib.suppress(AttributeError, TypeError):
            if _dict_of(node, "__dict__") is not own:
                object.__setattr__(node, "__dict__", own)
        half = len(rest) // 2
        dict.clear(own)
        dict.update(own, zip(rest[:half], rest[half:], strict=True))
    for (_, descriptor), value in zip(slots, run[len(run) - len(slots) :], strict=True):
        if value is _EMPTY:
            with contextlib.suppress(AttributeError):  # empty before and after
                descriptor.__delete__(node)
        else:
            descriptor.__set__(node, value)
    return after


def _put_items(node: Any, items: list[Any]) -> None:
    """Make a dict, list, deque or set (``items``: its part of a run) hold ``items`` again."""
    if isinstance(node, dict):
        half = len(items) // 2
        dict.clear(node)
        dict.update(node, zip(items[:half], items[half:], strict=True))
    elif isinstance(node, list):
        list.__setitem__(node, slice(None), items)
    elif isinstance(node, collections.deque):
        collections.deque.clear(node)
        collections.deque.extend(node, items)
    elif isinstance(node, set):
        set.clear(node)
        set.update(node, items)


# Per input object whose checked move runs (by id: the mover holds the object for the
# whole call, so the id cannot be reused meanwhile): the thread running it. An entry
# exists exactly while its move runs; entries are put and looked up with single dict
# operations (atomic under the GIL), so a move that no other thread waits for takes no
# lock. A thread that finds another's entry waits on _WAKE, counted in _WAITING while
# it does (under _WAKE's lock); a move ending removes its entry first and then, if
# anyone waits, wakes them all (each looks again). No wake-up is lost: a waiter counts
# itself and looks at the entry under _WAKE's lock before it waits, and the ending
# move takes that lock to wake it, so it either sees the entry gone or is waiting.
_GUARDS: dict[int, int] = {}
_WAKE = threading.Condition(threading.Lock())
_WAITING = [0]
_get_ident = threading.get_ident


def hold(obj: Any) -> bool | None:
    """Wait until no other thread runs a checked move of ``obj``, then take it (see :func:`let_go`).

    None when this thread runs one already (a ``.to`` that moves its own input
    again): the nested move goes on under the outer one. Taking a move no other
    thread runs costs two dict operations, no lock.
    """
    key = id(obj)
    me = _get_ident()
    owner = _GUARDS.get(key)
    if owner is None:
        # Only this thread puts its own id: the entry is ours exactly when it holds it.
        if _GUARDS.setdefault(key, me) == me:
            return True
    elif owner == me:
        return None
    with _WAKE:
        _WAITING[0] += 1
        try:
            while _GUARDS.get(key) is not None or _GUARDS.setdefault(key, me) != me:
                _WAKE.wait()
        finally:
            _WAITING[0] -= 1
    return True


def busy(obj: Any) -> bool:
    """Whether a checked move of ``obj`` runs now in another thread."""
    owner = _GUARDS.get(id(obj))
    return owner is not None and owner != _get_ident()


def wait_for(obj: Any) -> None:
    """Wait until no checked move of ``obj`` runs in another thread."""
    let_go(obj, hold(obj))


def let_go(obj: Any, guard: bool | None) -> None:
    """End the checked move of ``obj`` that :func:`hold` gave ``guard`` for."""
    if guard is not None:
        del _GUARDS[id(obj)]
        if _WAITING[0]:
            with _WAKE:
                _WAKE.notify_all()
