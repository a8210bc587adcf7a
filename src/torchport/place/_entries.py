"""Path entries: how the walker reaches a child of a node it registered, and writes it as Python.

optree gives each child of a node an entry that reads the child from its parent
(``entry(parent)``) and writes that step of a path (``codify``). Errors name a
culprit by the path these write, e.g. ``batch['meta'].extra[2]``; the walker's
order fix-ups read children with them. Attributes are read past ``__getattr__``
and properties, from ``__dict__`` or the slot itself, as the walker found them.
"""

from __future__ import annotations

from typing import Any

import optree

from torchport.place._copying import slot_descriptors

__all__ = [
    "Attr",
    "ItemOrAttrEntry",
    "SetItemEntry",
    "StateEntry",
    "TensorInsideEntry",
    "ViewEntry",
    "read_attribute",
]


class Attr:
    """Marks a child that is an instance attribute of a container, not one of its items.

    Never equal to a key, so ``skip_keys`` (which looks at the last entry of a
    path) cannot mistake an attribute named ``'ids'`` for an item under ``'ids'``.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Attr({self.name!r})"


def read_attribute(obj: Any, name: str) -> Any:
    """``obj.name`` as stored in ``__dict__`` or a slot, past ``__getattr__`` and properties."""
    try:
        return object.__getattribute__(obj, "__dict__")[name]
    except (AttributeError, KeyError, TypeError):
        pass
    cls = type(obj)
    for slot, descriptor in slot_descriptors(cls):
        if slot == name:
            return descriptor.__get__(obj, cls)
    raise AttributeError(f"{cls.__name__} object has no attribute {name!r} of its own")


class StateEntry(optree.PyTreeEntry):
    """An instance attribute of an object walked through its state, written ``.name``."""

    __slots__ = ()

    def __call__(self, obj: Any, /) -> Any:
        return read_attribute(obj, self.entry)

    def codify(self, /, node: str = "") -> str:
        return f"{node}.{self.entry}"


class ItemOrAttrEntry(optree.PyTreeEntry):
    """An item of a container (``[key]`` or ``[i]``), or one of its attributes (``.name``)."""

    __slots__ = ()

    def __call__(self, obj: Any, /) -> Any:
        entry = self.entry
        if type(entry) is Attr:
            return read_attribute(obj, entry.name)
        return obj[entry]

    def codify(self, /, node: str = "") -> str:
        entry = self.entry
        if type(entry) is Attr:
            return f"{node}.{entry.name}"
        return f"{node}[{entry!r}]"


class SetItemEntry(optree.PyTreeEntry):
    """The i-th item of a set in its iteration order (``list(s)[i]``), or an attribute."""

    __slots__ = ()

    def __call__(self, obj: Any, /) -> Any:
        entry = self.entry
        if type(entry) is Attr:
            return read_attribute(obj, entry.name)
        return list(obj)[entry]

    def codify(self, /, node: str = "") -> str:
        entry = self.entry
        if type(entry) is Attr:
            return f"{node}.{entry.name}"
        return f"list({node})[{entry}]"


class ViewEntry(optree.PyTreeEntry):
    """From a read-only mapping view to (a copy of) the mapping it shows; adds nothing to a path."""

    __slots__ = ()

    def __call__(self, obj: Any, /) -> Any:
        return dict(obj)

    def codify(self, /, node: str = "") -> str:
        return node


class TensorInsideEntry(optree.PyTreeEntry):
    """The i-th distinct tensor found inside an object that moves with its own ``.to``."""

    __slots__ = ()

    def __call__(self, obj: Any, /) -> Any:
        raise AttributeError(
            "the tensors of an object with its own .to are found by walking its state; "
            "they are not children it can be asked for"
        )

    def codify(self, /, node: str = "") -> str:
        return f"{node} (tensor {self.entry} inside it)"
