"""Containers and objects held twice in a batch: found in the input, made one in the result.

optree flattens a container each time it meets it and rebuilds each occurrence as
a new container, so a list held in two places of a batch would come back as two
lists (tensors keep their sharing on their own: each distinct tensor is copied once).
The walker (``place/_tree.py``) looks for such a repeat when the flatten hints at
one: a leaf met twice (a container held twice holds its leaves twice), or a
container without leaves (``[]``, ``{}``; ``place/_spec.py``), which shows in no
leaf. When :func:`repeats_nodes` finds one, the rebuild (``place/_layout.py``) ends
with :func:`join_repeats`: it walks the input and the result side by side and puts
the first rebuilt copy of each repeated node in every place the input held it.

Both go where the walker goes: items of builtin containers and of their
subclasses (with their attributes), and the state of objects the walker copies
through their state. They stop at tensors, at values, at objects moved by their own
``.to`` (what ``.to`` returns is theirs to shape; one held twice is moved once by the
walker already) and at values under skipped keys. A ``MappingProxyType`` is a node
whose one child is the very mapping it shows: a proxy held twice comes back as one
proxy, and one whose mapping the batch also holds shows the rebuilt mapping
(read-only, it is made again around it, as a tuple is). A set held twice comes back as one
set, but its items (hashable, so immutable) are not paired with the rest of the
batch. A batch that holds itself never gets here: the flatten refuses the cycle with
an ``UnsupportedBatchError``.
"""

from __future__ import annotations

import collections
import types
from collections.abc import Hashable
from typing import Any

import optree
import torch

from torchport.errors import UnsupportedBatchError
from torchport.place._containers import viewed_mapping
from torchport.place._copying import State, has_state, read_state, write_state
from torchport.place._leaf_kinds import KIND, PLAIN, TENSOR
from torchport.place._objects import MOVER, WALKED, kind_of_object

__all__ = ["join_repeats", "own_movers", "repeats_nodes"]

_UNSET = object()
# Read by their items. A set held twice comes back as one; its items (hashable) are
# never replaced by _join, which has no way to set them.
_ITERABLES = (list, tuple, collections.deque, set, frozenset)
_LEAF_KINDS = frozenset({TENSOR, PLAIN})
_NOT_MOVERS = (*_ITERABLES, dict, torch.Tensor, types.MappingProxyType)


def repeats_nodes(obj: Any, skip: frozenset[Hashable]) -> bool:
    """Whether a container or an object the walker copies is held twice in ``obj``.

    Held twice counts across the edge of an object moved by its own ``.to`` too: a
    container both inside such an object (at any depth of its state) and elsewhere
    in the batch, or inside two of them.
    """
    seen: set[int] = set()
    stack = [obj]
    movers: dict[int, Any] = {}
    while stack:
        node = stack.pop()
        children = _children(node, skip)
        if children is None:
            if _moves_itself(type(node)):
                movers[id(node)] = node
            continue
        key = id(node)
        if key in seen:
            return True
        seen.add(key)
        stack.extend(children)
    if not movers or (len(movers) == 1 and len(seen) <= 1):
        return False  # one such object, and no container outside it but the batch itself
    return _shared_across(list(movers.values()), seen)


def own_movers(obj: Any, skip: frozenset[Hashable]) -> list[Any]:
    """The distinct objects moved by their own ``.to`` that ``obj`` holds outside any other."""
    seen: set[int] = set()
    stack = [obj]
    movers: dict[int, Any] = {}
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        children = _children(node, skip)
        if children is None:
            if _moves_itself(type(node)):
                movers[id(node)] = node
            continue
        seen.add(id(node))
        stack.extend(children)
    return list(movers.values())


def _shared_across(movers: list[Any], outside: set[int]) -> bool:
    """Whether a node inside one of ``movers`` is also in ``outside`` or in another mover.

    The movers themselves are held outside too: one nested in another's state (a
    ``TensorDict`` inside a ``TensorDict``) and held elsewhere as well is held twice.
    """
    claimed = outside | {id(mover) for mover in movers}
    for mover in movers:
        inside = _inside(mover)
        if not claimed.isdisjoint(inside):
            return True
        claimed |= inside
    return False


def _inside(mover: Any) -> set[int]:
    """The ids of the containers and objects reachable through ``mover``'s state."""
    found: set[int] = set()
    stack = list(read_state(mover).values)
    leaf = _LEAF_KINDS.__contains__
    kind_of = KIND.get
    while stack:
        node = stack.pop()
        if leaf(kind_of(type(node))):
            continue  # a tensor or a value: no container
        children = _children(node, frozenset(), own=True)
        if children is None or id(node) in found:
            continue
        found.add(id(node))
        stack.extend(children)
    return found


def _moves_itself(cls: type) -> bool:
    """Whether objects of ``cls`` are moved by their own ``.to`` (with state the walker reads)."""
    return not issubclass(cls, _NOT_MOVERS) and kind_of_object(cls) == MOVER


def _children(node: Any, skip: frozenset[Hashable], own: bool = False) -> list[Any] | None:
    """What the walker rebuilds ``node`` around; None for a node it does not look into.

    ``own``: inside an object moved by its own ``.to``, where nested such objects are
    looked into too (through their state).
    """
    cls = type(node)
    if cls is dict:
        if not skip:
            return list(node.values())
        return [v for k, v in node.items() if not _skipped(k, skip)]
    if cls is list or cls is tuple:
        # The empty tuple is a value: one object in CPython, which holds nothing, so
        # held "twice" it shares nothing (as the same small int or string does not).
        return list(node) if node or cls is list else None
    if cls is types.MappingProxyType:
        return [viewed_mapping(node)]  # rebuilt around the one mapping it shows
    if issubclass(cls, torch.Tensor | torch.Size):
        return None  # a tensor (shared by the copy engine) or a value
    if issubclass(cls, dict):
        items = [v for k, v in dict.items(node) if not _skipped(k, skip)]
        return items + read_state(node).values if has_state(cls) else items
    if issubclass(cls, _ITERABLES):
        items = list(node)
        return items + read_state(node).values if has_state(cls) else items
    if _walked(cls) or (own and _moves_itself(cls)):
        return read_state(node).values
    return None


def _walked(cls: type) -> bool:
    """Whether the walker copies objects of ``cls`` through their state (not their ``.to``)."""
    if issubclass(cls, collections.UserDict | collections.UserList):
        return True
    return not issubclass(cls, set | frozenset) and kind_of_object(cls) == WALKED


def _skipped(key: Any, skip: frozenset[Hashable]) -> bool:
    try:
        return bool(skip) and key in skip
    except TypeError:  # an unhashable key is no skipped key
        return False


def join_repeats(
    before: Any, after: Any, skip: frozenset[Hashable], results: dict[int, Any] | None = None
) -> Any:
    """Make each node held twice in ``before`` one object in ``after`` (its rebuild).

    Only what the rebuild made is changed (a node of ``after`` that is the very node
    of ``before`` is left alone): items are set with the base type's methods and
    attributes past ``__setattr__``; a tuple is made again around joined items.
    Returns ``after``, or the new root when the root is a tuple that was made again.

    ``results`` maps the id of each object moved by its own ``.to`` to what that
    ``.to`` gave (an object missing came back as it was). The containers inside such
    a result are paired first with the input's, side by side: a container the batch
    holds elsewhere too is then the one the ``.to`` gave (or, where the ``.to`` kept
    the input's own, that one), so the rest of the batch takes it. Where that cannot
    be (the ``.to`` gave something else in its place, or the walker kept the input's
    own object around it), the move raises.

    Raises:
        UnsupportedBatchError: A container held both inside an object moved by its
            own ``.to`` and elsewhere cannot be made one again.
    """
    made: dict[int, Any] = {}
    owned: set[int] = set()  # ids of nodes whose entry in `made` an own .to gave
    movers = [(m, (results or {}).get(id(m), m)) for m in own_movers(before, skip)]
    # First what the objects kept as they are (the input's own, shared with the result):
    # those cannot be changed, so every other place takes them.
    for mover, result in movers:
        _find_kept(mover, result, made, owned)
    _find_unchanged(before, after, made, skip)
    after = _join(before, after, made, skip, owned)
    # Then what their .to rebuilt: a container the batch holds elsewhere too is replaced
    # by the one made there (when it holds the same objects).
    for mover, result in movers:
        if result is not mover and type(result) is type(mover):
            _join_items(mover, result, made, frozenset(), owned, _own_step)
    return after


def _find_unchanged(
    before: Any, after: Any, made: dict[int, Any], skip: frozenset[Hashable]
) -> None:
    """Record every node the rebuild kept as it is, and all under it (an object in which
    nothing moved comes back as the very object): the input's own, which cannot be
    changed, so every other place the batch holds one of them takes it too.

    Reads ``before`` and ``after`` side by side, child by child (a rebuild keeps the
    order and number of what it rebuilds around); writes nothing but ``made``.
    """
    visited: set[int] = set()
    pairs = [(before, after)]
    while pairs:
        old, new = pairs.pop()
        children = _children(old, skip)
        if children is None or id(old) in visited:
            continue
        visited.add(id(old))
        if new is old:
            stack = [old]
            while stack:
                x = stack.pop()
                inner = _children(x, skip)
                if inner is not None and id(x) not in made:
                    made[id(x)] = x
                    stack.extend(inner)
        elif type(new) is type(old):
            other = _children(new, skip)
            if other is not None and len(other) == len(children):
                pairs.extend(zip(children, other, strict=True))


def _join(
    old: Any,
    new: Any,
    made: dict[int, Any],
    skip: frozenset[Hashable],
    owned: set[int] | None = None,
) -> Any:
    key = id(old)
    first = made.get(key)
    if first is not None:
        if owned and key in owned and first is not new:
            _check_same(first, new, old)
        return first
    cls = type(old)
    if new is old or type(new) is not cls or _children(old, skip) is None:
        made[key] = new
        return new
    new = _join_items(old, new, made, skip, owned, _join)
    made[key] = new
    return new


def _find_kept(old: Any, new: Any, made: dict[int, Any], owned: set[int]) -> None:
    """Record every node an own ``.to``'s result ``new`` shares with the input ``old``."""
    pairs = [(old, new)]
    seen: set[int] = set()
    while pairs:
        a, b = pairs.pop()
        children = _children(a, frozenset(), own=True)
        if children is None or id(a) in seen:
            continue
        seen.add(id(a))
        if a is b:
            _as_is(a, made, owned)
            continue
        if type(b) is not type(a):
            continue
        other = _children(b, frozenset(), own=True)
        if isinstance(a, dict):  # paired by key (a .to may add or drop keys)
            pairs.extend((v, dict.get(b, k, _UNSET)) for k, v in dict.items(a) if k in b)
        elif isinstance(a, set | frozenset) or other is None:
            continue
        elif has_state(type(a)) and not isinstance(a, _ITERABLES):
            before, state = read_state(a), read_state(b)
            now = dict(zip(state.names, state.values, strict=True))  # paired by name
            pairs.extend(
                (v, now[name])
                for name, v in zip(before.names, before.values, strict=True)
                if name in now
            )
        elif len(children) == len(other):
            pairs.extend(zip(children, other, strict=True))


def _join_own(old: Any, new: Any, made: dict[int, Any], owned: set[int]) -> Any:
    """Pair ``old`` with ``new`` (what an own ``.to`` gave in its place); see join_repeats."""
    key = id(old)
    first = made.get(key)
    if first is not None:
        if first is not new:
            _check_same(first, new, old)
        return first
    if new is old or _children(old, frozenset(), own=True) is None:
        return new  # the input's own (recorded first), a tensor or a value
    made[key] = new
    owned.add(key)
    if type(new) is not type(old):
        return new  # not a copy of the same kind: nothing to pair inside
    new = _join_items(old, new, made, frozenset(), owned, _own_step)
    made[key] = new
    return new


def _own_step(
    old: Any, new: Any, made: dict[int, Any], _: frozenset[Hashable], owned: set[int] | None
) -> Any:
    return _join_own(old, new, made, owned if owned is not None else set())


def _as_is(node: Any, made: dict[int, Any], owned: set[int]) -> None:
    """Record ``node`` and all under it as kept as they are (the input's own, shared)."""
    stack = [node]
    while stack:
        x = stack.pop()
        children = _children(x, frozenset(), own=True)
        if children is None or id(x) in made:
            continue
        made[id(x)] = x
        owned.add(id(x))
        stack.extend(children)


def _check_same(first: Any, other: Any, old: Any) -> None:
    """Raise unless ``first`` and ``other`` (what ``old`` became in two places) hold the same.

    Every attribute counts: a ``TensorDict`` held inside another and elsewhere is
    refused, because the outer ``.to`` gives the inner one without ``_last_op`` while
    the inner one's own ``.to`` records it (the operation and a weak reference to its
    source, read by a ``with`` block to undo it). Which attributes are bookkeeping is
    the class's to say; guessing (ignoring a name one side lacks) could make one
    object of two that a later read tells apart, so the move is refused instead.

    Raises:
        UnsupportedBatchError: They do not: the two cannot be made one object.
    """
    if _equivalent(first, other, {}):
        return
    raise UnsupportedBatchError(
        f"cannot keep the {type(old).__name__} held both inside an object moved by its "
        "own .to and elsewhere in the batch as one object: that .to gave back one that "
        "holds other objects than the batch's copy (it rebuilds or keeps what it holds "
        "by its own rules, e.g. leaves a tensor on the host); hold a copy in one of the "
        "places, or move the object yourself and pass its key in skip_keys"
    )


def _equivalent(a: Any, b: Any, memo: dict[int, Any]) -> bool:
    """Whether ``a`` and ``b`` hold the same objects (containers compared by what they hold)."""
    if a is b:
        return True
    cls = type(a)
    if type(b) is not cls or isinstance(a, torch.Tensor):
        return False
    if memo.get(id(a)) is b:
        return True
    memo[id(a)] = b
    if isinstance(a, dict):
        if list(dict.keys(a)) != list(dict.keys(b)):
            return False
        pairs = list(zip(dict.values(a), dict.values(b), strict=True))
    elif isinstance(a, set | frozenset):
        if {id(x) for x in a} != {id(x) for x in b}:
            return False
        pairs = []
    elif isinstance(a, _ITERABLES):
        if len(a) != len(b):
            return False
        pairs = list(zip(a, b, strict=True))
    elif _children(a, frozenset(), own=True) is None:
        try:
            return bool(a == b)
        except Exception:  # a value without a plain equality
            return False
    else:
        pairs = []
    if has_state(cls):
        sa, sb = read_state(a), read_state(b)
        if sa.names != sb.names:
            return False
        pairs += list(zip(sa.values, sb.values, strict=True))
    return all(_equivalent(x, y, memo) for x, y in pairs)


def _join_items(
    old: Any,
    new: Any,
    made: dict[int, Any],
    skip: frozenset[Hashable],
    owned: set[int] | None,
    step: Any,
) -> Any:
    """Join each item and attribute of ``new`` (a rebuild of ``old``) by ``step``; see _join."""
    cls = type(old)
    if issubclass(cls, dict):
        for k, value in list(dict.items(old)):
            if _skipped(k, skip):
                continue
            was = dict.get(new, k, _UNSET)
            if was is _UNSET:
                continue  # not rebuilt under the same key: nothing to pair
            joined = step(value, was, made, skip, owned)
            if joined is not was:
                dict.__setitem__(new, k, joined)
    elif issubclass(cls, list | collections.deque):
        if len(old) == len(new):
            for i, (value, was) in enumerate(zip(old, new, strict=True)):
                joined = step(value, was, made, skip, owned)
                if joined is not was:
                    if isinstance(new, list):
                        list.__setitem__(new, i, joined)
                    else:
                        new[i] = joined
    elif cls is types.MappingProxyType:
        was = viewed_mapping(new)
        joined = step(viewed_mapping(old), was, made, skip, owned)
        if joined is not was:
            new = types.MappingProxyType(joined)  # read-only: made again, as a tuple is
    elif issubclass(cls, tuple) and len(old) == len(new):
        items = [step(value, was, made, skip, owned) for value, was in zip(old, new, strict=True)]
        if any(a is not b for a, b in zip(items, new, strict=True)):
            if optree.is_structseq_class(cls):
                new = cls(items)  # torch.return_types: made by their class only
            else:
                remade = tuple.__new__(cls, items)
                if has_state(cls):
                    _copy_attributes(new, remade)
                new = remade
    if cls is not dict and cls is not list and cls is not tuple and has_state(cls):
        _join_state(old, new, made, skip, owned, step)
    return new


def _join_state(
    old: Any,
    new: Any,
    made: dict[int, Any],
    skip: frozenset[Hashable],
    owned: set[int] | None,
    step: Any,
) -> None:
    """Join the attributes of ``new`` (a copy the rebuild made) with those of ``old``."""
    before = read_state(old)
    state = read_state(new)
    if state.names == before.names:
        pairs = zip(before.values, state.values, strict=True)
        values = [step(a, b, made, skip, owned) for a, b in pairs]
    else:  # paired by name (a .to may order, add or drop attributes: TensorDict's _last_op)
        had = dict(zip(before.names, before.values, strict=True))
        values = [
            step(had[name], b, made, skip, owned) if name in had else b
            for name, b in zip(state.names, state.values, strict=True)
        ]
    write_state(new, state, values)


def _copy_attributes(source: Any, target: Any) -> None:
    state = read_state(source)
    unset = [_UNSET] * len(state.names)  # so that every attribute is written
    write_state(target, State(state.names, unset, state.in_dict), state.values)
