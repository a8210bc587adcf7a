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

from torchport.place._containers import viewed_mapping
from torchport.place._copying import State, has_state, read_state, write_state
from torchport.place._objects import WALKED, kind_of_object

__all__ = ["join_repeats", "repeats_nodes"]

_UNSET = object()
# Read by their items. A set held twice comes back as one; its items (hashable) are
# never replaced by _join, which has no way to set them.
_ITERABLES = (list, tuple, collections.deque, set, frozenset)


def repeats_nodes(obj: Any, skip: frozenset[Hashable]) -> bool:
    """Whether a container or an object the walker copies is held twice in ``obj``."""
    seen: set[int] = set()
    stack = [obj]
    while stack:
        node = stack.pop()
        children = _children(node, skip)
        if children is None:
            continue
        key = id(node)
        if key in seen:
            return True
        seen.add(key)
        stack.extend(children)
    return False


def _children(node: Any, skip: frozenset[Hashable]) -> list[Any] | None:
    """What the walker rebuilds ``node`` around; None for a node it does not look into."""
    cls = type(node)
    if cls is dict:
        if not skip:
            return list(node.values())
        return [v for k, v in node.items() if not _skipped(k, skip)]
    if cls is list or cls is tuple:
        return list(node)
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
    if _walked(cls):
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


def join_repeats(before: Any, after: Any, skip: frozenset[Hashable]) -> Any:
    """Make each node held twice in ``before`` one object in ``after`` (its rebuild).

    Only what the rebuild made is changed (a node of ``after`` that is the very node
    of ``before`` is left alone): items are set with the base type's methods and
    attributes past ``__setattr__``; a tuple is made again around joined items.
    Returns ``after``, or the new root when the root is a tuple that was made again.
    """
    return _join(before, after, {}, skip)


def _join(old: Any, new: Any, made: dict[int, Any], skip: frozenset[Hashable]) -> Any:
    key = id(old)
    first = made.get(key)
    if first is not None:
        return first
    cls = type(old)
    if new is old or type(new) is not cls or _children(old, skip) is None:
        made[key] = new
        return new
    if issubclass(cls, dict):
        for k, value in list(dict.items(old)):
            if _skipped(k, skip):
                continue
            was = dict.get(new, k, _UNSET)
            if was is _UNSET:
                continue  # not rebuilt under the same key: nothing to pair
            joined = _join(value, was, made, skip)
            if joined is not was:
                dict.__setitem__(new, k, joined)
    elif issubclass(cls, list | collections.deque):
        for i, (value, was) in enumerate(zip(old, new, strict=True)):
            joined = _join(value, was, made, skip)
            if joined is not was:
                if isinstance(new, list):
                    list.__setitem__(new, i, joined)
                else:
                    new[i] = joined
    elif cls is types.MappingProxyType:
        was = viewed_mapping(new)
        joined = _join(viewed_mapping(old), was, made, skip)
        if joined is not was:
            new = types.MappingProxyType(joined)  # read-only: made again, as a tuple is
    elif issubclass(cls, tuple):
        items = [_join(value, was, made, skip) for value, was in zip(old, new, strict=True)]
        if any(a is not b for a, b in zip(items, new, strict=True)):
            if optree.is_structseq_class(cls):
                new = cls(items)  # torch.return_types: made by their class only
            else:
                remade = tuple.__new__(cls, items)
                if has_state(cls):
                    _copy_attributes(new, remade)
                new = remade
    if cls is not dict and cls is not list and cls is not tuple and has_state(cls):
        _join_state(old, new, made, skip)
    made[key] = new
    return new


def _join_state(old: Any, new: Any, made: dict[int, Any], skip: frozenset[Hashable]) -> None:
    """Join the attributes of ``new`` (a copy the rebuild made) with those of ``old``."""
    before = read_state(old)
    state = read_state(new)
    if state.names != before.names:
        return  # not a copy of the same attributes: nothing to pair
    values = [_join(a, b, made, skip) for a, b in zip(before.values, state.values, strict=True)]
    write_state(new, state, values)


def _copy_attributes(source: Any, target: Any) -> None:
    state = read_state(source)
    unset = [_UNSET] * len(state.names)  # so that every attribute is written
    write_state(target, State(state.names, unset, state.in_dict), state.values)
