"""A flattened batch: its distinct tensors, its ``.to`` objects, and the rebuild around new ones.

:func:`torchport.place._tree.flatten_batch` builds a :class:`BatchLayout`; the
movers (``to_device``, ``DeviceLoader``) replace its tensors and rebuild the batch.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import optree
import torch

from torchport.errors import UnsupportedBatchError
from torchport.place._locate import ROOT, rebuild_located
from torchport.place._rebuilding import Finish, moving
from torchport.place._sharing import join_repeats
from torchport.place._spec import Reorder, restore_order

__all__ = ["BatchLayout"]

_NO_JOINS: Any = object()


class BatchLayout:
    """A flattened batch: its distinct tensors, its ``.to`` objects and how to rebuild it."""

    __slots__ = (
        "_joins",
        "_leaves",
        "_mover_index",
        "_mover_pos",
        "_objects",
        "_reorder",
        "_skip",
        "_spec",
        "_tensor_index",
        "_tensor_pos",
        "hidden",
        "movers",
        "own",
        "owners",
        "tensors",
    )

    def __init__(
        self,
        leaves: list[Any],
        spec: optree.PyTreeSpec,
        tensors: list[torch.Tensor],
        tensor_pos: list[int] | None = None,
        tensor_index: list[int] | None = None,
        movers: list[Any] | None = None,
        mover_pos: list[int] | None = None,
        mover_index: list[int] | None = None,
        reorder: list[Reorder] | None = None,
        skip: frozenset[Hashable] = frozenset(),
        objects: bool = False,
    ) -> None:
        self._leaves = leaves
        # Tensors inside values the walker cannot rebuild (numpy object arrays, dict
        # views), with the value and the batch: see _uncopyable.check_hidden. Set after
        # building.
        self.hidden: tuple[object, list[tuple[Any, list[torch.Tensor]]]] | None = None
        self._skip = skip
        # The input, when it holds a container or object twice (place/_sharing.py): the
        # rebuild then makes each one object again. Set by the walker after building.
        self._joins: object = _NO_JOINS
        # Whether nodes the walker registered (objects, container subclasses) are in it.
        self._objects = objects
        self._spec = spec
        self.tensors = tensors
        # Leaf positions holding tensors; None when the leaves are exactly `tensors`.
        self._tensor_pos = tensor_pos
        # Which distinct tensor each of those positions holds; None when all differ.
        self._tensor_index = tensor_index
        self.movers: list[Any] = movers if movers is not None else []
        self._mover_pos = mover_pos
        self._mover_index = mover_index
        # OrderedDicts of this batch whose order optree's rebuild would lose.
        self._reorder = reorder
        # Indices into `tensors` of those that only objects with their own .to hold (each
        # one object): that .to moves them, the copy engine leaves them. Set by the walker.
        self.own: frozenset[int] = frozenset()
        # The ids of those objects.
        self.owners: frozenset[int] = frozenset()

    def keep_own(self) -> None:
        """Let the copy engine move every tensor, those inside objects with a ``.to`` too."""
        self.own = self.owners = frozenset()

    def repeats(self) -> bool:
        """Whether a tensor sits in two places of the batch (listed once in :attr:`tensors`)."""
        return self._tensor_index is not None

    def to_copy(self) -> list[torch.Tensor]:
        """The tensors the copy engine moves: all of :attr:`tensors` but the :attr:`own` ones."""
        own = self.own
        if not own:
            return self.tensors
        return [t for i, t in enumerate(self.tensors) if i not in own]

    def merge(self, copied: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """One tensor per :attr:`tensors`: ``copied`` for :meth:`to_copy`'s, others as they were."""
        own = self.own
        if not own:
            return copied if type(copied) is list else list(copied)
        it = iter(copied)
        return [t if i in own else next(it) for i, t in enumerate(self.tensors)]

    def rebuild(
        self,
        new_tensors: Sequence[torch.Tensor],
        new_movers: Sequence[Any] | None = None,
        *,
        call_to: Callable[[Any], Any] | None = None,
        target: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> object:
        """Return the batch with ``tensors`` (and ``movers``, if given) replaced one for one.

        Args:
            new_tensors: One replacement per tensor of :attr:`tensors`.
            new_movers: One replacement per object of :attr:`movers`.
            call_to: For a move: calls an object's own ``.to`` (objects with state
                and a ``.to`` are rebuilt around their moved tensors, then this is
                called on the copy). ``None`` rebuilds them without a ``.to``.
            target: With ``call_to``: every tensor reachable from what such a
                ``.to`` returns must be on this device (or be one of the object's
                own tensors, left where it was).
            dtype: With ``call_to``: the move's floating dtype (an object whose
                tensors are all on ``target`` and of it is not moved at all).

        Raises:
            UnsupportedBatchError: A container in the batch rejects its own
                contents, or an object's ``.to`` left a tensor off ``target``;
                the message names its path and type.
        """
        if len(new_tensors) != len(self.tensors):
            raise ValueError(f"expected {len(self.tensors)} tensors, got {len(new_tensors)}")
        positions = self._tensor_pos
        if positions is None:
            leaves: list[Any] = new_tensors if type(new_tensors) is list else list(new_tensors)
        else:
            leaves = self._leaves.copy()
            index = self._tensor_index
            values = new_tensors if index is None else map(new_tensors.__getitem__, index)
            # Assign at C speed: the map runs setitem, the zero-length deque drains it.
            collections.deque(map(leaves.__setitem__, positions, values), maxlen=0)
            if new_movers is not None and self._mover_pos and self._mover_index is not None:
                moved = map(new_movers.__getitem__, self._mover_index)
                collections.deque(map(leaves.__setitem__, self._mover_pos, moved), maxlen=0)
        finish = None
        if not self._objects:
            result = self._unflatten(leaves)  # optree's own nodes only: nothing to finish
        else:
            finish = Finish(
                call_to,
                target if call_to is not None else None,
                self._skip,
                dtype,
                self.owners if call_to is not None else frozenset(),
            )
            with moving(finish):
                result = self._unflatten(leaves)
        if self._reorder:
            restore_order(result, self._reorder)
        if self._joins is not _NO_JOINS:
            made = finish.made if finish is not None else None
            result = join_repeats(self._joins, result, self._skip, made)
        return result

    def join_repeats_of(self, batch: object) -> None:
        """Have the rebuild make each container or object ``batch`` holds twice one again."""
        self._joins = batch

    def _unflatten(self, leaves: list[Any]) -> object:
        try:
            return optree.tree_unflatten(self._spec, leaves)
        except UnsupportedBatchError:
            raise
        except Exception as exc:  # any constructor may raise anything; say where
            rebuild_located(self._spec, leaves, ROOT)
            raise UnsupportedBatchError(
                f"could not rebuild the batch: {type(exc).__name__}: {exc}"
            ) from exc
