"""Copying an object's own state without calling its constructor.

The walker rebuilds containers around new children by copying them (a constructor
may do more than store its arguments), so it needs a faithful shallow copy, the
instance's ``__dict__`` and slots carried over, and ``functools.cached_property``
values forgotten (they were computed from the old children). A copy that cannot be
made faithfully raises :class:`RebuildRefused`, which the walker turns into an
``UnsupportedBatchError`` naming the path.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

__all__ = [
    "RebuildRefused",
    "copied_as_dict",
    "copy_state",
    "drop_cached",
    "shallow_copy",
    "slot_names",
]

_SLOTS: dict[type, tuple[str, ...]] = {}
_CACHED: dict[type, tuple[str, ...]] = {}


class RebuildRefused(Exception):
    """A container cannot be rebuilt faithfully around new children; the message says why."""


def copy_state(old: Any, new: Any) -> None:
    """Copy ``old``'s instance attributes (``__dict__`` and slots) onto ``new``, as they are."""
    cls = type(old)
    try:
        state = object.__getattribute__(old, "__dict__")
    except AttributeError:
        pass
    else:
        if state:
            object.__getattribute__(new, "__dict__").update(state)
            drop_cached(cls, new)
    for name in slot_names(cls):
        try:
            value = object.__getattribute__(old, name)
        except AttributeError:  # an empty slot stays empty
            continue
        object.__setattr__(new, name, value)


def shallow_copy(obj: Any) -> Any:
    """``copy.copy(obj)``, refused when it would not give a separate object of the same type."""
    try:
        new = copy.copy(obj)
    except Exception as exc:
        raise RebuildRefused(
            f"copy.copy raised {type(exc).__name__}: {exc}; torchport copies the object "
            "instead of calling its constructor"
        ) from exc
    if new is obj or type(new) is not type(obj):
        found = "the object itself" if new is obj else f"a {type(new).__name__}"
        raise RebuildRefused(
            f"copy.copy returned {found}, so its children cannot be replaced without "
            "changing the original"
        )
    return new


def copied_as_dict(cls: type, fields: tuple[str, ...]) -> bool:
    """Whether ``copy.copy`` of a ``cls`` is ``object.__new__(cls)`` plus its ``__dict__``.

    True when nothing customises copying or construction, the instances keep
    all state in ``__dict__`` (no slots) and no field is a data descriptor, so
    fields may be written straight into the new ``__dict__``.
    """
    return (
        getattr(cls, "__new__", None) is object.__new__
        and getattr(cls, "__copy__", None) is None
        and getattr(cls, "__reduce_ex__", None) is object.__reduce_ex__
        and getattr(cls, "__reduce__", None) is object.__reduce__
        and getattr(cls, "__getstate__", None) is getattr(object, "__getstate__", None)
        and getattr(cls, "__setstate__", None) is None
        and any("__dict__" in vars(base) for base in cls.__mro__)
        and not slot_names(cls)
        and not any(hasattr(type(getattr(cls, name, None)), "__set__") for name in fields)
    )


def slot_names(cls: type) -> tuple[str, ...]:
    names = _SLOTS.get(cls)
    if names is None:
        found: list[str] = []
        for base in cls.__mro__:
            slots = vars(base).get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if name in ("__dict__", "__weakref__"):
                    continue
                if name.startswith("__") and not name.endswith("__"):
                    name = f"_{base.__name__.lstrip('_')}{name}"  # name mangling
                found.append(name)
        names = _SLOTS[cls] = tuple(found)
    return names


def drop_cached(cls: type, new: Any) -> None:
    """Forget ``cached_property`` values: they were computed from the old children."""
    names = _CACHED.get(cls)
    if names is None:
        names = _CACHED[cls] = tuple(
            name
            for base in cls.__mro__
            for name, value in vars(base).items()
            if isinstance(value, functools.cached_property)
        )
    if names:
        state = object.__getattribute__(new, "__dict__")
        for name in names:
            state.pop(name, None)
