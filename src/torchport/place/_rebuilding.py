"""What one rebuild knows while it runs, for the object recipes optree calls back.

optree rebuilds a batch by calling each node's unflatten function with nothing but
the node's data and its new children. The recipes of objects (``place/_objects.py``,
``place/_mover_recipe.py``) need more: the move's device and options, how to call an
object's own ``.to``, and the objects already rebuilt (so one met twice comes back as
one). :class:`Finish` holds that; :class:`moving` makes it this thread's while a
rebuild runs, and :func:`current` reads it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["Finish", "current", "moving"]


class Finish:
    """What one rebuild knows while it runs: how to finish a mover's copy, and what it made.

    Attributes:
        call_to: Calls an object's ``.to`` with the move's device and options;
            ``None`` for a rebuild that moves nothing (identity rebuilds), where
            a mover comes back as it is when none of its tensors changed.
        target: The device of the move, or None.
        skip: The keys whose values the move leaves as they are.
        dtype: The move's floating dtype, or None.
        own: The ids of the objects whose own ``.to`` moves their tensors (the
            engine left them as they were): they are moved on a shallow copy.
        made: The object rebuilt for each object met so far (by id), so that an
            object met twice comes back as one object, as it went in.
        failing: The objects (by id) whose rebuild started and did not return: a
            rebuild that fails is run again to find the failure's path
            (``place/_locate.py``), which says why it failed rather than call that
            object's ``.to`` a second time (a ``.to`` with side effects may not
            fail twice the same way).
    """

    __slots__ = ("call_to", "dtype", "failing", "made", "own", "skip", "target")

    def __init__(
        self,
        call_to: Callable[[Any], Any] | None = None,
        target: torch.device | None = None,
        skip: frozenset[Any] = frozenset(),
        dtype: torch.dtype | None = None,
        own: frozenset[int] = frozenset(),
    ) -> None:
        self.call_to = call_to
        self.target = target
        self.skip = skip
        self.dtype = dtype
        self.own = own
        self.made: dict[int, Any] = {}
        self.failing: set[int] = set()


_LOCAL = threading.local()  # .finish: the rebuild running in this thread


class moving:
    """While the ``with`` block runs, objects rebuilt in this thread use ``finish``."""

    __slots__ = ("_finish", "_saved")

    def __init__(self, finish: Finish) -> None:
        self._finish = finish
        self._saved: Finish | None = None

    def __enter__(self) -> None:
        self._saved = getattr(_LOCAL, "finish", None)
        _LOCAL.finish = self._finish

    def __exit__(self, *exc: object) -> None:
        _LOCAL.finish = self._saved


def current() -> Finish:
    finish: Finish | None = getattr(_LOCAL, "finish", None)
    return finish if finish is not None else Finish()
