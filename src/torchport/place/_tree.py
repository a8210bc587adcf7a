"""The tree walker: finds the tensors in a nested batch and rebuilds the batch around new ones.

Code that moves or inspects a batch goes through :func:`flatten_batch`
(``to_device``, ``DeviceLoader``) or :func:`flatten_tensors` /
:func:`map_tensors` (the module mover's check for unregistered tensor
attributes), so that every part agrees on what a batch may hold. (``strict()``
names the culprit of a device mismatch by looking two levels into an op's
arguments on its own; it moves and rebuilds nothing.)

The walk itself is optree's C++ flatten and unflatten. optree already knows
``dict``, ``OrderedDict``, ``defaultdict``, ``list``, ``tuple``, ``deque``,
namedtuples and structseqs; the first time a batch holds another container that
optree treats as a leaf (a dataclass, a subclass of a builtin container, a set, a
``UserDict``, any ``Mapping``: the list and how each is rebuilt are in
``place/_containers.py``), its type is registered in the private
``"torchport"`` optree namespace (the global optree registry and torch's own
pytree registry are left alone) and the batch is flattened again. Leaves are
classified once per type; after that a batch of builtin containers costs one C++
flatten, a few C-level passes over the leaves (``map``, ``set``,
``itertools.compress``: no Python bytecode per leaf) and one C++ unflatten.

Objects with a ``.to`` method (other than tensors, and other than ``UserDict``
and ``UserList``, which are walked) are leaves: the mover calls their ``.to``.
Every other leaf comes back as it is. When optree fails (a cycle, too deep a
batch, a container that cannot be read or rebuilt), ``place/_locate.py`` walks
the batch again to name the culprit's path in the error.

Namedtuples are rebuilt by optree, which calls the class with the fields
(``PackedSequence`` excepted: it moves with its own ``.to``). A namedtuple
subclass whose ``__new__`` takes other arguments raises ``UnsupportedBatchError``
at rebuild; one that takes the same arguments and changes them, or attributes set
on a namedtuple subclass instance, are not detected: optree walks namedtuples
before the walker can see their type, and checking each node per call would
cost the common batch Python work per node.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from typing import Any

import optree
import torch

from torchport.errors import ConfigError, UnsupportedBatchError
from torchport.place._containers import (
    GENERIC_MAPPINGS,
    NAMESPACE,
    register,
    register_known,
    walked_before_to,
)
from torchport.place._locate import (
    ROOT,
    flatten_failure_message,
    rebuild_located,
    recursion_message,
)

__all__ = [
    "BatchLayout",
    "Rebuild",
    "flatten_batch",
    "flatten_tensors",
    "map_tensors",
    "skip_key_set",
]

_NAMESPACE = NAMESPACE

# What a leaf of a given type is. Classified once per type, then a dict lookup.
# _PLAIN must stay the only falsy kind: itertools.compress picks tensors by truth.
_PLAIN = 0  # returned as it is
_TENSOR = 1  # a torch.Tensor (or subclass)
_MOVER = 2  # has a .to method; the mover calls it
_NEW_NODE = 3  # a container type just registered: flatten again

_ONLY_TENSORS = {_TENSOR}
# Leaf types that are tensors without asking _KIND: the common batch's fast check.
_PLAIN_TENSOR_TYPES = frozenset({torch.Tensor, torch.nn.Parameter})
_KIND: dict[type, int] = {torch.Tensor: _TENSOR, torch.nn.Parameter: _TENSOR}
_MISSING = object()
_MAX_REFLATTEN = 64

register_known(_NAMESPACE)

Rebuild = Callable[[Sequence[torch.Tensor]], object]
"""Called with one new tensor per distinct tensor, returns the rebuilt batch."""


def flatten_tensors(
    obj: object, *, skip_keys: Hashable | Collection[Hashable] = ()
) -> tuple[list[torch.Tensor], Rebuild]:
    """Find every distinct tensor in a nested batch.

    Args:
        obj: A tensor, a container of them at any depth, or any other object.
        skip_keys: A key (a str is one key) or a collection of keys: values under
            them in any mapping (dict, ``UserDict``, other ``Mapping``), at any
            depth, are left as they are and their tensors are not listed.

    Returns:
        The distinct tensors (deduplicated by identity, in the walk's first-seen
        order) and a function that takes one replacement per listed tensor and
        returns a batch of the same structure with every occurrence of each
        tensor replaced, so tensors shared inside the batch stay shared. Objects
        with a ``.to`` method (a ``UserDict`` or ``UserList`` excepted: those are
        walked) are leaves and come back unchanged.

    Raises:
        UnsupportedBatchError: The batch holds a cycle or a container whose
            items cannot be read, or (when the rebuild function is called) one
            that cannot be rebuilt; the message names its path, e.g.
            ``batch['meta'][2]``.
        ConfigError: ``skip_keys`` is neither a key nor a collection of keys.
    """
    layout = flatten_batch(obj, skip_keys=skip_keys)
    return layout.tensors, layout.rebuild


def map_tensors(
    fn: Callable[[torch.Tensor], torch.Tensor],
    obj: object,
    *,
    skip_keys: Hashable | Collection[Hashable] = (),
) -> object:
    """Apply ``fn`` once to each distinct tensor of a batch and rebuild the batch.

    Args:
        fn: Called once per distinct tensor.
        obj: The batch; it is not modified.
        skip_keys: As for :func:`flatten_tensors`.

    Returns:
        A batch of the same structure holding ``fn``'s results.

    Raises:
        UnsupportedBatchError: See :func:`flatten_tensors`.
    """
    layout = flatten_batch(obj, skip_keys=skip_keys)
    return layout.rebuild([fn(t) for t in layout.tensors])


def skip_key_set(skip_keys: object) -> frozenset[Hashable]:
    """Read a ``skip_keys`` argument as a set of keys.

    One str (or bytes) is one key, not its characters (``"ids"`` is not
    ``{"i", "d", "s"}``); any other iterable is a collection of keys.

    Raises:
        ConfigError: ``skip_keys`` is not iterable, or holds an unhashable item.
    """
    if isinstance(skip_keys, str | bytes):
        return frozenset((skip_keys,))
    if not isinstance(skip_keys, Iterable) or isinstance(skip_keys, torch.Tensor):
        raise ConfigError(
            f"skip_keys={skip_keys!r} (of type {type(skip_keys).__name__}) is neither a str "
            f"nor a collection of keys; pass skip_keys=[{skip_keys!r}] to skip that one key"
        )
    try:
        return frozenset(skip_keys)
    except TypeError as exc:
        raise ConfigError(
            f"skip_keys={skip_keys!r} holds an item that cannot be a dict key ({exc}); "
            "pass a key or a collection of keys, e.g. skip_keys='ids' or "
            "skip_keys=('ids', 'meta')"
        ) from exc


class BatchLayout:
    """A flattened batch: its distinct tensors, its ``.to`` objects and how to rebuild it."""

    __slots__ = (
        "_leaves",
        "_mover_index",
        "_mover_pos",
        "_spec",
        "_tensor_index",
        "_tensor_pos",
        "movers",
        "tensors",
    )

    def __init__(
        self,
        leaves: list[Any],
        spec: optree.PyTreeSpec,
        tensors: list[torch.Tensor],
        tensor_pos: list[int] | None = None,
        tensor_index: list[int] | None = None,
        movers: list[Any] | None = None,
        mover_pos: list[int] | None = None,
        mover_index: list[int] | None = None,
    ) -> None:
        self._leaves = leaves
        self._spec = spec
        self.tensors = tensors
        # Leaf positions holding tensors; None when the leaves are exactly `tensors`.
        self._tensor_pos = tensor_pos
        # Which distinct tensor each of those positions holds; None when all differ.
        self._tensor_index = tensor_index
        self.movers: list[Any] = movers if movers is not None else []
        self._mover_pos = mover_pos
        self._mover_index = mover_index

    def rebuild(
        self, new_tensors: Sequence[torch.Tensor], new_movers: Sequence[Any] | None = None
    ) -> object:
        """Return the batch with ``tensors`` (and ``movers``, if given) replaced one for one.

        Raises:
            UnsupportedBatchError: A container in the batch rejects its own
                contents; the message names its path and type.
        """
        if len(new_tensors) != len(self.tensors):
            raise ValueError(f"expected {len(self.tensors)} tensors, got {len(new_tensors)}")
        positions = self._tensor_pos
        if positions is None:
            leaves: list[Any] = new_tensors if type(new_tensors) is list else list(new_tensors)
        else:
            leaves = self._leaves.copy()
            index = self._tensor_index
            values = new_tensors if index is None else map(new_tensors.__getitem__, index)
            # Assign at C speed: the map runs setitem, the zero-length deque drains it.
            collections.deque(map(leaves.__setitem__, positions, values), maxlen=0)
            if new_movers is not None and self._mover_pos and self._mover_index is not None:
                moved = map(new_movers.__getitem__, self._mover_index)
                collections.deque(map(leaves.__setitem__, self._mover_pos, moved), maxlen=0)
        try:
            return optree.tree_unflatten(self._spec, leaves)
        except UnsupportedBatchError:
            raise
        except Exception as exc:  # any constructor may raise anything; say where
            rebuild_located(self._spec, leaves, ROOT)
            raise UnsupportedBatchError(
                f"could not rebuild the batch: {type(exc).__name__}: {exc}"
            ) from exc


def flatten_batch(obj: object, *, skip_keys: Hashable | Collection[Hashable] = ()) -> BatchLayout:
    """Flatten a batch into its distinct tensors, its ``.to`` objects and a rebuilder.

    The mover and the loader use this directly; other code calls :func:`flatten_tensors`.

    Raises:
        UnsupportedBatchError: The batch contains itself (a cycle), is nested
            deeper than optree's recursion limit, or holds a container that
            fails when its items are read; the message names the path.
        ConfigError: ``skip_keys`` is neither a key nor a collection of keys.
    """
    if not skip_keys:
        leaves, spec = _flatten(obj)
        # The common batch, decided at C speed: plain tensors, each met once.
        n = len(leaves)
        if _PLAIN_TENSOR_TYPES.issuperset(map(type, leaves)) and len(set(map(id, leaves))) == n:
            return BatchLayout(leaves, spec, leaves)
        return _classified(obj, None, (leaves, spec))
    return _classified(obj, skip_key_set(skip_keys), None)


def _flatten(obj: object, skip: frozenset[Hashable] | None = None) -> tuple[Any, ...]:
    """optree's flatten (``(leaves, spec)``, or with ``skip``: ``(leaves, spec, kept)``)."""
    try:
        if skip:
            return _flatten_skipping(obj, skip)
        return optree.tree_flatten(obj, namespace=_NAMESPACE)  # type: ignore[arg-type]
    except RecursionError as exc:
        raise UnsupportedBatchError(recursion_message(obj)) from exc
    except Exception as exc:  # a container's own iteration or item access failed
        raise UnsupportedBatchError(flatten_failure_message(obj, exc)) from exc


def _classified(
    obj: object,
    skip: frozenset[Hashable] | None,
    first: tuple[list[Any], optree.PyTreeSpec] | None,
) -> BatchLayout:
    """Classify the leaves and build the layout (from ``first``, a flatten already done).

    Flattens again each time a new container type is registered.
    """
    kind_of = _KIND.get
    for _ in range(_MAX_REFLATTEN):
        kept: set[int] = set()  # leaf positions under a skipped key
        if first is not None:
            leaves, spec = first
            first = None
        elif skip:
            leaves, spec, kept = _flatten(obj, skip)
        else:
            leaves, spec = _flatten(obj)
        # Per-leaf work runs in C (map, set, compress); Python loops only over
        # types seen for the first time and over repeated objects.
        kinds = list(map(kind_of, map(type, leaves)))
        present = set(kinds)
        if None in present:
            unknown = {type(leaf) for leaf, kind in zip(leaves, kinds, strict=True) if kind is None}
            if _NEW_NODE in [_classify(cls) for cls in unknown]:
                continue  # a container type was registered: flatten again
            kinds = list(map(kind_of, map(type, leaves)))
            present = set(kinds)
        for pos in kept:
            kinds[pos] = _PLAIN
        if kept:
            present = set(kinds)
        n = len(leaves)
        if present == _ONLY_TENSORS and len(set(map(id, leaves))) == n:
            return BatchLayout(leaves, spec, leaves)
        if _MOVER not in present:
            # Only _TENSOR is truthy among the kinds left, so compress picks the tensors.
            tensors, index = _distinct(list(itertools.compress(leaves, kinds)))
            positions = list(itertools.compress(range(n), kinds))
            return BatchLayout(leaves, spec, tensors, positions, index)
        positions = list(itertools.compress(range(n), map(_TENSOR.__eq__, kinds)))
        tensors, index = _distinct(list(map(leaves.__getitem__, positions)))
        mover_pos = list(itertools.compress(range(n), map(_MOVER.__eq__, kinds)))
        movers, mover_index = _distinct(list(map(leaves.__getitem__, mover_pos)))
        if mover_index is None:
            mover_index = list(range(len(movers)))
        return BatchLayout(leaves, spec, tensors, positions, index, movers, mover_pos, mover_index)
    raise UnsupportedBatchError(  # pragma: no cover - needs 64 levels of new container types
        "the batch nests more new container types than torchport registers in one call; "
        "call to_device again or simplify the batch"
    )


def _distinct(found: list[Any]) -> tuple[list[Any], list[int] | None]:
    """Deduplicate by identity: (distinct objects, index of each input) or (found, None)."""
    if len(set(map(id, found))) == len(found):
        return found, None
    distinct: list[Any] = []
    seen: dict[int, int] = {}
    index = []
    for obj in found:
        i = seen.get(id(obj))
        if i is None:
            i = seen[id(obj)] = len(distinct)
            distinct.append(obj)
        index.append(i)
    return distinct, index


def _flatten_skipping(
    obj: object, skip: frozenset[Hashable]
) -> tuple[list[Any], optree.PyTreeSpec, set[int]]:
    """Flatten with the values under keys in ``skip`` as leaves; also return their positions.

    optree visits a mapping before its values, so the ``is_leaf`` predicate lets each
    dict (``UserDict.data``, a ``MappingProxyType``'s mapping and a ``ChainMap``'s
    maps are dicts too) and each other ``Mapping`` the walker rebuilds record the
    identities of its skipped values and then stops at them; the
    leaf paths tell a skipped value from the same object met elsewhere. (A
    container that sits both under a skipped key and elsewhere is left as it is
    in both places.)
    """
    marked: set[int] = set()

    def is_leaf(node: Any) -> bool:
        if id(node) in marked:
            return True
        if isinstance(node, dict) or type(node) in GENERIC_MAPPINGS:
            for key in skip:
                value = node.get(key, _MISSING)
                if value is not _MISSING:
                    marked.add(id(value))
        return False

    paths, leaves, spec = optree.tree_flatten_with_path(
        obj,  # type: ignore[arg-type]
        is_leaf,
        namespace=_NAMESPACE,
    )
    kept = {
        pos
        for pos, (path, leaf) in enumerate(zip(paths, leaves, strict=True))
        if path and id(leaf) in marked and path[-1] in skip
    }
    return leaves, spec, kept


def _classify(cls: type) -> int:
    """Decide what leaves of type ``cls`` are, registering container types on first sight."""
    if issubclass(cls, torch.Tensor):
        kind = _TENSOR
    elif optree.register_pytree_node.get(cls, namespace=_NAMESPACE) is not None:
        # A container met as a leaf: it sat under a skipped key, so it stays as it is.
        kind = _PLAIN
    elif walked_before_to(cls) and register(cls, _NAMESPACE):
        return _NEW_NODE  # not cached: once registered, optree no longer yields it as a leaf
    elif callable(getattr(cls, "to", None)) and not issubclass(cls, type):
        kind = _MOVER
    elif register(cls, _NAMESPACE):
        return _NEW_NODE
    else:
        kind = _PLAIN
    _KIND[cls] = kind
    return kind
