"""What a value is, in the port's words, and how the kinds of several values combine.

Data only; :mod:`torchport.check.port._kinds` works out a value's kind.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

__all__ = ["TENSORS", "Elements", "Kind", "flat", "join", "memoized"]


class Kind(enum.Enum):
    """What a value is."""

    DEVICE = "a tensor on the device"
    TENSOR = "a tensor"
    BATCH = "a batch"  # what a loader yields: a tensor, or a tuple/dict/object of tensors
    LOADER = "a loader"  # iterating it yields batches
    MODEL = "a model"
    NUMPY = "a numpy value"
    LIBRARY = "made by another library"
    OTHER = "not a tensor"
    UNKNOWN = "unknown"


# What iterating a value yields: a kind, or one per position (enumerate, zip).
Elements = Kind | tuple["Elements", ...]

TENSORS = frozenset({Kind.DEVICE, Kind.TENSOR, Kind.BATCH})
WORKING = object()  # a memo's mark for "being worked out": a cycle meets it, and gets UNKNOWN


def memoized(memo: dict[int, object], key: int, compute: Callable[[T], Kind], arg: T) -> Kind:
    """``compute(arg)`` once per ``key``; asked again while it is worked out (a cycle): UNKNOWN."""
    found = memo.get(key)
    if isinstance(found, Kind):
        return found
    if found is WORKING:
        return Kind.UNKNOWN
    memo[key] = WORKING
    kind = memo[key] = compute(arg)
    return kind


def join(kinds: Iterable[Kind]) -> Kind:
    """One kind for a value that may be any of ``kinds`` (UNKNOWN when they disagree)."""
    found = set(kinds)
    if not found:
        return Kind.UNKNOWN
    if len(found) == 1:
        return found.pop()
    if found <= TENSORS:
        return Kind.BATCH if Kind.BATCH in found else Kind.TENSOR  # maybe not on the device
    return Kind.UNKNOWN


def flat(elements: Elements) -> Kind:
    """One kind for one item of an iteration (a tuple item is a container: UNKNOWN)."""
    if isinstance(elements, Kind):
        return elements
    kinds = [flat(e) for e in elements]
    return Kind.OTHER if all(k is Kind.OTHER for k in kinds) else Kind.UNKNOWN
