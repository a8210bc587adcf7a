"""Objects with state and their own ``.to`` (PyG's ``Data``, ``TensorDict``): their recipe.

The walker opens such an object into the distinct tensors it holds (found by walking
its state) and, on a move, gives what the object's own ``.to`` gives on a shallow copy
(``copy.copy``): the tensors it moves are moved, those it leaves on the host stay
there, non-tensor payload is shared. When every tensor is where the move goes, the
object comes back as it is and ``.to`` is not called. An object whose tensor also sits
elsewhere in the batch, that holds one tensor twice, or that nests such objects deeper
than a ``Data``'s storages is deep-copied around the batch's moved tensors instead,
then its ``.to`` is called on that copy, so sharing is kept. Every tensor reachable
from what ``.to`` returns must be on the target or be one of the input's own tensors
left where it was (:func:`check_reached`). ``place/_whole.py`` moves a batch that is
one such object without the walker, to the same result.

What such an object keeps on the host, and why that keeps the promise
----------------------------------------------------------------------

``to_device`` promises that every tensor reachable from its result is on the
target, "or skipped on request"; for an object with its own ``.to`` the request is
the object's own: the tensors its ``.to`` leaves where they are stay there, because
the library that wrote that ``.to`` reads them on the host. The known ones:

* PyTorch Geometric ``Batch``: ``_slice_dict`` and ``_inc_dict`` (where each graph
  starts in every attribute), read on the CPU by ``get_example``,
  ``index_select`` and ``to_data_list``; moving them would cost a host sync per
  key per graph read back, and PyG's ``.to`` never moves them. ``Data`` and
  ``HeteroData`` keep nothing on the host: their ``.to`` moves every tensor
  attribute of every store.
* ``TensorDict`` and tensorclasses: nothing. Their ``.to`` moves every tensor
  field, nested ones included, but leaves on the CPU a tensor held inside a
  non-tensor field (``extra={"k": t}``); such a field is stored as a
  ``NonTensorData`` inside the object's ``TensorDict``, deeper than a ``Data``'s
  storages, so the object is deep-copied around moved tensors (below) and ``t``
  is moved: every tensor reachable from the result is on the target.
* ``PackedSequence.batch_sizes`` is kept on the CPU by the walker itself (not by a
  ``.to``), as ``PackedSequence.to`` does, because the RNN kernels read it there.

A tensor left on the host is always one of the input's own tensors, shared with
the input (never copied), and only one the object's ``.to`` left: a tensor that
``.to`` made on the host is refused (:func:`check_reached`). And a ``.to`` that
moved none of the tensors that had to move (it ignores its device: returns ``self``
or an unmoved copy) is refused (:func:`check_moved`) when none of the object's
tensors was on the target (``place/_moved_none.py`` says why only then).
The exception to the exception: an object moved by deep copy (it shares a tensor
with the rest of the batch, holds one twice, nests such objects deeper than a
``Data``'s storages, or is moved with ``dtype``) has every tensor moved before its
``.to`` runs, so nothing of it stays on the host, its bookkeeping included
(``get_example`` on such a ``Batch`` then reads its slices from the device).
"""

from __future__ import annotations

import collections
import itertools
import operator
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from torchport.place._containers import Recipe
from torchport.place._copying import (
    RebuildRefused,
    copy_object,
    deep_copy_sharing,
)
from torchport.place._entries import TensorInsideEntry
from torchport.place._lasting import forget_with, lasting
from torchport.place._leaf_kinds import TENSOR
from torchport.place._locate import how_rebuilt
from torchport.place._moved_none import check_moved, where_in
from torchport.place._objects import VALUE, contents, kind_of_object, on_device
from torchport.place._rebuilding import current
from torchport.place._untouched import (
    RESTORED,
    busy,
    changed_tensor,
    hold,
    let_go,
    snapshot,
    versions,
    wait_for,
)

if TYPE_CHECKING:
    from torchport.place._layout import BatchLayout

__all__ = [
    "SHALLOW_NESTING",
    "Opened",
    "check_reached",
    "mark_own",
    "mover_recipe",
    "note_repeats",
]

# Per thread, while objects are opened: .opening (ids being opened), .nested, .repeats.
_LOCAL = threading.local()

_BUILTIN_CONTAINERS = (dict, list, tuple, set, frozenset, collections.deque)
# Classes with a .to whose own deep copy does not give back the tensors it is handed
# in the memo (it clones them, or shares attributes with the original): copied by state.
_COPIED_BY_STATE: set[type] = set()
forget_with(_COPIED_BY_STATE)


def _copy_sharing(
    obj: Any,
    tensors: list[torch.Tensor],
    moved: Sequence[torch.Tensor],
    find: Callable[[list[Any]], list[torch.Tensor]],
) -> Any:
    """A deep copy of ``obj`` that holds exactly the ``moved`` tensors in place of ``tensors``.

    The class's own deep copy is tried first (it knows the object's back
    references); where what it returns holds any other tensor (a clone, or one
    shared with the input), the object is copied by its state instead, and the
    class is remembered so that later batches skip the first try.

    Raises:
        RebuildRefused: Neither copy holds only the moved tensors.
    """
    cls = type(obj)
    allowed = set(map(id, moved))
    if cls not in _COPIED_BY_STATE:
        result = deep_copy_sharing(obj, tensors, moved, _stateful)
        if allowed.issuperset(map(id, find(contents(result)))):
            return result
        if lasting(cls):
            _COPIED_BY_STATE.add(cls)
    result = deep_copy_sharing(obj, tensors, moved, _stateful, by_state=True)
    stray = [t for t in find(contents(result)) if id(t) not in allowed]
    if stray:
        raise RebuildRefused(
            f"a copy of the {cls.__name__} object still holds a tensor on {stray[0].device} "
            "that torchport did not move (its state is not all in its __dict__ and "
            "__slots__), so its .to cannot be called on a copy without leaving the input "
            "changed or a tensor behind; move it yourself and pass its key in skip_keys"
        )
    return result


def _stateful(cls: type) -> bool:
    """Objects with state, walked or with their own ``.to`` (not builtin containers)."""
    return not issubclass(cls, _BUILTIN_CONTAINERS) and kind_of_object(cls) != VALUE


class Opened:
    """The node data of an object with its own ``.to``: the object and its distinct tensors.

    ``nested`` is how deep objects with their own ``.to`` nest inside it (1: none;
    2: a PyG ``Data`` and its storages, a ``TensorDict`` and its sub-dicts);
    ``repeats`` whether it holds one tensor in two places (its own ``.to`` would
    make two copies of it).
    """

    __slots__ = ("nested", "obj", "repeats", "tensors")

    def __init__(self, obj: Any, tensors: list[torch.Tensor], nested: int, repeats: bool) -> None:
        self.obj = obj
        self.tensors = tensors
        self.nested = nested
        self.repeats = repeats


def note_repeats() -> None:
    """Tell the object being opened (if any) that a tensor sits twice inside it."""
    _LOCAL.repeats = True


# Deeper than this, an object with its own .to inside another is shared by a shallow copy
# of the outer one (a PyG Data in a Data's storage), and an in-place .to would change it.
SHALLOW_NESTING = 2


def _there(tensors: list[torch.Tensor], target: torch.device, dtype: torch.dtype | None) -> bool:
    """Whether every tensor is on ``target`` already (and of ``dtype``, if floating)."""
    return all(
        on_device(t, target) and (dtype is None or t.dtype == dtype or not t.is_floating_point())
        for t in tensors
    )


def mover_recipe(cls: type, find: Callable[[list[Any]], list[torch.Tensor]]) -> Recipe:
    """Children: the distinct tensors the object holds (found by ``find``); see the module."""

    def flatten(obj: Any) -> tuple[list[torch.Tensor], Opened, range]:
        active: set[int] = getattr(_LOCAL, "opening", None) or set()
        key = id(obj)
        if key in active:
            raise RebuildRefused(
                f"the {cls.__name__} object contains itself through its attributes; "
                "to_device cannot copy a cyclic structure"
            )
        _LOCAL.opening = active
        active.add(key)
        outer = getattr(_LOCAL, "nested", 0)
        outer_repeats = getattr(_LOCAL, "repeats", False)
        _LOCAL.nested = len(active)
        _LOCAL.repeats = False
        try:
            while True:
                # Read while no other thread's checked .to of it runs and none of them put
                # an input back meanwhile: a refused .to changes the input until then.
                restored = RESTORED[0]
                if busy(obj):
                    wait_for(obj)
                    continue
                _LOCAL.nested = len(active)
                _LOCAL.repeats = False
                tensors = find(contents(obj))
                nested = _LOCAL.nested - len(active) + 1
                repeats = _LOCAL.repeats
                if restored == RESTORED[0] and not busy(obj):
                    break
        finally:
            active.discard(key)
            _LOCAL.nested = max(outer, _LOCAL.nested)
            _LOCAL.repeats = outer_repeats or _LOCAL.repeats
        return tensors, Opened(obj, tensors, nested, repeats), range(len(tensors))

    def unflatten(meta: Opened, moved: Any) -> Any:
        obj, tensors = meta.obj, meta.tensors
        finish = current()
        call_to = finish.call_to
        if call_to is None or finish.target is None:
            if all(map(operator.is_, moved, tensors)):
                return obj
        elif _there(tensors, finish.target, finish.dtype):
            return obj  # nothing to move: no copy, no call
        result = finish.made.get(id(obj))
        if result is not None:
            return result
        failing = finish.failing
        if id(obj) in failing:
            # The rebuild runs again to find the failure's path (place/_locate.py): say
            # what this object's rebuild raised rather than call its .to a second time.
            raise RebuildRefused(_failed_again(type(obj)))
        failing.add(id(obj))  # until the rebuild below returns
        if call_to is not None and id(obj) in finish.own:
            result = _own_to_on_copy(obj, tensors, call_to)
            if finish.target is not None:
                own = frozenset(map(id, tensors))
                reached = check_reached(result, finish.target, own, find)
                moved = not own.issuperset(map(id, reached))
                check_moved(
                    obj, tensors, finish.target, moved, lambda: own.issubset(map(id, reached))
                )
        else:
            result = _copy_sharing(obj, tensors, moved, find)
            if call_to is not None:
                result = call_to(result)
                if finish.target is not None:
                    check_reached(result, finish.target, frozenset(), find)
        failing.discard(id(obj))
        finish.made[id(obj)] = result
        return result

    return Recipe(flatten, unflatten, TensorInsideEntry)


def _failed_again(cls: type) -> str:
    """Why the rebuild of a ``cls`` object failed, from the exception being handled.

    Said as the relocation says it of any failure (``place/_locate.py``); a new
    exception, so that no cycle holds the first one's frames (and the batch's
    tensors) past one garbage collection.
    """
    exc = sys.exception()
    if exc is None or isinstance(exc, RebuildRefused):
        return str(exc) if exc is not None else f"rebuilding the {cls.__name__} object failed"
    return f"{how_rebuilt(cls)} raised {type(exc).__name__}: {exc}"


def _own_to_on_copy(obj: Any, tensors: list[torch.Tensor], call_to: Callable[[Any], Any]) -> Any:
    """What ``obj``'s own ``.to`` gives on a shallow copy; the input must come out as it was.

    What the input holds is recorded before every call and put back if the call
    changed it or raised (``place/_untouched.py``), one checked call of ``obj`` at a
    time (another thread moving it waits).

    Raises:
        RebuildRefused: The copy cannot be made, or the call changed what the input
            holds (its ``.to`` wrote through a container the shallow copy shares with
            it, or otherwise); the input is as it was. Or the call changed one of
            ``tensors`` (the input's) in place (``versions``), which cannot be undone.
    """
    guard = hold(obj)
    try:
        before = snapshot(obj)
        counted = versions(tensors)
        try:
            result = call_to(copy_object(obj))
            if before.changed():
                raise RebuildRefused(wrote_through(type(obj)))
            if versions(tensors) != counted:
                raise RebuildRefused(changed_tensor(type(obj)))
        except BaseException:
            before.restore()
            raise
    finally:
        let_go(obj, guard)
    return result


def wrote_through(cls: type) -> str:
    """Why an object's ``.to`` that changed the input through its shallow copy is refused."""
    return (
        f"the {cls.__name__} object's .to, called on a shallow copy (copy.copy), "
        "changed the input through a container or object the copy shares with it (the "
        "input is left as it was); give the class a __copy__ that copies what its .to "
        "replaces (as PyTorch Geometric's storages copy their mapping), or move it "
        "yourself and pass its key in skip_keys"
    )


def check_reached(
    result: Any,
    target: torch.device,
    left: frozenset[int],
    find: Callable[[list[Any]], list[torch.Tensor]],
) -> list[torch.Tensor]:
    """Raise unless every tensor reachable from ``result`` (found by ``find``) is on ``target``.

    Tensors whose ids are in ``left`` (the object's own, which its ``.to`` left where
    they were, as PyG leaves ``_slice_dict`` on the CPU) pass too. Returns the
    tensors reachable from ``result``.

    Raises:
        RebuildRefused: One is not; the message says where it is in ``result``.
    """
    reached = find([result])
    for t in reached:
        if not on_device(t, target) and id(t) not in left:
            where = where_in(result, "result", t)
            raise RebuildRefused(
                f"its .to({str(target)!r}) returned an object (result) that still holds a "
                f"tensor on {t.device} at {where}; torchport moves every tensor the "
                "object holds before calling .to, so this one is made by .to itself"
            )
    return reached


def mark_own(layout: BatchLayout, leaves: list[Any], kinds: list[Any], movers: Any) -> None:
    """Leave to each object with its own ``.to`` the tensors only it holds.

    Such an object is moved by its own ``.to`` on a shallow copy (see the module),
    so the copy engine must not copy its tensors too. That holds for an object
    none of whose tensors sits anywhere else in the batch (outside it, or in
    another such object); one that shares a tensor is rebuilt around the engine's
    copies instead, so the tensor stays one tensor.
    """
    if len({id(opened.obj) for opened in movers}) == len(movers):
        # The common case at C speed: each object met once, and every tensor leaf of the
        # batch one of theirs, met once (the batch is the object, or holds only such).
        inner = [id(t) for opened in movers for t in opened.tensors]
        tensor_leaves = list(map(id, itertools.compress(leaves, map(TENSOR.__eq__, kinds))))
        if len(inner) == len(tensor_leaves) == len(set(inner)) and set(inner) == set(tensor_leaves):
            owned = [opened for opened in movers if opened.nested <= SHALLOW_NESTING]
            owned = [opened for opened in owned if not opened.repeats]
            if len(owned) == len(movers):
                layout.owners = frozenset(id(opened.obj) for opened in movers)
                layout.own = frozenset(range(len(layout.tensors)))
                return
    total = collections.Counter(
        id(leaf) for leaf, kind in zip(leaves, kinds, strict=True) if kind == TENSOR
    )
    inside: collections.Counter[int] = collections.Counter()
    owner: dict[int, int] = {}
    for opened in movers:
        holder = id(opened.obj)
        for t in opened.tensors:
            inside[id(t)] += 1
            if owner.setdefault(id(t), holder) != holder:
                owner[id(t)] = 0  # held by two objects
    owners = {
        id(opened.obj)
        for opened in movers
        if opened.nested <= SHALLOW_NESTING
        and not opened.repeats
        and all(
            total[id(t)] == inside[id(t)] and owner[id(t)] == id(opened.obj) for t in opened.tensors
        )
    }
    if not owners:
        return
    position = {id(t): i for i, t in enumerate(layout.tensors)}
    layout.owners = frozenset(owners)
    layout.own = frozenset(
        position[id(t)] for opened in movers if id(opened.obj) in owners for t in opened.tensors
    )
