"""Where in a batch a walk failed: the culprit's path, worded as the error message.

The walker (``place/_tree.py``) calls these only after optree has failed: a
cycle or too deep a batch (``RecursionError``), a container that fails when its
items are read, or one that cannot be rebuilt. They search the batch again,
node by node, and name the culprit by a Python path such as
``batch['meta'][2]`` or ``list(batch['tags'])[0].held``.
"""

from __future__ import annotations

import collections
import itertools
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import optree
import torch

from torchport.errors import UnsupportedBatchError
from torchport.place._containers import GENERIC_MAPPINGS, NAMESPACE, RebuildRefused
from torchport.place._copying import has_state, read_state
from torchport.place._objects import VALUE, kind_of_object

__all__ = [
    "ROOT",
    "find_path",
    "find_state_path",
    "flatten_failure_message",
    "rebuild_located",
    "recursion_message",
    "refused_message",
]

ROOT = "batch"


def how_rebuilt(cls: type | None) -> str:
    """Say how the walker rebuilds ``cls``, for error messages."""
    if cls is None:
        return "rebuilding it"
    if optree.is_namedtuple_class(cls) or optree.is_structseq_class(cls):
        return f"calling {cls.__name__}(*fields)"
    if cls in GENERIC_MAPPINGS:
        return f"calling {cls.__name__}(dict_of_items)"
    if cls in (set, frozenset, types.MappingProxyType, list, tuple, dict):
        return f"calling {cls.__name__}(items)"
    if callable(getattr(cls, "to", None)):
        return "deep-copying it (its tensors excepted), then calling its .to"
    if issubclass(cls, list | tuple | dict | set | frozenset | collections.deque):
        return "copying it with its base type's methods, then its attributes"
    return "copying it without its constructor, then setting the changed attributes"


def rebuild_located(spec: optree.PyTreeSpec, leaves: Sequence[Any], path: str) -> Any:
    """Rebuild node by node, so a failure can be reported with its path in the batch."""
    if spec.is_leaf():
        return leaves[0]
    one_level = spec.one_level()
    assert one_level is not None
    children = []
    offset = 0
    for child, accessor in zip(spec.children(), one_level.accessors(), strict=True):
        n = child.num_leaves
        children.append(rebuild_located(child, leaves[offset : offset + n], accessor.codify(path)))
        offset += n
    try:
        return one_level.unflatten(children)
    except Exception as exc:
        cls = spec.type
        if isinstance(exc, RebuildRefused):
            reason = str(exc)
        else:
            reason = f"{how_rebuilt(cls)} raised {type(exc).__name__}: {exc}"
        raise UnsupportedBatchError(refused_message(path, cls, reason)) from exc


def refused_message(path: str, cls: type | None, reason: str) -> str:
    """The error for an object at ``path`` that cannot be rebuilt, for ``reason``."""
    return (
        f"cannot rebuild {path} of type {_type_name(cls)}: {reason}; "
        f"{_advice(cls)}, or pass the key it is under in skip_keys"
    )


def _type_name(cls: type | None) -> str:
    return f"{cls.__module__}.{cls.__qualname__}" if cls is not None else "None"


def _advice(cls: type | None) -> str:
    name = cls.__name__ if cls is not None else "it"
    advice = f"give {name} a .to(device) method that returns a moved copy"
    if cls is not None and (optree.is_namedtuple_class(cls) or cls in GENERIC_MAPPINGS):
        advice += ", make its constructor accept its own contents"
    return advice


def flatten_failure_message(obj: object, exc: Exception) -> str:
    """Say which container failed while its items were being read, and how."""
    where = _find_node(obj, ROOT, _fails_to_open)
    found = f"{type(exc).__name__}: {exc}"
    if where is None:
        return f"could not read the items of a container in the batch: {found}"
    path, node = where
    return (
        f"cannot read the items of {path} of type {_type_name(type(node))}: {found}; "
        f"{_advice(type(node))}, or pass the key it is under in skip_keys"
    )


def recursion_message(obj: object) -> str:
    """Say where a batch contains itself, or that it is simply too deep."""
    on_path: set[int] = set()
    found = _find_node(obj, ROOT, lambda node: id(node) in on_path, on_path)
    if found is not None:
        return (
            f"the batch contains itself: {found[0]} refers back to an enclosing container; "
            "to_device cannot copy a cyclic structure; break the cycle or pass its key "
            "in skip_keys"
        )
    return (
        f"the batch is nested more than {optree.MAX_RECURSION_DEPTH} levels deep; "
        "flatten it or wrap the deep part in an object with a .to(device) method"
    )


def find_path(root: object, root_path: str, wanted: Callable[[object], bool]) -> str | None:
    """The path (written as Python from ``root_path``) of the first node ``wanted`` accepts."""
    found = _find_node(root, root_path, wanted)
    return None if found is None else found[0]


def find_state_path(root: object, root_path: str, wanted: Callable[[object], bool]) -> str | None:
    """The path of the first node ``wanted`` accepts, read through attributes and items.

    For what an object's own ``.to`` returned: its attributes (``__dict__`` and
    slots), dict items by key, list, tuple and deque items by index, at any depth
    (``result.meta['a'][0]``), each node entered once. A set's item is named as the
    set's path. Reads state only (no ``__getattr__``, no properties).
    """
    stack: list[tuple[object, str]] = [(root, root_path)]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if wanted(node):
            return path
        if id(node) in seen or isinstance(node, torch.Tensor | str | bytes):
            continue
        seen.add(id(node))
        children: list[tuple[object, str]] = []
        if isinstance(node, dict):
            children += [(v, f"{path}[{k!r}]") for k, v in dict.items(node)]
        elif isinstance(node, list | tuple | collections.deque):
            children += [(v, f"{path}[{i}]") for i, v in enumerate(node)]
        elif isinstance(node, set | frozenset) and any(map(wanted, node)):
            return f"{path} (an item of this set)"
        if has_state(type(node)) and kind_of_object(type(node)) != VALUE:
            state = read_state(node)
            names = zip(state.names, state.values, strict=True)
            children += [(v, f"{path}.{name}") for name, v in names]
        stack.extend(reversed(children))
    return None


def _fails_to_open(node: object) -> bool:
    try:
        optree.tree_flatten_one_level(node, namespace=NAMESPACE)  # type: ignore[arg-type]
    except ValueError:  # a leaf
        return False
    except Exception:
        return True
    return False


def _find_node(
    root: object,
    root_path: str,
    wanted: Callable[[object], bool],
    on_path: set[int] | None = None,
) -> tuple[str, object] | None:
    """Depth-first search, without recursion, for the first node ``wanted`` accepts.

    ``on_path``, when given, holds the ids of the node's ancestors as the search
    goes (a child that is one of them closes a cycle); the search never descends
    into a node twice on one path, so it ends on cyclic batches too.
    """
    if wanted(root):
        return root_path, root
    ancestors = on_path if on_path is not None else set()
    ancestors.add(id(root))
    frames = [(root, _children(root, root_path))]
    while frames:
        node, children = frames[-1]
        step = next(children, None)
        if step is None:
            frames.pop()
            ancestors.discard(id(node))
            continue
        child, child_path = step
        if wanted(child):
            return child_path, child
        if id(child) in ancestors:
            continue
        ancestors.add(id(child))
        frames.append((child, _children(child, child_path)))
    return None


def _children(node: object, path: str) -> Iterator[tuple[object, str]]:
    """The node's children, each with its path written as Python (``batch['a'].x[0]``)."""
    try:
        # One flatten that stops below the node gives its children and their accessors
        # in the same order (a one-level flatten keeps an OrderedDict's order while a
        # structure sorts its keys: zipped, the two would name the wrong key).
        calls = itertools.count()
        children: list[Any]
        children, spec = optree.tree_flatten(
            node,  # type: ignore[arg-type]
            lambda _: next(calls) > 0,
            namespace=NAMESPACE,
        )
    except Exception:  # a container that fails to open (reported by its parent)
        return iter(())
    if spec.is_leaf():
        return iter(())
    codes = [accessor.codify(path) for accessor in spec.accessors()]
    return zip(children, codes, strict=True)
