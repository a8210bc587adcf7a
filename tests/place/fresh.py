"""Batch classes made while the program runs, the way collate functions and servers make them.

Each call of :func:`make_class` returns a class no one has seen: a namedtuple (plain,
or with a ``__new__`` of its own), a dataclass (plain, frozen, slotted), an attrs
class, a pydantic model, a plain class, a slotted class, a dict or list subclass with
an attribute. :func:`instance` fills one with tensors and values. The thread and
retention tests draw from them with hypothesis; nothing here imports torchport.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import attrs
import pydantic
import torch
from hypothesis import strategies as st

KINDS = (
    "namedtuple",
    "namedtuple_new",
    "dataclass",
    "frozen_dataclass",
    "slots_dataclass",
    "attrs",
    "pydantic",
    "plain",
    "slotted",
    "dict_subclass",
    "list_subclass",
)
_COUNTER = itertools.count()
_FIELDS = ("x", "y", "z")


def make_class(kind: str) -> type:
    """A new class of ``kind`` with fields ``x``, ``y`` and ``z``, named uniquely."""
    name = f"Fresh{next(_COUNTER)}"
    if kind == "namedtuple":
        return collections.namedtuple(name, _FIELDS)  # type: ignore[misc]
    if kind == "namedtuple_new":
        base: Any = collections.namedtuple(name + "Base", _FIELDS)  # type: ignore[misc]

        def __new__(cls: type, x: Any, y: Any, z: Any) -> Any:
            return base.__new__(cls, x, y, z)

        return type(name, (base,), {"__new__": __new__, "__slots__": ()})
    if kind in ("dataclass", "frozen_dataclass", "slots_dataclass"):
        return dataclasses.make_dataclass(
            name,
            [(f, Any) for f in _FIELDS],
            frozen=kind == "frozen_dataclass",
            slots=kind == "slots_dataclass",
        )
    if kind == "attrs":
        return attrs.make_class(name, list(_FIELDS))
    if kind == "pydantic":
        model: type = pydantic.create_model(  # type: ignore[call-overload]
            name,
            __config__=pydantic.ConfigDict(arbitrary_types_allowed=True),
            **{f: (Any, None) for f in _FIELDS},
        )
        return model
    if kind == "plain":

        def __init__(self: Any, x: Any, y: Any, z: Any) -> None:
            self.x, self.y, self.z = x, y, z

        return type(name, (), {"__init__": __init__})
    if kind == "slotted":

        def __init__(self: Any, x: Any, y: Any, z: Any) -> None:
            self.x, self.y, self.z = x, y, z

        return type(name, (), {"__init__": __init__, "__slots__": _FIELDS})
    if kind == "dict_subclass":

        def __init__(self: Any, x: Any, y: Any, z: Any) -> None:
            dict.__init__(self, x=x, y=y)
            self.z = z

        return type(name, (dict,), {"__init__": __init__})
    if kind == "list_subclass":

        def __init__(self: Any, x: Any, y: Any, z: Any) -> None:
            list.__init__(self, [x, y])
            self.z = z

        return type(name, (list,), {"__init__": __init__})
    raise ValueError(kind)


def instance(cls: type, values: tuple[Any, Any, Any]) -> Any:
    """An instance of a class :func:`make_class` made, holding ``values`` as x, y and z."""
    x, y, z = values
    if issubclass(cls, pydantic.BaseModel):
        return cls(x=x, y=y, z=z)
    return cls(x, y, z)


def fresh_values(seed: int) -> tuple[Any, Any, Any]:
    """Three field values: a CPU tensor, a number or string, a list holding a tensor."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, generator=g), seed, [torch.arange(seed % 4 + 1), "tag"])


specs = st.lists(st.sampled_from(KINDS), min_size=1, max_size=4)
"""The kinds of the fresh classes one example makes."""

Maker = Callable[[str], type]
