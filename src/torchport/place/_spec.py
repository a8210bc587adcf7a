"""What optree walks by itself and would rebuild wrong, found in the structure it returns.

optree walks namedtuples and ``OrderedDict``s natively, before the walker can see
them, and gets two things wrong for a batch:

* it rebuilds a namedtuple by calling its class, so a subclass whose ``__new__``
  (or ``__init__``) transforms its arguments transforms the moved values a second
  time, and attributes set on an instance of a namedtuple subclass are lost.
  Such classes are registered in the walker's namespace (rebuilt with
  ``tuple.__new__`` and their attributes, ``place/_containers.py``) the first time
  a structure holds one, and the batch is flattened again;
* it lists an ``OrderedDict``'s items in the order of the underlying dict, which
  ``move_to_end`` does not change, and rebuilds it in that order. The paths to the
  ``OrderedDict`` nodes of a structure are noted once; on each call the ones whose
  order differs are noted, and the rebuilt ``OrderedDict`` is put back in order.

A structure made only of optree's own nodes is scanned once and remembered (the
next batch of the same shape costs one dictionary lookup); one that holds nodes
the walker registered is scanned on every call, as their node data are objects
of that call. So is one whose mapping keys (or a ``defaultdict``'s factory) are
anything but plain values (``str``, numbers, ``bytes``, ``None``, tuples of them,
members of an ``Enum`` that lasts): a remembered structure holds its keys, and a
key may be a tensor, an object of the batch or a class made per batch.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Sequence
from typing import Any, NamedTuple

import optree

from torchport.place._containers import NAMESPACE
from torchport.place._copying import has_state
from torchport.place._lasting import forget_with, lasting
from torchport.place._mover_recipe import Opened

__all__ = ["PLAIN", "Notes", "Reorder", "notes_for", "reorders", "restore_order"]

_MISSING = object()
_MAX_REMEMBERED = 512
_BUILTIN_NODES = frozenset(
    {
        dict,
        list,
        tuple,
        collections.OrderedDict,
        collections.defaultdict,
        collections.deque,
        type(None),
    }
)
_NONE = type(None)
# Key types a remembered structure may hold: values that hold nothing else.
_VALUE_KEYS = frozenset({str, int, float, bool, bytes, complex, _NONE})
_KEYED = frozenset({dict, collections.OrderedDict, collections.defaultdict})
_PLAIN_NAMEDTUPLES: dict[type, bool] = {}


class Notes(NamedTuple):
    """What a structure needs beyond optree's own rebuild.

    Attributes:
        register: namedtuple classes the walker must rebuild itself.
        ordered: the path (entries from the root) to each ``OrderedDict`` node.
        custom: whether the structure holds nodes the walker registered (objects
            rebuilt by the walker's own recipes); False: optree's nodes only.
        movers: the node data (:class:`~torchport.place._mover_recipe.Opened`) of each
            object with its own ``.to`` in the structure, one per occurrence.
        leafless: whether a container in it holds no leaf (``[]``, ``{}``, ``[None]``):
            one such container held twice shows in no leaf, so the walker looks
            for repeated containers (``place/_sharing.py``).
    """

    register: tuple[type, ...]
    ordered: tuple[tuple[Any, ...], ...]
    custom: bool
    movers: tuple[Any, ...] = ()
    leafless: bool = False


class Reorder(NamedTuple):
    """An ``OrderedDict`` of this call whose order optree's rebuild would lose."""

    path: tuple[Any, ...]
    node: Any
    order: list[Any]


PLAIN = Notes((), (), custom=False)
"""The notes of a structure of optree's own nodes that it rebuilds faithfully."""
_CUSTOM = Notes((), (), custom=True)
_REMEMBERED: dict[Any, Notes] = {}
# The last structure found PLAIN (a one-entry cache in front of _REMEMBERED).
_LAST: list[Any] = [None]
forget_with(_PLAIN_NAMEDTUPLES, whole=(_REMEMBERED,), call=lambda cls: _LAST.__setitem__(0, None))


def notes_for(spec: optree.PyTreeSpec) -> Notes:
    """The notes of a structure (:data:`PLAIN` when optree alone rebuilds it faithfully).

    A training loop moves batches of one structure again and again: the last
    plain structure is compared first (one comparison, no hashing).
    """
    try:
        if spec == _LAST[0]:
            return PLAIN
        found: Notes | None = _REMEMBERED.get(spec)
    except Exception:  # a node's data compared badly (tensors as dict keys): scan it
        found = None
    if found is not None:
        if found is PLAIN:
            _LAST[0] = spec
        return found
    found, lasts = _scan(spec)
    # A structure holds its node types: one with a class made at run time (a namedtuple
    # made per batch) is scanned again each time rather than kept alive.
    if lasts and (found is PLAIN or (not found.custom and not found.register and not found.movers)):
        if len(_REMEMBERED) >= _MAX_REMEMBERED:
            _REMEMBERED.clear()
        _REMEMBERED[spec] = found
        if found is PLAIN:
            _LAST[0] = spec
    return found


def _scan(spec: optree.PyTreeSpec) -> tuple[Notes, bool]:
    """The notes of a structure, and whether every node type in it lasts (may be remembered)."""
    register: list[type] = []
    flags = {"ordered": False, "custom": False, "transient": False, "leafless": False}
    movers: list[Opened] = []

    def node(kind: Any, data: Any, children: Any) -> int:
        leaves: int = sum(children)
        if not leaves and kind is not _NONE:
            flags["leafless"] = True
        _note(kind, data)
        return leaves

    def _note(kind: Any, data: Any) -> None:
        # A class made at run time, or keys that are not plain values: not remembered.
        transient = kind not in _BUILTIN_NODES and not lasting(kind)
        if transient or (kind in _KEYED and not _keys_last(kind, data)):
            flags["transient"] = True
        if kind in _BUILTIN_NODES:
            if kind is collections.OrderedDict:
                flags["ordered"] = True
        elif _registered_here(kind):
            flags["custom"] = True
            if type(data) is Opened:
                movers.append(data)
        elif optree.is_namedtuple_class(kind):
            if not _plain_namedtuple(kind) and kind not in register:
                register.append(kind)
        elif not optree.is_structseq_class(kind):
            flags["custom"] = True

    spec.walk([1] * spec.num_leaves, node, None)
    ordered = tuple(_ordered_paths(spec, ())) if flags["ordered"] else ()
    lasts = not flags["transient"]
    if not register and not ordered and not movers and not flags["leafless"]:
        return (_CUSTOM if flags["custom"] else PLAIN), lasts
    notes = Notes(tuple(register), ordered, flags["custom"], tuple(movers), flags["leafless"])
    return notes, lasts


def _keys_last(kind: type, data: Any) -> bool:
    """Whether a mapping node's data (its keys; a ``defaultdict``'s factory and keys) may be kept.

    Only values that hold nothing else and outlive the batch: keeping a tensor key,
    an object of the batch or a class made per batch would keep them alive.
    """
    if kind is collections.defaultdict:
        factory, keys = data
        if factory is not None and not (isinstance(factory, type) and lasting(factory)):
            return False
    else:
        keys = data
    return all(map(_key_lasts, keys))


def _key_lasts(key: Any) -> bool:
    cls = type(key)
    if cls in _VALUE_KEYS:
        return True
    if cls is tuple:
        return all(map(_key_lasts, key))
    return isinstance(key, enum.Enum) and lasting(cls)


def _registered_here(kind: type) -> bool:
    """Whether ``kind`` is a node the walker registered (not one optree knows by itself)."""
    entry = optree.register_pytree_node.get(kind, namespace=NAMESPACE)
    return entry is not None and entry.namespace == NAMESPACE


def _ordered_paths(spec: optree.PyTreeSpec, prefix: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    if spec.is_leaf():
        return []
    found = [prefix] if spec.type is collections.OrderedDict else []
    children = spec.children()
    if children:
        one_level = spec.one_level()
        assert one_level is not None
        for child, accessor in zip(children, one_level.accessors(), strict=True):
            found.extend(_ordered_paths(child, (*prefix, *accessor)))
    return found


def _plain_namedtuple(cls: type) -> bool:
    """Whether optree's rebuild, ``cls(*fields)``, gives back exactly the fields and nothing less.

    True for a namedtuple class as ``collections.namedtuple`` or ``typing.NamedTuple``
    make it, and for subclasses that add neither ``__new__`` nor ``__init__`` nor
    room for attributes.
    """
    plain = _PLAIN_NAMEDTUPLES.get(cls)
    if plain is None:
        made = next((base for base in cls.__mro__ if "_make" in vars(base)), None)
        plain = made is not None and not has_state(cls)
        if plain:
            for base in cls.__mro__:
                if base is made:
                    break
                if "__new__" in vars(base) or "__init__" in vars(base):
                    plain = False
                    break
        if lasting(cls):
            _PLAIN_NAMEDTUPLES[cls] = plain
    return plain


def _follow(root: Any, path: Sequence[Any]) -> Any:
    node = root
    for entry in path:
        node = entry(node)
    return node


def reorders(obj: Any, notes: Notes) -> list[Reorder]:
    """The ``OrderedDict`` nodes of ``obj`` whose own order differs from the dict order."""
    found = []
    for path in notes.ordered:
        try:
            node = _follow(obj, path)
        except Exception:  # a view or a container that cannot be read back: nothing to fix
            continue
        if type(node) is collections.OrderedDict:
            order = list(node)
            if order != list(dict.keys(node)):
                found.append(Reorder(path, node, order))
    return found


def restore_order(result: Any, fixes: list[Reorder]) -> None:
    """Put each rebuilt ``OrderedDict`` of ``result`` in the order its input had."""
    for fix in fixes:
        try:
            node = _follow(result, fix.path)
        except Exception:
            continue
        if node is not fix.node and type(node) is collections.OrderedDict:
            for key in fix.order:
                node.move_to_end(key)
