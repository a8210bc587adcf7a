"""The container types the walker registers itself, each with how to list and rebuild it.

optree walks ``dict``, ``OrderedDict``, ``defaultdict``, ``list``, ``tuple``,
``deque``, namedtuples and structseqs on its own. Every other container a batch
may hold is registered by :func:`register` in torchport's private optree
namespace the first time the walker (``place/_tree.py``) meets it as a leaf.

Rebuilding never calls a type's constructor where the object's whole state can
be copied instead: a constructor may do more than store its arguments
(``__post_init__`` doubling a field, a subclass ``__init__`` that takes other
arguments, ``__new__`` re-nesting them), which would be a silently wrong batch.

How each kind is rebuilt:

* dataclass: a shallow copy (``copy.copy``, or its ``__dict__`` copied straight
  when nothing customises copying), then every field set with
  ``object.__setattr__``, frozen ones too (a non-frozen dataclass with its own
  ``__setattr__``, like transformers' ``ModelOutput``, has them set through it;
  dict items that mirrored a field's old value are given its new one);
* subclass of ``list``, ``tuple``, ``dict``, ``OrderedDict``, ``defaultdict``,
  ``deque``, ``set``, ``frozenset``: the base type's own ``__new__`` and methods
  (never the subclass's), then the instance's ``__dict__`` and slots copied;
* ``set``, ``frozenset``: ``set(items)``, ``frozenset(items)``;
* ``UserDict``, ``UserList``: a shallow copy with a new ``.data``, which is walked
  as the dict or list it is (so a HuggingFace ``BatchEncoding`` costs what a
  dict costs);
* ``ChainMap``: a shallow copy with new ``.maps``;
* ``MappingProxyType``: a new proxy over a rebuilt copy of the mapping it shows
  (the copy keeps that mapping's type);
* any other ``Mapping``: returned as it is when no value changed; otherwise
  ``type(m)(dict_of_items)``, checked to hold exactly the new values.

* ``torch.nn.utils.rnn.PackedSequence``: a namedtuple whose constructor refuses
  ``batch_sizes`` off the CPU, so it is not walked: it becomes one leaf, a
  :class:`PackedSequenceMover`, and moves with its own ``.to`` (registered by
  :func:`register_known`, since optree walks namedtuples before the walker
  could see one).

A set whose items become equal once rebuilt (so it would shrink) is an error.
A dataclass's tensors set directly as attributes after construction
(``out.extra = t``) are children too, so they move with the fields. In every
copy, other instance attributes are carried over as they are (not walked),
except ``functools.cached_property`` values, which are dropped so they are
computed again from the moved children. A rebuild that
cannot be done faithfully raises :class:`RebuildRefused`; the walker turns it
into an ``UnsupportedBatchError`` naming the path.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import operator
import types
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import optree
import torch

from torchport.place._copying import (
    RebuildRefused,
    copied_as_dict,
    copy_state,
    drop_cached,
    shallow_copy,
)

__all__ = [
    "GENERIC_MAPPINGS",
    "NAMESPACE",
    "PackedSequenceMover",
    "RebuildRefused",
    "register",
    "register_known",
    "walked_before_to",
]

# torchport's private optree namespace: optree's global registry and torch's pytree
# registry are left as they are.
NAMESPACE = "torchport"

_MISSING = object()
_Flatten = Callable[[Any], tuple[Any, Any, Any]]
_Unflatten = Callable[[Any, Any], Any]


class _Recipe(NamedTuple):
    flatten: _Flatten
    unflatten: _Unflatten
    entry: type[optree.PyTreeEntry]
    constructs: bool = False  # rebuilt through its constructor (a generic Mapping)


# Mapping types rebuilt through their constructor; skip_keys looks inside them.
GENERIC_MAPPINGS: set[type] = set()


class SetItemEntry(optree.PyTreeEntry):
    """The i-th item of a set in its iteration order, written ``list(s)[i]``."""

    __slots__ = ()

    def __call__(self, obj: Any, /) -> Any:
        return list(obj)[self.entry]

    def codify(self, /, node: str = "") -> str:
        return f"list({node})[{self.entry}]"


class ViewEntry(optree.PyTreeEntry):
    """From a read-only mapping view to (a copy of) the mapping it shows; adds nothing to a path."""

    __slots__ = ()

    def __call__(self, obj: Any, /) -> Any:
        return dict(obj)

    def codify(self, /, node: str = "") -> str:
        return node


class PackedSequenceMover:
    """A leaf standing in for a ``PackedSequence``, so that the mover calls its ``.to``."""

    __slots__ = ("packed",)

    def __init__(self, packed: torch.nn.utils.rnn.PackedSequence) -> None:
        self.packed = packed

    def to(
        self, device: torch.device, *, non_blocking: bool = False, dtype: torch.dtype | None = None
    ) -> PackedSequenceMover:
        """Move with ``PackedSequence.to``: ``batch_sizes`` stays on the CPU, as RNNs need.

        Casts ``data`` to ``dtype`` only when it is floating, like every tensor of a batch.
        """
        packed: Any = self.packed  # its .to is typed as Tensor.to's first overload only
        cast = dtype if dtype is not None and packed.data.is_floating_point() else None
        return PackedSequenceMover(packed.to(device=device, dtype=cast, non_blocking=non_blocking))


def register_known(namespace: str) -> None:
    """Register the types that must be registered before optree first walks them."""
    cls = torch.nn.utils.rnn.PackedSequence
    with warnings.catch_warnings():
        # optree warns that this overrides its namedtuple handling: that is the point.
        warnings.simplefilter("ignore", UserWarning)
        optree.register_pytree_node(
            cls,
            _hold_packed,
            _release_packed,
            path_entry_type=ViewEntry,
            namespace=namespace,
        )


def _hold_packed(packed: Any) -> tuple[tuple[PackedSequenceMover], None, tuple[None]]:
    return (PackedSequenceMover(packed),), None, (None,)


def _release_packed(_: Any, children: Any) -> Any:
    return children[0].packed


def walked_before_to(cls: type) -> bool:
    """Whether ``cls`` is walked even though it has a ``.to`` method.

    A ``UserDict``/``UserList`` keeps all its items in ``.data``, so walking it
    is exact, leaves the input unmodified (``BatchEncoding.to`` moves in place)
    and lets its tensors take the batch's fast path (packing, async copies).
    """
    return issubclass(cls, collections.UserDict | collections.UserList)


def register(cls: type, namespace: str) -> bool:
    """Register ``cls`` as an optree node in ``namespace`` if it is a container; say whether."""
    recipe = _recipe(cls)
    if recipe is None:
        return False
    if recipe.constructs:
        # Before optree walks it, so that skip_keys looks inside from the first walk on
        # (a leaf listed here is harmless: its values are not leaves).
        GENERIC_MAPPINGS.add(cls)
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


def _recipe(cls: type) -> _Recipe | None:
    """How to take ``cls`` apart and put it together again; None for a leaf type."""
    if issubclass(cls, str | bytes | bytearray | torch.Size | enum.Enum):
        return None  # values, not containers (an Enum member must stay the one member)
    if optree.is_namedtuple_class(cls):
        return None
    if dataclasses.is_dataclass(cls):
        return _dataclass(cls)
    if issubclass(cls, collections.UserDict | collections.UserList):
        return _attribute_child(cls, "data")
    if issubclass(cls, collections.ChainMap):
        return _attribute_child(cls, "maps")
    if cls is types.MappingProxyType:
        return _Recipe(_flatten_view, _rebuild_view, ViewEntry)
    if issubclass(cls, set | frozenset):
        return _set(cls)
    if cls in (list, tuple, dict, collections.OrderedDict, collections.defaultdict):
        return None  # optree's own; reached only as a value kept by skip_keys
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
    if issubclass(cls, Mapping):
        return _generic_mapping(cls)
    return None


# --- the recipes -------------------------------------------------------------------------


def _dataclass(cls: type) -> _Recipe:
    names = tuple(f.name for f in dataclasses.fields(cls))
    field_names = frozenset(names)
    params = getattr(cls, "__dataclass_params__", None)
    frozen = bool(params is not None and params.frozen)
    # A non-frozen dataclass with its own __setattr__ (transformers' ModelOutput mirrors
    # each field in a dict item) keeps its invariants only if fields are set through it.
    own_setattr = not frozen and getattr(cls, "__setattr__", None) is not object.__setattr__
    in_dict = not own_setattr and copied_as_dict(cls, names)
    # A dataclass that is also a dict may mirror fields in items that its copy still
    # holds with the old values.
    setitem: Any = None
    if issubclass(cls, dict):
        od = issubclass(cls, collections.OrderedDict)
        setitem = collections.OrderedDict.__setitem__ if od else dict.__setitem__

    def flatten(obj: Any) -> tuple[list[Any], tuple[Any, tuple[str, ...], list[Any]], Any]:
        values = []
        present = []
        for name in names:
            # A field with init=False and no default may never have been set.
            value = getattr(obj, name, _MISSING)
            if value is not _MISSING:
                values.append(value)
                present.append(name)
        # A tensor set on the instance after construction (`out.extra = t`) moves with
        # the fields: left behind, it would be a batch half on the old device.
        state = getattr(obj, "__dict__", None)
        if state:
            for name, value in state.items():
                if isinstance(value, torch.Tensor) and name not in field_names:
                    values.append(value)
                    present.append(name)
        fields = tuple(present)
        return values, (obj, fields, values), fields

    def unflatten(meta: tuple[Any, tuple[str, ...], list[Any]], values: Any) -> Any:
        obj, fields, old = meta
        # No __init__, so no __post_init__ and no lost attributes set after construction.
        if in_dict:  # what copy.copy would do, without its generic machinery
            new: Any = object.__new__(cls)
            state = new.__dict__
            state.update(obj.__dict__)
            state.update(zip(fields, values, strict=True))  # frozen ones too
        else:
            new = shallow_copy(obj)
            assign = setattr if own_setattr else object.__setattr__  # object's: frozen too
            for name, value in zip(fields, values, strict=True):
                assign(new, name, value)
            if setitem is not None:
                for name, before, value in zip(fields, old, values, strict=True):
                    if dict.get(new, name, _MISSING) is before and value is not before:
                        setitem(new, name, value)
        if hasattr(new, "__dict__"):
            drop_cached(cls, new)
        return new

    return _Recipe(flatten, unflatten, optree.DataclassEntry)


def _attribute_child(cls: type, attribute: str) -> _Recipe:
    """One child, the attribute that holds all the items (``UserDict.data``, ``ChainMap.maps``)."""
    # The base classes' own __copy__ is replaced by the copy below (ChainMap's calls
    # the constructor); a subclass's own __copy__ is honoured.
    own_copy = getattr(cls, "__copy__", None) not in (
        collections.UserDict.__copy__,
        collections.UserList.__copy__,
        vars(collections.ChainMap)["__copy__"],
        None,
    )

    def flatten(obj: Any) -> tuple[list[Any], Any, tuple[str]]:
        return [vars(obj)[attribute]], obj, (attribute,)

    def unflatten(obj: Any, children: Any) -> Any:
        if own_copy:
            new = shallow_copy(obj)
        else:  # what UserDict.__copy__ does, minus copying the items we replace
            new = object.__new__(cls)
            copy_state(obj, new)
        vars(new)[attribute] = children[0]
        return new

    return _Recipe(flatten, unflatten, optree.GetAttrEntry)


def _flatten_view(obj: types.MappingProxyType[Any, Any]) -> tuple[list[Any], None, tuple[None]]:
    try:
        # The viewed mapping's own copy keeps its type (OrderedDict, defaultdict, ...).
        inner = obj.copy()
    except Exception:
        inner = dict(obj)
    if not isinstance(inner, Mapping):
        inner = dict(obj)
    return [inner], None, (None,)


def _rebuild_view(_: None, children: Any) -> types.MappingProxyType[Any, Any]:
    return types.MappingProxyType(children[0])


def _set(cls: type) -> _Recipe:
    base: Any = frozenset if issubclass(cls, frozenset) else set

    def flatten(obj: Any) -> tuple[list[Any], Any, range]:
        items = list(base.__iter__(obj))
        return items, obj, range(len(items))

    def unflatten(obj: Any, values: Any) -> Any:
        if cls is base:
            new = base(values)
        elif base is frozenset:
            new = frozenset.__new__(cls, values)
            copy_state(obj, new)
        else:
            new = set.__new__(cls)
            set.update(new, values)
            copy_state(obj, new)
        if len(new) != len(values):
            raise RebuildRefused(
                f"its {len(values)} items became {len(new)}: some compare equal once moved"
            )
        return new

    return _Recipe(flatten, unflatten, SetItemEntry)


def _dict(cls: type, base: type) -> _Recipe:
    # OrderedDict keeps its own order (move_to_end), which dict.keys does not see.
    keys_of = collections.OrderedDict.keys if base is collections.OrderedDict else dict.keys
    get = dict.__getitem__

    def flatten(obj: Any) -> tuple[list[Any], tuple[Any, list[Any]], list[Any]]:
        keys = list(keys_of(obj))
        return [get(obj, k) for k in keys], (obj, keys), keys

    def unflatten(meta: tuple[Any, list[Any]], values: Any) -> Any:
        obj, keys = meta
        new: Any = base.__new__(cls)  # type: ignore[call-overload]
        if base is collections.defaultdict:
            object.__setattr__(new, "default_factory", obj.default_factory)
        if base is collections.OrderedDict:
            setitem = collections.OrderedDict.__setitem__
            for key, value in zip(keys, values, strict=True):
                setitem(new, key, value)
        else:
            dict.update(new, zip(keys, values, strict=True))
        copy_state(obj, new)
        return new

    return _Recipe(flatten, unflatten, optree.MappingEntry)


def _list(cls: type) -> _Recipe:
    def flatten(obj: Any) -> tuple[list[Any], Any, None]:
        return list.copy(obj), obj, None

    def unflatten(obj: Any, values: Any) -> Any:
        new: Any = list.__new__(cls)
        list.extend(new, values)
        copy_state(obj, new)
        return new

    return _Recipe(flatten, unflatten, optree.SequenceEntry)


def _tuple(cls: type) -> _Recipe:
    def flatten(obj: Any) -> tuple[Any, Any, None]:
        return tuple.__getitem__(obj, slice(None)), obj, None

    def unflatten(obj: Any, values: Any) -> Any:
        new: Any = tuple.__new__(cls, values)
        copy_state(obj, new)
        return new

    return _Recipe(flatten, unflatten, optree.SequenceEntry)


def _deque(cls: type) -> _Recipe:
    def flatten(obj: Any) -> tuple[list[Any], Any, None]:
        return list(collections.deque.__iter__(obj)), obj, None

    def unflatten(obj: Any, values: Any) -> Any:
        new: Any = collections.deque.__new__(cls)
        collections.deque.__init__(new, values, collections.deque.maxlen.__get__(obj))
        copy_state(obj, new)
        return new

    return _Recipe(flatten, unflatten, optree.SequenceEntry)


def _generic_mapping(cls: type) -> _Recipe:
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

    return _Recipe(flatten, rebuild_mapping, optree.MappingEntry, constructs=True)


def _holds_exactly(mapping: Any, items: dict[Any, Any]) -> bool:
    """Whether ``mapping`` maps each key of ``items`` to that very object, and nothing more."""
    try:
        return len(mapping) == len(items) and all(mapping[k] is v for k, v in items.items())
    except Exception:  # a key it does not hold, or a mapping that cannot be read back
        return False
