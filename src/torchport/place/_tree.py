"""The tree walker: finds the tensors in a batch and rebuilds the batch around new ones.

Code that moves or inspects a batch goes through :func:`flatten_batch`
(``to_device``, ``DeviceLoader``) or :func:`flatten_tensors` /
:func:`map_tensors` (the module mover's check for unregistered tensor
attributes), so that every part agrees on what a batch may hold. (``strict()``
names the culprit of a device mismatch by looking two levels into an op's
arguments on its own; it moves and rebuilds nothing.)

The invariant it serves: every tensor reachable from a batch (through
containers, their items and attributes, and the ``__dict__`` and ``__slots__``
of any object) is one of the listed tensors, so a rebuild around moved tensors
leaves none behind; an object that cannot be rebuilt faithfully is refused with
an ``UnsupportedBatchError`` naming its path. Tensors keep their sharing: each
distinct tensor is listed once and every occurrence gets its one replacement.

The walk itself is optree's C++ flatten and unflatten. optree already knows
``dict``, ``OrderedDict``, ``defaultdict``, ``list``, ``tuple``, ``deque``,
namedtuples and structseqs; ``place/_spec.py`` corrects the two it rebuilds
wrong (namedtuples with their own ``__new__`` or attributes, and the order of an
``OrderedDict`` after ``move_to_end``). The first time a batch holds another
type as a leaf, the walker decides once what that type is (``place/_leaf_kinds.py``)
and, for a container (``place/_containers.py``) or an object with state
(``place/_objects.py``, ``place/_mover_recipe.py``), registers it in the private
``"torchport"`` optree namespace (not optree's global one, not torch's pytree
registry) and flattens again. After that a batch of builtin containers costs one
C++ flatten, one lookup of its structure, a few C-level passes over the leaves
(``map``, ``set``, ``itertools.compress``: no Python bytecode per leaf) and one C++
unflatten; a container held twice is made one again by ``place/_sharing.py``.

Leaves end up as tensors, values (returned as the very object), or objects with
a ``.to`` but no state the walker can read, which the mover calls. Modules,
optimizers, LR schedulers and ``GradScaler``s are refused. When optree fails (a
cycle, too deep a batch, a container that cannot be read or rebuilt),
``place/_locate.py`` walks the batch again to name the culprit's path. Mapping
keys are not walked: a key is found by its hash, which a moved key would lose.
"""

from __future__ import annotations

import collections
import itertools
import sys
from collections.abc import Callable, Collection, Hashable, ItemsView, Sequence, ValuesView
from typing import Any

import optree
import torch

from torchport.errors import UnsupportedBatchError
from torchport.place._containers import NAMESPACE, container_recipe, register_known
from torchport.place._copying import has_state
from torchport.place._lasting import lasting
from torchport.place._layout import BatchLayout
from torchport.place._leaf_kinds import (
    INSPECT,
    KIND,
    LEAF_MOVER,
    NEW_NODE,
    OBJECT_NODES,
    ONLY_TENSORS,
    PLAIN,
    PLAIN_TENSOR_TYPES,
    REFUSED,
    TENSOR,
)
from torchport.place._locate import (
    ROOT,
    find_path,
    flatten_failure_message,
    recursion_message,
)
from torchport.place._mover_recipe import mark_own, mover_recipe, note_repeats
from torchport.place._objects import MOVER, WALKED, kind_of_object, object_recipe
from torchport.place._refusals import refusal
from torchport.place._registrations import close_walk, open_walk, register
from torchport.place._settled import ARRAY_TYPES, VALUE_TYPES
from torchport.place._sharing import repeats_nodes
from torchport.place._skip_keys import flatten_skipping, skip_key_set
from torchport.place._spec import PLAIN as PLAIN_NOTES
from torchport.place._spec import Notes, notes_for, reorders

__all__ = [
    "BatchLayout",
    "Rebuild",
    "flatten_batch",
    "flatten_tensors",
    "map_tensors",
    "skip_key_set",
    "tensors_inside",
]

_NAMESPACE = NAMESPACE

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
            them in any mapping, at any depth, are left as they are and their
            tensors are not listed.

    Returns:
        The distinct tensors (deduplicated by identity, in the walk's first-seen
        order) and a function that takes one replacement per listed tensor and
        returns a batch of the same structure with every occurrence of each
        tensor replaced, so tensors shared inside the batch stay shared. Objects
        with a ``.to`` method are rebuilt around their moved tensors without a
        call to ``.to``; those whose state cannot be read come back unchanged.

    Raises:
        UnsupportedBatchError: The batch holds a cycle, a module or optimizer, or
            a container whose items cannot be read, or (when the rebuild function
            is called) one that cannot be rebuilt; the message names its path,
            e.g. ``batch['meta'][2]``.
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


def flatten_batch(obj: object, *, skip_keys: Hashable | Collection[Hashable] = ()) -> BatchLayout:
    """Flatten a batch into its distinct tensors, its ``.to`` objects and a rebuilder.

    The mover and the loader use this directly; other code calls :func:`flatten_tensors`.

    Raises:
        UnsupportedBatchError: The batch contains itself (a cycle), is nested
            deeper than optree's recursion limit, holds a module, an optimizer, an
            LR scheduler or a ``GradScaler``, or holds a container that fails
            when its items are read; the message names the path.
        ConfigError: ``skip_keys`` is neither a key nor a collection of keys.
    """
    if not skip_keys:
        leaves, spec = _flatten(obj)
        # The common batch, decided at C speed: plain tensors, each met once, in a
        # structure optree rebuilds faithfully by itself.
        n = len(leaves)
        if (
            PLAIN_TENSOR_TYPES.issuperset(map(type, leaves))
            and len(set(map(id, leaves))) == n
            and notes_for(spec) is PLAIN_NOTES
        ):
            return BatchLayout(leaves, spec, leaves)
        return _classified(obj, None, (leaves, spec))
    return _classified(obj, skip_key_set(skip_keys), None)


def _flatten(obj: object, skip: frozenset[Hashable] | None = None) -> tuple[Any, ...]:
    """optree's flatten (``(leaves, spec)``, or with ``skip``: ``(leaves, spec, kept)``)."""
    try:
        if skip:
            return flatten_skipping(obj, skip, _NAMESPACE)
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

    The outermost walk of a thread owns the registrations of the classes that do
    not last (``place/_lasting.py``) made while it runs, nested walks included,
    and drops them when it ends: optree's structure keeps what it needs to rebuild
    the batch, and nothing keeps such a class alive after the call.
    """
    held = open_walk()
    if held is None:  # a walk inside this thread's running walk
        return _classify_leaves(obj, skip, first)
    try:
        return _classify_leaves(obj, skip, first)
    finally:
        close_walk(held)


def _classify_leaves(
    obj: object,
    skip: frozenset[Hashable] | None,
    first: tuple[list[Any], optree.PyTreeSpec] | None,
) -> BatchLayout:
    """See :func:`_classified`; flattens again each time a new node type is registered."""
    kind_of = KIND.get
    for _ in range(_MAX_REFLATTEN):
        kept: set[int] = set()  # leaf positions under a skipped key
        if first is not None:
            leaves, spec = first
            first = None
        elif skip:
            leaves, spec, kept = _flatten(obj, skip)
        else:
            leaves, spec = _flatten(obj)
        notes = notes_for(spec)
        if notes.register:
            for cls in notes.register:
                _register_node(cls)
            continue  # optree walked a namedtuple it must not rebuild: flatten again
        # Per-leaf work runs in C (map, set, compress); Python loops only over
        # types seen for the first time and over repeated objects.
        kinds = list(map(kind_of, map(type, leaves)))
        for pos in kept:
            kinds[pos] = PLAIN
        present = set(kinds)
        if None in present:
            unknown = {type(leaf) for leaf, kind in zip(leaves, kinds, strict=True) if kind is None}
            found = dict(zip(unknown, map(_classify, unknown), strict=True))
            if NEW_NODE in found.values():
                continue  # a node type was registered: flatten again
            # Kinds of classes that do not last are not cached: take them from `found`.
            kinds = [
                found[type(leaf)] if kind is None else kind
                for leaf, kind in zip(leaves, kinds, strict=True)
            ]
            present = set(kinds)
        hidden = None
        if INSPECT in present:
            hidden = _inspect(leaves, kinds)
            present = set(kinds)
        layout = _layout(leaves, spec, kinds, present, obj, notes, skip)
        # A container held twice holds its leaves twice, or holds none (place/_sharing.py).
        # Or one held both inside an object with its own .to and elsewhere (that object's
        # flatten shows only its tensors): possible unless the batch is one such object in
        # a container of leaves (two nodes, the container and the object).
        across = bool(notes.movers) and (
            len(notes.movers) > 1 or spec.num_nodes - spec.num_leaves > 2
        )
        if (across or notes.leafless or len(set(map(id, leaves))) != len(leaves)) and repeats_nodes(
            obj, skip or frozenset()
        ):
            layout.join_repeats_of(obj)
        if notes.movers:
            mark_own(layout, leaves, kinds, notes.movers)
        if hidden:
            layout.hidden = (obj, hidden)
        return layout
    raise UnsupportedBatchError(  # pragma: no cover - needs 64 levels of new container types
        "the batch nests more new container types than torchport registers in one call; "
        "call to_device again or simplify the batch"
    )


def _layout(
    leaves: list[Any],
    spec: optree.PyTreeSpec,
    kinds: list[Any],
    present: set[Any],
    obj: object,
    notes: Notes,
    skip: frozenset[Hashable] | None,
) -> BatchLayout:
    """The layout of classified leaves (no kind is unknown or to be inspected any more)."""
    if REFUSED in present:
        _refuse(obj, leaves, kinds)
    reorder = reorders(obj, notes) if notes.ordered else None
    n = len(leaves)
    skipped = skip or frozenset()
    if present == ONLY_TENSORS and len(set(map(id, leaves))) == n:
        return BatchLayout(
            leaves, spec, leaves, reorder=reorder, skip=skipped, objects=notes.custom
        )
    if LEAF_MOVER not in present:
        # Only TENSOR is truthy among the kinds left, so compress picks the tensors.
        tensors, index = _distinct(list(itertools.compress(leaves, kinds)))
        positions = list(itertools.compress(range(n), kinds))
        return BatchLayout(
            leaves,
            spec,
            tensors,
            positions,
            index,
            reorder=reorder,
            skip=skipped,
            objects=notes.custom,
        )
    positions = list(itertools.compress(range(n), map(TENSOR.__eq__, kinds)))
    tensors, index = _distinct(list(map(leaves.__getitem__, positions)))
    mover_pos = list(itertools.compress(range(n), map(LEAF_MOVER.__eq__, kinds)))
    movers, mover_index = _distinct(list(map(leaves.__getitem__, mover_pos)))
    if mover_index is None:
        mover_index = list(range(len(movers)))
    return BatchLayout(
        leaves,
        spec,
        tensors,
        positions,
        index,
        movers,
        mover_pos,
        mover_index,
        reorder,
        skipped,
        objects=notes.custom,
    )


def _refuse(obj: object, leaves: list[Any], kinds: list[int | None]) -> None:
    """Raise for the first module, optimizer, scheduler or scaler in the batch, naming its path."""
    culprit = next(leaf for leaf, kind in zip(leaves, kinds, strict=True) if kind == REFUSED)
    where = find_path(obj, ROOT, lambda node: node is culprit) or ROOT
    raise UnsupportedBatchError(refusal(type(culprit), where, None))


def _inspect(leaves: list[Any], kinds: list[int | None]) -> list[tuple[Any, list[torch.Tensor]]]:
    """The tensors inside values the walker cannot rebuild; each such value is marked plain.

    A numpy array of Python objects and a dict's values or items view hold their
    objects without an attribute the walker can rebuild, so they come back as they
    are; the tensors inside (listed here, with their value) must then already be
    where the move goes (:func:`._uncopyable.check_hidden`).
    """
    found = []
    for pos, leaf in enumerate(leaves):
        if kinds[pos] != INSPECT:
            continue
        held = _held_objects(leaf)
        tensors = flatten_batch(held).tensors if held else []
        if tensors:
            found.append((leaf, tensors))
        kinds[pos] = PLAIN
    return found


def _held_objects(leaf: Any) -> list[Any]:
    """The Python objects a numpy array (of an object dtype) or a dict view holds."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(leaf, numpy.ndarray):
        if not leaf.dtype.hasobject:
            return []
        items = leaf.tolist()  # object fields as they are, in nested lists and tuples
        return items if isinstance(items, list) else [items]
    return list(leaf)


def _hides_objects(cls: type) -> bool:
    """Whether values of ``cls`` may hold objects out of the walker's reach (see _inspect)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and issubclass(cls, numpy.ndarray):
        if lasting(cls):
            ARRAY_TYPES.add(cls)  # settled() takes those of a numeric dtype as values
        return True
    return issubclass(cls, ValuesView | ItemsView) and not has_state(cls)


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


def tensors_inside(values: list[Any]) -> list[torch.Tensor]:
    """The distinct tensors in an object's state (for objects with their own ``.to``).

    Finding needs no rebuild: one C flatten and a C-level pass over the leaf kinds,
    unless a leaf is of a type not yet classified (or one to look into, or to
    refuse), which the full walk handles. A tensor met twice is told to the object
    being opened (:func:`~torchport.place._objects.note_repeats`).
    """
    try:
        leaves: list[Any] = optree.tree_leaves(values, namespace=_NAMESPACE)  # type: ignore[arg-type]
    except Exception:  # the full walk names what failed
        return _found_by_walk(values)
    kinds = list(map(KIND.get, map(type, leaves)))
    if None in kinds or REFUSED in kinds:
        return _found_by_walk(values)
    if INSPECT in kinds and _inspect(leaves, kinds):
        return _found_by_walk(values)  # tensors inside object arrays: see check_hidden
    tensors, index = _distinct(list(itertools.compress(leaves, map(TENSOR.__eq__, kinds))))
    if index is not None:
        note_repeats()
    return tensors


def _found_by_walk(values: list[Any]) -> list[torch.Tensor]:
    layout = flatten_batch(values)
    if layout.repeats():
        note_repeats()
    return layout.tensors


def _tensors_of_items(values: list[Any], skip: frozenset[Hashable]) -> list[torch.Tensor]:
    """The distinct tensors reachable from a custom container's items, outside ``skip``."""
    return flatten_batch(values, skip_keys=skip).tensors


def _register_node(cls: type) -> bool:
    """Register ``cls`` as a node in the walker's namespace; say whether it is one now."""
    recipe = container_recipe(cls) if optree.is_namedtuple_class(cls) else None
    if recipe is None:
        return False
    return register(cls, recipe)


def _classify(cls: type) -> int:
    """Decide what leaves of type ``cls`` are, registering node types on first sight.

    Called under no lock by many threads at once: the answer is remembered only
    when it is final (never :data:`NEW_NODE`), and only for a class that lasts.
    A class registered as a node meanwhile (by another thread, after this
    thread's flatten) is a node: flatten again, never "a value".
    """
    if issubclass(cls, torch.Tensor):
        kind = TENSOR
    elif optree.register_pytree_node.get(cls, namespace=_NAMESPACE) is not None:
        # Registered by another walk since this one flattened (a leaf under a skipped
        # key never gets here): flatten again and it is a node.
        return NEW_NODE
    elif refusal(cls, ROOT, None) is not None:
        kind = REFUSED
    elif _hides_objects(cls):
        kind = INSPECT  # never a value type: settled() must walk batches holding one
    else:
        recipe, opened = _node_recipe(cls)
        if recipe is not None:
            if register(cls, recipe):
                if opened is not None and lasting(cls):
                    OBJECT_NODES[cls] = opened
                return NEW_NODE  # not cached: once registered, optree no longer yields it
            kind = PLAIN
        elif callable(getattr(cls, "to", None)) and not issubclass(cls, type):
            kind = LEAF_MOVER  # no state to read: its .to is all there is
        else:
            kind = PLAIN
            if lasting(cls):
                VALUE_TYPES.add(cls)
    if lasting(cls):
        KIND[cls] = kind
    return kind


def _node_recipe(cls: type) -> tuple[Any, bool | None]:
    """The recipe the walker registers ``cls`` with (None for a leaf type), and what it is.

    The second item is True for an object moved with its own ``.to``, False for one
    walked through its state, None for a container (or a leaf type).
    """
    kind = kind_of_object(cls)
    if issubclass(cls, collections.UserDict | collections.UserList):
        # Everything they hold is in their state (.data and attributes), so walking
        # them is exact, leaves the input unmodified (BatchEncoding.to moves in
        # place) and lets their tensors take the batch's fast paths.
        return object_recipe(cls, _tensors_of_items), False
    if kind == MOVER:
        return mover_recipe(cls, tensors_inside), True
    recipe = container_recipe(cls)
    if recipe is not None:
        return recipe, None
    if kind == WALKED:
        return object_recipe(cls, _tensors_of_items), False
    return None, None
