"""The container types the walker registers itself, each with how to list and rebuild it.

optree walks ``dict``, ``OrderedDict``, ``defaultdict``, ``list``, ``tuple``,
``deque``, structseqs and plain namedtuples on its own. Every other container a
batch may hold is registered by :func:`register` in torchport's private optree
namespace the first time the walker (``place/_tree.py``) meets it as a leaf;
objects that are not containers are ``place/_objects.py``'s.

Rebuilding never calls a type's constructor where the object's whole state can
be copied instead: a constructor may do more than store its arguments
(``__post_init__`` doubling a field, a subclass ``__init__`` that takes other
arguments, ``__new__`` transforming them), which would be a silently wrong batch.

A container's children are its items **and** its own attributes (``__dict__``
entries and filled slots): ``d = MyDict(a=t); d.mask = t2`` moves ``mask`` too.
How each kind is rebuilt:

* subclass of ``list``, ``tuple`` (namedtuples included, see ``place/_spec.py``),
  ``dict``, ``OrderedDict``, ``defaultdict``, ``deque``, ``set``, ``frozenset``:
  the base type's own ``__new__`` and methods (never the subclass's), then the
  instance's attributes, moved;
* ``set``, ``frozenset``: ``set(items)``, ``frozenset(items)``;
* ``MappingProxyType``: a new proxy over the rebuilt mapping it shows (that very
  mapping is walked, so one the batch also holds elsewhere stays one);
* a ``Mapping`` with no state of its own (one implemented in C): returned as it is
  when no value changed; otherwise ``type(m)(dict_of_items)``, checked to hold
  exactly the new values. A ``Mapping`` that keeps its items in attributes
  (``UserDict``, ``ChainMap``, most custom ones) is walked through its state.
* ``torch.nn.utils.rnn.PackedSequence``: its ``data``, ``sorted_indices`` and
  ``unsorted_indices`` move with the batch (so a ``data`` also held elsewhere stays
  one tensor; only a floating ``data`` is cast), rebuilt with ``tuple.__new__``;
  ``batch_sizes`` stays on the CPU, where RNNs need it: the one tensor a move
  leaves there.

A set whose items become equal once rebuilt (so it would shrink) is an error.
A rebuild that cannot be done faithfully raises :class:`RebuildRefused`; the
walker turns it into an ``UnsupportedBatchError`` naming the path.
"""

from __future__ import annotations

import collections
import enum
import gc
import operator
import types
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import optree
import torch

from torchport.place._copying import (
    RebuildRefused,
    State,
    copy_state,
    has_state,
    read_state,
    write_state,
)
from torchport.place._entries import Attr, ItemOrAttrEntry, SetItemEntry, ViewEntry

__all__ = [
    "GENERIC_MAPPINGS",
    "NAMESPACE",
    "RebuildRefused",
    "container_recipe",
    "register_known",
    "register_recipe",
    "share_siblings",
    "viewed_mapping",
]

# torchport's private optree namespace: optree's global registry and torch's pytree
# registry are left as they are.
NAMESPACE = "torchport"

_Flatten = Callable[[Any], tuple[Any, Any, Any]]
_Unflatten = Callable[[Any, Any], Any]


class Recipe(NamedTuple):
    """How to take a type apart and put it together again."""

    flatten: _Flatten
    unflatten: _Unflatten
    entry: type[optree.PyTreeEntry]
    constructs: bool = False  # rebuilt through its constructor (a stateless Mapping)


# Mapping types rebuilt through their constructor; named so in error messages.
GENERIC_MAPPINGS: weakref.WeakSet[type] = weakref.WeakSet()


def register_known(namespace: str) -> None:
    """Register the types that must be registered before optree first walks them."""
    cls = torch.nn.utils.rnn.PackedSequence
    with warnings.catch_warnings():
        # optree warns that this overrides its namedtuple handling: that is the point.
        warnings.simplefilter("ignore", UserWarning)
        optree.register_pytree_node(
            cls,
            _open_packed,
            _close_packed,
            path_entry_type=ItemOrAttrEntry,
            namespace=namespace,
        )


# The PackedSequence fields that move: data, sorted_indices, unsorted_indices.
_PACKED_MOVED = (0, 2, 3)


class _Packed:
    """A ``PackedSequence`` as node data: compared by identity, never by its tensors."""

    __slots__ = ("packed",)

    def __init__(self, packed: Any) -> None:
        self.packed = packed


def _open_packed(packed: Any) -> tuple[list[Any], _Packed, tuple[int, ...]]:
    data, _, sorted_indices, unsorted_indices = tuple.__iter__(packed)
    return [data, sorted_indices, unsorted_indices], _Packed(packed), _PACKED_MOVED


def _close_packed(meta: Any, children: Any) -> Any:
    """A ``PackedSequence`` around the moved fields, with its CPU ``batch_sizes``.

    Built with ``tuple.__new__``, as its constructor would move ``batch_sizes`` nowhere
    but refuse it off the CPU; the input comes back as it is when no field changed.
    """
    packed = meta.packed
    data, sorted_indices, unsorted_indices = children
    fields = (data, packed.batch_sizes, sorted_indices, unsorted_indices)
    if all(map(operator.is_, fields, tuple.__iter__(packed))):
        return packed
    return tuple.__new__(torch.nn.utils.rnn.PackedSequence, fields)


def register_recipe(cls: type, recipe: Recipe, namespace: str) -> bool:
    """Register ``cls`` with ``recipe`` in ``namespace``; say whether it is now a node there."""
    if recipe.constructs:
        GENERIC_MAPPINGS.add(cls)
    with warnings.catch_warnings():
        # Registering a namedtuple class overrides optree's own handling: that is the point.
        warnings.simplefilter("ignore", UserWarning)
        try:
            optree.register_pytree_node(
                cls,
                recipe.flatten,
                recipe.unflatten,
                path_entry_type=recipe.entry,
                namespace=namespace,
            )
        except ValueError:
            # Registered meanwhile by another thread, or refused by optree: a leaf then.
            return optree.register_pytree_node.get(cls, namespace=namespace) is not None
    return True


def container_recipe(cls: type) -> Recipe | None:
    """How to rebuild ``cls`` if it is a container the walker handles by its items; else None.

    Objects that keep their contents in attributes (``UserDict``, ``ChainMap``,
    dataclasses, most custom ``Mapping``s) are not containers here: they are
    walked through their state (``place/_objects.py``).
    """
    if issubclass(cls, str | bytes | bytearray | torch.Size | enum.Enum):
        return None  # values, not containers (an Enum member must stay the one member)
    if cls in (list, tuple, dict, collections.OrderedDict, collections.defaultdict):
        return None  # optree's own; reached only as a value kept by skip_keys
    if cls is types.MappingProxyType:
        return Recipe(_flatten_view, _rebuild_view, ViewEntry)
    if issubclass(cls, set | frozenset):
        return _set(cls)
    if issubclass(cls, collections.OrderedDict):
        return _dict(cls, collections.OrderedDict)
    if issubclass(cls, collections.defaultdict):
        return _dict(cls, collections.defaultdict)
    if issubclass(cls, dict):
        return _dict(cls, dict)
    if issubclass(cls, list):
        return _list(cls)
    if issubclass(cls, tuple):
        return _tuple(cls)
    if issubclass(cls, collections.deque):
        return None if cls is collections.deque else _deque(cls)
    if issubclass(cls, Mapping) and not has_state(cls):
        return _stateless_mapping(cls)
    return None


def share_siblings(old: list[Any], new: list[Any]) -> list[Any]:
    """``new``, with children that were one object in ``old`` made one object again.

    Each occurrence of an object is rebuilt on its own, so a tuple that is both a
    ``ModelOutput``'s item and its attribute would come back as two equal tuples;
    the first rebuild stands for all of them, as the one object did. Tensors are
    left alone: the walker already gives every occurrence the one moved copy,
    except under a skipped key, where the tensor stays as it was on purpose.
    """
    if len(set(map(id, old))) == len(old):
        return new
    first: dict[int, Any] = {}
    return [
        after if isinstance(before, torch.Tensor) else first.setdefault(id(before), after)
        for before, after in zip(old, new, strict=True)
    ]


# --- the recipes -------------------------------------------------------------------------


def _with_state(obj: Any, items: list[Any], entries: list[Any]) -> tuple[list[Any], State]:
    """Children and entries of a container: its items, then its own attributes."""
    state = read_state(obj)
    if not state.names:
        return items, state
    entries.extend(Attr(name) for name in state.names)
    return items + state.values, state


def _shared(olds: list[Any] | None, children: Any) -> Any:
    """The children with siblings shared as before (``olds`` is None without attributes)."""
    return children if olds is None else share_siblings(olds, list(children))


def _restore_state(obj: Any, new: Any, state: State, moved: list[Any]) -> None:
    """Give ``new`` the attributes of ``obj``, with those among the children replaced."""
    copy_state(obj, new)
    if state.names:
        write_state(new, state, moved)


def _flatten_view(obj: types.MappingProxyType[Any, Any]) -> tuple[list[Any], None, tuple[None]]:
    return [viewed_mapping(obj)], None, (None,)


def viewed_mapping(view: types.MappingProxyType[Any, Any]) -> Any:
    """The very mapping a ``MappingProxyType`` shows (so that one held elsewhere stays one).

    CPython's proxy refers to exactly that mapping (``gc.get_referents``); where that
    is not so, a copy of it, which keeps its type (``OrderedDict``, ``defaultdict``).
    """
    referents = gc.get_referents(view)
    if len(referents) == 1 and isinstance(referents[0], Mapping):
        return referents[0]
    try:
        inner = view.copy()
    except Exception:
        inner = dict(view)
    return inner if isinstance(inner, Mapping) else dict(view)


def _rebuild_view(_: None, children: Any) -> types.MappingProxyType[Any, Any]:
    return types.MappingProxyType(children[0])


def _set(cls: type) -> Recipe:
    base: Any = frozenset if issubclass(cls, frozenset) else set

    def flatten(obj: Any) -> tuple[list[Any], Any, list[Any]]:
        items = list(base.__iter__(obj))
        entries: list[Any] = list(range(len(items)))
        children, state = _with_state(obj, items, entries)
        olds = children if state.names else None
        return children, (obj, len(items), state, olds), entries

    def unflatten(meta: tuple[Any, int, State, Any], children: Any) -> Any:
        obj, n, state, olds = meta
        children = _shared(olds, children)
        values = children[:n]
        if cls is base:
            new = base(values)
        elif base is frozenset:
            new = frozenset.__new__(cls, values)
            _restore_state(obj, new, state, children[n:])
        else:
            new = set.__new__(cls)
            set.update(new, values)
            _restore_state(obj, new, state, children[n:])
        if len(new) != n:
            raise RebuildRefused(f"its {n} items became {len(new)}: some compare equal once moved")
        return new

    return Recipe(flatten, unflatten, SetItemEntry)


def _dict(cls: type, base: type) -> Recipe:
    # OrderedDict keeps its own order (move_to_end), which dict.keys does not see.
    keys_of = collections.OrderedDict.keys if base is collections.OrderedDict else dict.keys
    get = dict.__getitem__

    def flatten(obj: Any) -> tuple[list[Any], tuple[Any, list[Any], State, Any], list[Any]]:
        keys = list(keys_of(obj))
        entries = keys.copy()
        children, state = _with_state(obj, [get(obj, k) for k in keys], entries)
        olds = children if state.names else None
        return children, (obj, keys, state, olds), entries

    def unflatten(meta: tuple[Any, list[Any], State, Any], children: Any) -> Any:
        obj, keys, state, olds = meta
        children = _shared(olds, children)
        n = len(keys)
        new: Any = base.__new__(cls)  # type: ignore[call-overload]
        if base is collections.defaultdict:
            object.__setattr__(new, "default_factory", obj.default_factory)
        if base is collections.OrderedDict:
            setitem = collections.OrderedDict.__setitem__
            for key, value in zip(keys, children[:n], strict=True):
                setitem(new, key, value)
        else:
            dict.update(new, zip(keys, children[:n], strict=True))
        _restore_state(obj, new, state, children[n:])
        return new

    return Recipe(flatten, unflatten, ItemOrAttrEntry)


def _list(cls: type) -> Recipe:
    def flatten(obj: Any) -> tuple[list[Any], Any, list[Any]]:
        items = list.copy(obj)
        entries: list[Any] = list(range(len(items)))
        children, state = _with_state(obj, items, entries)
        olds = children if state.names else None
        return children, (obj, len(items), state, olds), entries

    def unflatten(meta: tuple[Any, int, State, Any], children: Any) -> Any:
        obj, n, state, olds = meta
        children = _shared(olds, children)
        new: Any = list.__new__(cls)
        list.extend(new, children[:n])
        _restore_state(obj, new, state, children[n:])
        return new

    return Recipe(flatten, unflatten, ItemOrAttrEntry)


def _tuple(cls: type) -> Recipe:
    def flatten(obj: Any) -> tuple[list[Any], Any, list[Any]]:
        items = list(tuple.__iter__(obj))
        entries: list[Any] = list(range(len(items)))
        children, state = _with_state(obj, items, entries)
        olds = children if state.names else None
        return children, (obj, len(items), state, olds), entries

    def unflatten(meta: tuple[Any, int, State, Any], children: Any) -> Any:
        obj, n, state, olds = meta
        children = _shared(olds, children)
        # tuple.__new__, not cls(...): a namedtuple subclass's __new__ may transform
        # its arguments, which would transform the values a second time.
        new: Any = tuple.__new__(cls, children[:n])
        _restore_state(obj, new, state, children[n:])
        return new

    return Recipe(flatten, unflatten, ItemOrAttrEntry)


def _deque(cls: type) -> Recipe:
    def flatten(obj: Any) -> tuple[list[Any], Any, list[Any]]:
        items = list(collections.deque.__iter__(obj))
        entries: list[Any] = list(range(len(items)))
        children, state = _with_state(obj, items, entries)
        olds = children if state.names else None
        return children, (obj, len(items), state, olds), entries

    def unflatten(meta: tuple[Any, int, State, Any], children: Any) -> Any:
        obj, n, state, olds = meta
        children = _shared(olds, children)
        new: Any = collections.deque.__new__(cls)
        collections.deque.__init__(new, children[:n], collections.deque.maxlen.__get__(obj))
        _restore_state(obj, new, state, children[n:])
        return new

    return Recipe(flatten, unflatten, ItemOrAttrEntry)


def _stateless_mapping(cls: type) -> Recipe:
    def flatten(obj: Any) -> tuple[list[Any], tuple[Any, list[Any], list[Any]], list[Any]]:
        keys = list(obj)
        values = [obj[k] for k in keys]
        return values, (obj, keys, values), keys

    def rebuild_mapping(meta: tuple[Any, list[Any], list[Any]], values: Any) -> Any:
        obj, keys, old = meta
        if all(map(operator.is_, values, old)):
            return obj  # nothing under it changed: no need to trust its constructor
        items = dict(zip(keys, values, strict=True))
        try:
            new: Any = cls(items)
        except Exception as exc:
            raise RebuildRefused(
                f"{cls.__name__}(dict_of_items) raised {type(exc).__name__}: {exc}"
            ) from exc
        if type(new) is not cls or not _holds_exactly(new, items):
            raise RebuildRefused(
                f"{cls.__name__}(dict_of_items) did not return a {cls.__name__} holding "
                "exactly the moved items"
            )
        return new

    return Recipe(flatten, rebuild_mapping, ItemOrAttrEntry, constructs=True)


def _holds_exactly(mapping: Any, items: dict[Any, Any]) -> bool:
    """Whether ``mapping`` maps each key of ``items`` to that very object, and nothing more."""
    try:
        return len(mapping) == len(items) and all(mapping[k] is v for k, v in items.items())
    except Exception:  # a key it does not hold, or a mapping that cannot be read back
        return False
