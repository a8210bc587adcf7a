"""An object's own state, and copying it without calling its constructor.

The walker rebuilds objects around new children by copying them (a constructor
may do more than store its arguments), so it needs to read an instance's own
state (its ``__dict__`` and its filled ``__slots__``, ``functools.cached_property``
values included: they live in ``__dict__``), to make a faithful shallow copy, and
to write new values into the copy past any ``__setattr__`` (frozen dataclasses,
attrs and pydantic classes, objects that forward attributes elsewhere). A copy
that cannot be made faithfully raises :class:`RebuildRefused`, which the walker
turns into an ``UnsupportedBatchError`` naming the path.

Objects with their own ``.to`` are deep-copied instead (:func:`deep_copy_sharing`),
with every tensor found in them mapped to its moved counterpart, so that a ``.to``
that works in place changes the copy, never the input.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import types
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from torchport.place._lasting import forget_with, lasting

__all__ = [
    "RebuildRefused",
    "State",
    "copies_plainly",
    "copy_object",
    "copy_state",
    "deep_copy_sharing",
    "defines_copy",
    "has_state",
    "read_state",
    "restore_state",
    "slot_names",
    "write_state",
]

# Per class: (name, member descriptor) for each slot it and its bases declare.
_SLOTS: dict[type, tuple[tuple[str, Any], ...]] = {}
# Per class: whether copy.copy(obj) would be object.__new__ plus the instance state.
_PLAIN_COPY: dict[type, bool] = {}
forget_with(_SLOTS, _PLAIN_COPY)
# __copy__ methods of the standard library that only copy the state (UserDict's and
# UserList's also copy .data, ChainMap's calls the constructor): the walker copies
# the state itself instead, which means the same and costs less.
_STATE_COPIES = frozenset(
    {
        collections.UserDict.__copy__,
        collections.UserList.__copy__,
        vars(collections.ChainMap)["__copy__"],
    }
)


class RebuildRefused(Exception):
    """A container cannot be rebuilt faithfully around new children; the message says why."""


class State:
    """An instance's own attributes, as read by :func:`read_state`.

    Attributes:
        names: Attribute names, those in ``__dict__`` first, then filled slots.
        values: The values, in the same order.
        in_dict: How many of them (the first ones) live in ``__dict__``.
    """

    __slots__ = ("in_dict", "names", "values")

    def __init__(self, names: list[str], values: list[Any], in_dict: int) -> None:
        self.names = names
        self.values = values
        self.in_dict = in_dict


def slot_descriptors(cls: type) -> tuple[tuple[str, Any], ...]:
    """Each slot ``cls`` and its bases declare, with the descriptor that reads and writes it."""
    found = _SLOTS.get(cls)
    if found is None:
        entries: list[tuple[str, Any]] = []
        for base in cls.__mro__:
            slots = vars(base).get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if name in ("__dict__", "__weakref__"):
                    continue
                if name.startswith("__") and not name.endswith("__"):
                    name = f"_{base.__name__.lstrip('_')}{name}"  # name mangling
                descriptor = vars(base).get(name)
                if descriptor is not None and hasattr(descriptor, "__set__"):
                    entries.append((name, descriptor))
        found = tuple(entries)
        if lasting(cls):
            _SLOTS[cls] = found
    return found


def slot_names(cls: type) -> tuple[str, ...]:
    """The names of the slots ``cls`` and its bases declare (mangled as Python stores them)."""
    return tuple(name for name, _ in slot_descriptors(cls))


def has_state(cls: type) -> bool:
    """Whether instances of ``cls`` can hold attributes of their own (a ``__dict__`` or slots)."""
    return any("__dict__" in vars(base) for base in cls.__mro__[:-1]) or bool(slot_descriptors(cls))


def read_state(obj: Any) -> State:
    """``obj``'s ``__dict__`` entries and filled slots, read past ``__getattr__`` and properties."""
    try:
        state = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        state = None
    if state:
        names = list(state)
        values = list(state.values())
    else:
        names, values = [], []
    in_dict = len(names)
    slots = slot_descriptors(type(obj))
    if slots:
        cls = type(obj)
        for name, descriptor in slots:
            try:
                value = descriptor.__get__(obj, cls)
            except AttributeError:  # an empty slot
                continue
            names.append(name)
            values.append(value)
    return State(names, values, in_dict)


def write_state(obj: Any, state: State, values: Sequence[Any]) -> None:
    """Set each attribute of ``state`` whose value changed to the new one, past ``__setattr__``."""
    cls = type(obj)
    own: dict[str, Any] | None = None
    slots: dict[str, Any] | None = None
    for i, (name, before, after) in enumerate(zip(state.names, state.values, values, strict=True)):
        if after is before:
            continue
        if i < state.in_dict:
            if own is None:
                own = object.__getattribute__(obj, "__dict__")
            own[name] = after
        else:
            if slots is None:
                slots = dict(slot_descriptors(cls))
            slots[name].__set__(obj, after)


def restore_state(obj: Any, new: Any, state: State, values: Sequence[Any]) -> None:
    """Make ``new``'s attributes exactly ``obj``'s (``state``), with ``values`` as their values.

    For a copy made by the class's own copy protocol: attributes it left out are
    written, ones it added are removed, and a weak reference to ``obj`` (a back
    reference its ``__copy__`` pointed at the copy) points at ``new``.
    """
    values = [
        weakref.ref(new) if type(value) is weakref.ref and value() is obj else value
        for value in values
    ]
    try:
        own = object.__getattribute__(new, "__dict__")
    except (AttributeError, TypeError):
        own = None
    if own is not None:
        for name in set(own).difference(state.names[: state.in_dict]):
            del own[name]
    kept = set(state.names[state.in_dict :])
    for name, descriptor in slot_descriptors(type(new)):
        if name not in kept:
            with contextlib.suppress(AttributeError):
                descriptor.__delete__(new)
    write_state(new, State(state.names, [_UNSET] * len(state.names), state.in_dict), values)


def copy_state(old: Any, new: Any) -> None:
    """Copy ``old``'s instance attributes (``__dict__`` and slots) onto ``new``, as they are."""
    state = read_state(old)
    if state.in_dict:
        object.__getattribute__(new, "__dict__").update(
            zip(state.names[: state.in_dict], state.values[: state.in_dict], strict=True)
        )
    if len(state.names) > state.in_dict:
        descriptors = dict(slot_descriptors(type(old)))
        for name, value in zip(
            state.names[state.in_dict :], state.values[state.in_dict :], strict=True
        ):
            descriptors[name].__set__(new, value)


def copies_plainly(cls: type) -> bool:
    """Whether ``copy.copy`` of a ``cls`` is ``object.__new__(cls)`` plus its state, as is.

    True when nothing customises copying or construction (the standard library's
    state-only ``__copy__`` methods of ``UserDict``, ``UserList`` and ``ChainMap``
    aside), so the walker may build the copy itself without ``copy.copy``'s
    generic machinery.
    """
    plain = _PLAIN_COPY.get(cls)
    if plain is None:
        own_copy = getattr(cls, "__copy__", None)
        constructs = getattr(cls, "__new__", None) is not object.__new__
        if own_copy is not None:
            # copy.copy calls __copy__ and nothing else: the state-only ones are plain.
            plain = own_copy in _STATE_COPIES and not constructs
        else:
            plain = (
                not constructs
                and getattr(cls, "__reduce_ex__", None) is object.__reduce_ex__
                and getattr(cls, "__reduce__", None) is object.__reduce__
                and getattr(cls, "__getstate__", None) is getattr(object, "__getstate__", None)
                and getattr(cls, "__setstate__", None) is None
            )
        if lasting(cls):
            _PLAIN_COPY[cls] = plain
    return plain


def defines_copy(cls: type) -> bool:
    """Whether ``cls`` (or a base other than the standard library's) defines ``__copy__``."""
    own = getattr(cls, "__copy__", None)
    return own is not None and own not in _STATE_COPIES


def copy_object(obj: Any) -> Any:
    """A shallow copy of ``obj``: same type, same state, no constructor called.

    Plain classes are copied as ``object.__new__`` plus their ``__dict__`` and
    slots; others with ``copy.copy``, which honours ``__copy__``,
    ``__reduce_ex__`` and ``__getstate__``/``__setstate__``.

    Raises:
        RebuildRefused: ``copy.copy`` raised, or returned the object itself or
            an object of another type.
    """
    cls = type(obj)
    if copies_plainly(cls):
        new = object.__new__(cls)
        copy_state(obj, new)
        return new
    try:
        new = copy.copy(obj)
    except Exception as exc:
        raise RebuildRefused(
            f"copy.copy raised {type(exc).__name__}: {exc}; torchport copies the object "
            "instead of calling its constructor"
        ) from exc
    if new is obj or type(new) is not cls:
        found = "the object itself" if new is obj else f"a {type(new).__name__}"
        raise RebuildRefused(
            f"copy.copy returned {found}, so its children cannot be replaced without "
            "changing the original"
        )
    _own_dict(obj, new)
    return new


def _own_dict(obj: Any, new: Any) -> None:
    """Give ``new`` a ``__dict__`` of its own if its copy protocol handed it ``obj``'s.

    pydantic v1's ``__setstate__`` sets the copy's ``__dict__`` to the very dict
    ``__getstate__`` returned: writing a moved value into the copy would write it
    into the input.
    """
    try:
        shared = object.__getattribute__(new, "__dict__")
        if shared is not object.__getattribute__(obj, "__dict__"):
            return
    except (AttributeError, TypeError):
        return
    try:
        object.__setattr__(new, "__dict__", dict(shared))
    except (AttributeError, TypeError) as exc:
        raise RebuildRefused(
            "copy.copy gave the copy the object's own __dict__, and the copy's cannot "
            "be replaced, so its children cannot be replaced without changing the original"
        ) from exc


def deep_copy_sharing(
    obj: Any,
    olds: Sequence[Any],
    news: Sequence[Any],
    walked: Callable[[type], bool],
    *,
    by_state: bool = False,
) -> Any:
    """``copy.deepcopy(obj)`` in which each object of ``olds`` becomes its ``news`` counterpart.

    Used for objects with their own ``.to``: the copy honours the class's own
    ``__deepcopy__``/``__copy__``/``__reduce_ex__`` (so back references such as a
    storage's ``_parent`` point into the copy), while tensors are never copied:
    each is replaced by the moved tensor the walker made for it, so a tensor
    shared with the rest of the batch stays shared. The objects inside are copied
    as the walker copies (see :func:`_prime`): those ``walked`` accepts (objects
    with state, including ones with their own ``.to``) through their state, and
    builtin-container subclasses through the base type's methods, so a class whose
    ``__getstate__`` leaves an attribute out (HuggingFace's ``BatchEncoding``
    drops ``_n_sequences``), or whose ``__new__`` transforms its fields, comes back
    whole and unchanged, whichever copy of the outer object is used.

    Some classes' ``__deepcopy__`` does not honour the memo: TensorDict's clones
    every tensor, and PyTorch Geometric's storages share attributes other than
    their mapping (a ``Batch``'s ``_slice_dict``) with the original. With
    ``by_state`` the class's own deep copy is not used: ``obj`` and every object
    with state inside it (``walked`` decides which) are copied with
    :func:`copy_object` and given deep copies of every attribute, and a weak
    reference to an object that is copied points at its copy.

    Raises:
        RebuildRefused: ``copy.deepcopy`` raised, or returned the object itself
            or an object of another type.
    """
    memo: dict[int, Any] = {id(old): new for old, new in zip(olds, news, strict=True)}
    # deepcopy keeps every object it copied alive in memo[id(memo)]; the olds must
    # outlive the copy too, or an id could be reused by a new object mid-copy.
    memo[id(memo)] = list(olds)
    try:
        _prime(obj, memo, walked, root=by_state)
        new = memo[id(obj)] if by_state else copy.deepcopy(obj, memo)
    except RebuildRefused:
        raise
    except Exception as exc:
        raise RebuildRefused(
            f"copy.deepcopy raised {type(exc).__name__}: {exc}; torchport calls .to on a "
            "copy (tensors excepted) so that a .to that works in place leaves the input "
            "as it was; make the object deep-copyable, or move it yourself and pass its "
            "key in skip_keys"
        ) from exc
    if new is obj or type(new) is not type(obj):
        found = "the object itself" if new is obj else f"a {type(new).__name__}"
        raise RebuildRefused(
            f"copy.deepcopy returned {found}, so its .to cannot be called without "
            "changing the original"
        )
    return new


def _copied_unfaithfully(cls: type) -> bool:
    """Whether ``copy.deepcopy`` rebuilds a ``cls`` through the class's own methods.

    It does for subclasses of the builtin containers: tuples through
    ``__getnewargs__`` (so ``__new__`` runs again on the fields), sets and deques
    through their constructor, lists and dicts through ``append`` and
    ``__setitem__``, any of which a subclass may override to transform or refuse
    its arguments. A ``MappingProxyType`` cannot be deep-copied at all. A
    namedtuple as ``collections.namedtuple`` makes it takes its fields as they are,
    and classes defined in C (``torch.Size``, structseqs) copy themselves right.
    """
    if cls is types.MappingProxyType:
        return True
    if not cls.__flags__ & _HEAPTYPE or not issubclass(cls, _BUILTIN_CONTAINERS):
        return False
    made = next((base for base in cls.__mro__ if "_make" in vars(base)), None)
    if made is None:
        return True
    return has_state(cls) or any(
        "__new__" in vars(base) or "__init__" in vars(base)
        for base in cls.__mro__[: cls.__mro__.index(made)]
    )


def _prime(
    obj: Any, memo: dict[int, Any], walked: Callable[[type], bool], *, root: bool = False
) -> None:
    """Put in ``memo`` the copies the walker would make of what ``obj`` holds.

    ``copy.deepcopy`` then uses them instead of the classes' own copy protocols:
    builtin-container subclasses are built with the base type's methods (a
    namedtuple whose ``__new__`` doubles a field is not doubled again), and objects
    walked through their state are copied with :func:`copy_object` and given deep
    copies of every attribute (a ``__getstate__`` that leaves one out loses
    nothing). An iterative walk through items and state: an object's copy is
    registered when it is first met (so a reference back to it finds it), its
    attributes and a container's items are filled in after its children, each
    deep-copied with the same ``memo``, so tensors stay the moved ones. ``obj``
    itself is left to its own ``__deepcopy__``, unless ``root``: then it is copied
    like the objects inside it, and its copy is ``memo[id(obj)]``.
    """
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(obj, False)]
    while stack:
        node, done = stack.pop()
        if done:
            _fill(node, memo)
            continue
        if id(node) in seen or id(node) in memo or _is_atom(node):
            continue
        seen.add(id(node))
        cls = type(node)
        if _copied_unfaithfully(cls):
            stack.append((node, True))
        elif (root or node is not obj) and walked(cls):
            memo[id(node)] = copy_object(node)
            stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def _fill(node: Any, memo: dict[int, Any]) -> None:
    """Finish the copy of ``node``: build a container, or give an object its attributes."""
    made = memo.get(id(node))
    if made is None:
        memo[id(node)] = _faithful_copy(node, memo)
        return
    state = read_state(node)
    if state.names:
        copied = [_deep(value, memo) for value in state.values]
        write_state(made, State(state.names, [_UNSET] * len(state.names), state.in_dict), copied)


def _deep(value: Any, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy(value, memo)``; a plain weak reference to a copied object points at the copy.

    ``deepcopy`` returns weak references as they are, so a back reference (a
    storage's ``_parent``) would still point at the original.
    """
    if type(value) is weakref.ref:
        referent = value()
        if referent is not None and id(referent) in memo:
            return weakref.ref(memo[id(referent)])
        return value
    return copy.deepcopy(value, memo)


def _is_atom(node: Any) -> bool:
    return isinstance(node, str | bytes | int | float | complex | type(None) | type)


def _children(node: Any) -> list[Any]:
    found: list[Any] = []
    if isinstance(node, dict | types.MappingProxyType):
        found.extend(node.values())
    elif isinstance(node, _BUILTIN_CONTAINERS):
        found.extend(node)
    with contextlib.suppress(Exception):  # state that cannot be read is left to deepcopy
        found.extend(read_state(node).values)
    return found


def _faithful_copy(node: Any, memo: dict[int, Any]) -> Any:
    """A deep copy built with the builtin base's own methods, then the instance's state."""
    cls = type(node)
    deep = copy.deepcopy
    if cls is types.MappingProxyType:
        return types.MappingProxyType(deep(node.copy(), memo))
    new: Any
    if issubclass(cls, dict):
        base: Any = next(
            b
            for b in (collections.OrderedDict, collections.defaultdict, dict)
            if isinstance(node, b)
        )
        new = base.__new__(cls)
        if base is collections.defaultdict:
            object.__setattr__(new, "default_factory", node.default_factory)
        setitem = base.__setitem__
        for key, value in list(base.items(node)):
            setitem(new, deep(key, memo), deep(value, memo))
    else:
        items = [deep(item, memo) for item in node]
        if issubclass(cls, tuple):
            new = tuple.__new__(cls, items)
        elif issubclass(cls, frozenset):
            new = frozenset.__new__(cls, items)
        elif issubclass(cls, set):
            new = set.__new__(cls)
            set.update(new, items)
        elif issubclass(cls, list):
            new = list.__new__(cls)
            list.extend(new, items)
        else:
            new = collections.deque.__new__(cls)
            collections.deque.__init__(new, items, collections.deque.maxlen.__get__(node))
    state = read_state(node)
    if state.names:
        copied = [_deep(value, memo) for value in state.values]
        write_state(new, State(state.names, [_UNSET] * len(state.names), state.in_dict), copied)
    return new


_UNSET = object()  # stands for "no value yet", so write_state writes every attribute
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python
_BUILTIN_CONTAINERS = (tuple, list, dict, set, frozenset, collections.deque)
