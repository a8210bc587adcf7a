"""``skip_keys``: reading the argument, and flattening a batch with the skipped values as leaves."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import optree
import torch

from torchport.errors import ConfigError

__all__ = ["flatten_skipping", "skip_key_set"]

_MISSING = object()


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


def flatten_skipping(
    obj: object, skip: frozenset[Hashable], namespace: str
) -> tuple[list[Any], optree.PyTreeSpec, set[int]]:
    """Flatten with the values under keys in ``skip`` as leaves; also return their positions.

    The positions returned are those of the skipped values, and of containers met
    both under a skipped key and elsewhere (left as they are in both places).

    optree visits a mapping before its values, so the ``is_leaf`` predicate lets
    each mapping (a dict, a ``UserDict``, any ``Mapping``) record the identities
    of its skipped values and then stops at them; the leaf paths tell a skipped
    value from the same object met elsewhere. (A container that sits both under
    a skipped key and elsewhere is left as it is in both places.) Objects with
    their own ``.to`` are moved by it whole: skip_keys does not reach inside them.
    """
    marked: set[int] = set()

    def is_leaf(node: Any) -> bool:
        if id(node) in marked:
            return True
        if isinstance(node, Mapping):
            get = node.get
            for key in skip:
                try:
                    value = get(key, _MISSING)
                except Exception:  # a mapping whose get() cannot take this key
                    continue
                if value is not _MISSING:
                    marked.add(id(value))
        return False

    paths, leaves, spec = optree.tree_flatten_with_path(
        obj,  # type: ignore[arg-type]
        is_leaf,
        namespace=namespace,
    )
    kept = {
        pos
        for pos, (path, leaf) in enumerate(zip(paths, leaves, strict=True))
        if id(leaf) in marked
        and (
            (path and path[-1] in skip)
            # A node met elsewhere too, stopped here because it sits under a skipped key.
            or not optree.tree_is_leaf(leaf, namespace=namespace)
        )
    }
    return leaves, spec, kept
