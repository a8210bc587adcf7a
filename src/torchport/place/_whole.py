"""A batch that is one object with its own ``.to``, moved whole without the walker's rebuild.

PyTorch Geometric's ``Data``/``Batch``/``HeteroData``, a ``TensorDict`` or a
tensorclass handed to ``to_device`` (or yielded by a loader) is moved as the walker
would move it (``place/_mover_recipe.py``): when every tensor it holds is where the
move goes, it comes back as it is and ``.to`` is not called; otherwise the result
is what its own ``.to`` gives on a shallow copy, every tensor reachable from that
result is on the target or is one of the input's own tensors left where it was
(PyG's ``_slice_dict``/``_inc_dict``), and the input holds the tensors it held.

What this adds is speed: the object's tensors are found by a loop over its state
(builtin containers and objects the walker has already classified; no optree
flatten, no structure, no rebuild), so the move costs little more than that
``.to``; an input (and a result) held as the last one of its class was is read by
that one's plan (``place/_whole_plans.py``), checked by types at C speed.
Whenever the loop meets something the walker has not decided yet (a type seen for
the first time, a container subclass, a value to look into), a container met twice
(a cycle, or sharing ``.to`` would split), a tensor met twice, or objects with a
``.to`` nested deeper than a ``Data``'s storages, it gives up and the walker moves
the batch (:func:`whole_tensors` is None): both ways give the same result.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any

import torch

from torchport._device_types import CPU, META
from torchport.errors import UnsupportedBatchError
from torchport.place._containers import RebuildRefused
from torchport.place._copying import copy_object, read_state
from torchport.place._lasting import forget_with, lasting
from torchport.place._leaf_kinds import PLAIN_TENSOR_TYPES
from torchport.place._locate import refused_message
from torchport.place._moved_none import check_moved
from torchport.place._mover_recipe import SHALLOW_NESTING, check_reached, wrote_through
from torchport.place._node_codes import CODES as _CODES
from torchport.place._node_codes import DICT_CODE as _DICT
from torchport.place._node_codes import LIST_CODE as _LIST
from torchport.place._node_codes import MOVES_CODE as _MOVES
from torchport.place._node_codes import MOVES_STATE_CODE as _MOVES_STATE
from torchport.place._node_codes import TENSOR_CODE as _TENSOR
from torchport.place._node_codes import TUPLE_CODE as _TUPLE
from torchport.place._node_codes import VALUE_CODE as _VALUE
from torchport.place._node_codes import WALKED_CODE as _WALKED
from torchport.place._node_codes import WALKED_STATE_CODE as _WALKED_STATE
from torchport.place._node_codes import code_of as _code_of
from torchport.place._node_codes import node_values as _values
from torchport.place._objects import contents
from torchport.place._own_to import call_own_to
from torchport.place._settled import all_on, any_on
from torchport.place._tree import tensors_inside
from torchport.place._trust import EVERY, FAILED, FIRST, FULL_CHECKS, failed, passed
from torchport.place._uncopyable import COPY_FAILURES, copy_failure
from torchport.place._untouched import (
    END,
    RESTORED,
    STATE,
    VERSION,
    Snapshot,
    busy,
    changed_tensor,
    flatten,
    hold,
    lay_any,
    let_go,
    record,
    snapshot,
    versions,
)
from torchport.place._whole_plans import PLANS, RESULT_PLANS, Plan, plan_of
from torchport.place._whole_result import (
    ALL_HELD,
    held_by,
    held_fewer,
    held_in,
    not_in,
    path_in,
    unshared_tensors,
)

__all__ = ["Inside", "move_whole", "state_tensors", "whole_tensors"]


_dict_of = object.__getattribute__
_VERSION = VERSION
_flatten = flatten
# Whether a tensor is on a CPU or meta target (an accelerator: ``all_on``, by index).
_ON: dict[torch.device, Callable[[torch.Tensor], bool]] = {
    torch.device(CPU): operator.attrgetter("is_cpu"),
    torch.device(META): operator.attrgetter("is_meta"),
}
# Per class with its own .to (those that last): False when its last move by move_whole
# found every tensor on the target (no call), True when it called the .to. _read lays
# the record while it reads only when a call is likely (a class without an entry, or
# True); otherwise move_whole records what the input holds before the call itself.
_LAYS: dict[type, bool] = {}
forget_with(_LAYS)


class Inside:
    """What a batch that is one object with its own ``.to`` holds, read by :func:`whole_tensors`.

    Attributes:
        tensors: Its distinct tensors.
        ids: Their ids.
        nodes: The dicts, lists and objects read on the way (the object included), in
            the order read: those the result of its ``.to`` still shares are the
            input's, and what they hold is recorded around the call
            (``place/_untouched.py``).
        opened: Their ids.
        restored: ``RESTORED`` when it was read (see ``place/_untouched.py``).
        laid: What ``nodes`` held when it was read, laid in their order as
            ``place/_untouched.py``'s record lays it (the record of a move, ready); None
            when the class's last move found every tensor there (see ``_LAYS``).
        late: Read for a move that comes later (``whole_tensors(lay=False)``): the move
            reads the input again under its guard before it decides anything.
        relay: Lays ``nodes`` again as ``laid`` was laid (``_untouched.flatten``, or
            the plan's own, written out: ``place/_whole_code.py``).
        plan: The plan it was read by (its layout: ``place/_trust.py``), or None.
    """

    __slots__ = ("ids", "laid", "late", "nodes", "opened", "plan", "relay", "restored", "tensors")

    def __init__(
        self,
        tensors: list[torch.Tensor],
        nodes: list[Any],
        opened: AbstractSet[int],
        restored: int,
        laid: list[Any] | None,
        ids: set[int],
        plan: Plan | None = None,
    ) -> None:
        self.tensors = tensors
        self.ids = ids
        self.nodes = nodes
        self.opened = opened
        self.restored = restored
        self.laid = laid
        self.late = False
        self.plan = plan
        self.relay = _flatten if plan is None else plan.relay


def whole_tensors(obj: Any, *, lay: bool = True) -> Inside | None:
    """What ``obj`` holds if it is one object with its own ``.to`` that can be moved whole.

    None when the walker must move it (see the module): any other batch, a type the
    walker has not registered yet, or a state the loop does not decide. ``lay``: lay
    the move's record while reading (the move follows at once); False where the move
    comes later (a prefetching loader's hand-over), so that the record is taken just
    before the call and a change made to the input meanwhile is not taken for the
    ``.to``'s (and put back): :func:`move_whole` then reads the input again first.
    """
    cls = type(obj)
    if _CODES.get(cls) is _MOVES:
        plan = PLANS.get(cls)
        if plan is not None:  # _read's plan path, one frame less (the common case)
            restored = RESTORED[0]  # read first: a restore after it reads the input again
            read = plan.read(obj)  # (read_planned, written out for the plan)
            if read is not None:
                tensors, nodes, opened, ids, laid = read
                planned = Inside(tensors, nodes, opened, restored, laid if lay else None, ids, plan)
                if not lay:
                    planned.late = True
                return planned
    inside = _read(obj, lay)
    if inside is not None and not lay:
        inside.late = True
    return inside


def move_whole(
    obj: Any,
    inside: Inside,
    target: torch.device,
    non_blocking: bool | None,
    batch: Any = None,
) -> Any:
    """Move ``obj`` (``inside``: its :func:`whole_tensors`) as the walker would.

    ``batch``: the batch that holds ``obj`` (``place/_whole_held.py``), whose paths the
    errors name (``batch['obj'].x``); None when ``obj`` is the batch.

    Synchronizes as the object's ``.to`` does (see ``call_own_to``); not at all when
    every tensor is on ``target`` already (``obj`` itself is returned).

    What the input holds is recorded before the call (laid while ``inside`` was read,
    or here when that read laid nothing) and compared after it (``place/_untouched.py``);
    a thread waits while another runs a checked move of the same ``obj``, and reads it
    again when an input was put back meanwhile. The checks of the call (the input
    unchanged, its tensors' versions, the result walked, "moved none") run on every
    call of a layout's first ``FIRST`` (per target and ``non_blocking``) and then on
    every ``EVERY``-th only (``place/_trust.py``, which says what a ``.to`` misbehaving
    for some values only may then do unseen; ``TORCHPORT_FULL_CHECKS=1``: every call).

    Raises:
        UnsupportedBatchError: The shallow copy cannot be made, the ``.to`` raised,
            left a tensor it made off ``target``, moved none of the input's tensors
            while none was on ``target`` (``place/_moved_none.py``), or changed what
            the input holds (the input is put back first).
    """
    # (The checks below are written out here, not called: every frame between to_device
    # and the .to costs as much as a check of a few tensors.)
    on = _ON.get(target)  # hashed in C; None: an accelerator, compared by all_on
    there = all(map(on, inside.tensors)) if on is not None else all_on(inside.tensors, target)
    cls = type(obj)
    if there and inside.restored == RESTORED[0] and not inside.late and not busy(obj):
        if inside.laid is not None and lasting(cls):
            _LAYS[cls] = False
        return obj  # nothing to move: no copy, no call
    # What the input holds is recorded and compared around every call, so that a .to
    # writing into it (through what the shallow copy shares, on any move) is refused
    # with the input put back; one checked move of an object at a time (threads wait).
    guard = hold(obj)
    try:
        if inside.restored != RESTORED[0] or guard is None or inside.late:
            # Read before the guard, maybe while another thread's .to had changed the
            # input (it was put back since), or well before the move (a prefetching
            # loader's: the program may have changed the input since): read it again.
            fresh = _read(obj)
            if fresh is not None:
                inside = fresh
                there = all_on(inside.tensors, target)
            elif inside.late:
                there = False  # what it holds now is the walker's to read: no early return
        if there and inside.restored == RESTORED[0]:
            return obj  # nothing to move (read again under the guard): no call
        nodes = inside.nodes
        laid = inside.laid
        before: Snapshot | None = None  # None: the record is nodes/laid, compared inline
        if inside.restored != RESTORED[0] or inside.late:
            before = snapshot(obj)  # (an input the loop could not read again)
        elif laid is None:
            before = record(nodes)
            if lasting(cls):
                _LAYS[cls] = True
        tensors = inside.tensors
        plan = inside.plan
        quick = False  # only what a layout leaves open is checked (place/_trust.py)
        call = (target, non_blocking)  # (counted per target and non_blocking)
        if plan is not None and before is None:
            counts = plan.calls.get(call) or plan.calls.setdefault(call, [0, 0])
            seen = counts[0] + 1
            counts[0] = seen
            quick = counts[1] >= FIRST and seen % EVERY != 0 and not FULL_CHECKS[0]
            quick = quick and cls not in FAILED
        try:  # (read on quick calls too: a result of another type is then checked in full)
            counted = list(map(_VERSION, tensors))
        except RuntimeError:  # an inference tensor: versions() reads it as -1
            counted = versions(tensors)
        try:
            result = call_own_to(copy_object(obj), target, non_blocking, None)
            if quick and type(result) is plan.result:  # type: ignore[union-attr]
                return result  # (the finally below lets the guard go)
            if before is not None:
                if before.changed():
                    raise RebuildRefused(wrote_through(cls))
            else:
                now = inside.relay(nodes)  # (Snapshot.changed, written out)
                if len(now) != len(laid) or not all(map(operator.is_, now, laid)):  # type: ignore[arg-type]
                    raise RebuildRefused(wrote_through(cls))
            try:
                same = list(map(_VERSION, tensors)) == counted
            except RuntimeError:
                same = versions(tensors) == counted
            if not same:
                raise RebuildRefused(changed_tensor(cls))
            skipped: list[Any] = []  # the input's nodes the result holds (not read)
            shared = inside.opened
            rplan = RESULT_PLANS.get(type(result))
            found = None if rplan is None else rplan.walk(result, shared, skipped)
            if found is None:  # (unshared_tensors: its plan again, then the loop)
                skipped.clear()
                found = unshared_tensors(result, shared, skipped)
            ids = inside.ids
            reached: list[torch.Tensor] | None = None
            # It moved something: a tensor reachable from result that is not the input's
            # (only outside what it shares with the input: that is checked unchanged).
            moved = found is not None and bool(found)
            if moved and id(found[0]) in ids:  # type: ignore[index]
                moved = not ids.issuperset(map(id, found))  # type: ignore[arg-type]
            found_there = found is not None and (
                all(map(on, found)) if on is not None else all_on(found, target)
            )
            if not found_there:
                left = frozenset(ids)  # the input's own may stay where they were
                if found is None or not all_on(not_in(found, left), target):
                    reached = check_reached(result, target, left, tensors_inside)  # names it
                    moved = not left.issuperset(map(id, reached))
            # (Whether all are still held first: a right .to replaced some, so the input's
            # devices need no second pass; both only read. Where every tensor found is on
            # the target, counting what the shared nodes hold may answer it: _held_fewer.)
            if not moved or (
                not (found_there and held_fewer(skipped, len(ids)))
                and (held_by if reached is None else held_in)(ids, found, skipped, reached)
                and not (any(map(on, tensors)) if on is not None else any_on(tensors, target))
            ):
                # None was there and none was replaced by its copy (all still reachable).
                check_moved(obj, tensors, target, moved, ALL_HELD)
            if plan is not None:
                passed(plan, result, call)
        except RebuildRefused as exc:
            (Snapshot(nodes, laid) if before is None else before).restore()  # type: ignore[arg-type]
            failed(plan, cls)
            message = refused_message(path_in(batch, obj), cls, str(exc))
            raise UnsupportedBatchError(message) from exc
        except BaseException as exc:
            (Snapshot(nodes, laid) if before is None else before).restore()  # type: ignore[arg-type]
            if isinstance(exc, UnsupportedBatchError):  # (a check's: off the target, moved none)
                failed(plan, cls)
            if isinstance(exc, COPY_FAILURES):
                # A tensor torch cannot copy to target: named by its path, as the walker does.
                failure = copy_failure(obj if batch is None else batch, tensors, target, exc)
                if failure is not None:
                    try:
                        raise failure from exc
                    finally:
                        del failure  # no cycle between this frame and the error
            if isinstance(exc, Exception) and not isinstance(exc, UnsupportedBatchError):
                # As the walker reports it (place/_locate.py): the same error on every move.
                reason = f"calling its .to on a shallow copy raised {type(exc).__name__}: {exc}"
                where = path_in(batch, obj)
                raise UnsupportedBatchError(refused_message(where, cls, reason)) from exc
            raise
    finally:
        let_go(obj, guard)
    return result


def state_tensors(obj: Any) -> list[torch.Tensor] | None:
    """The distinct tensors an object with its own ``.to`` holds, or None (see the module).

    Goes through the object's state (``contents``), builtin ``dict``/``list``/``tuple``
    and the objects the walker registered (those with a ``.to`` by ``contents``, the
    others by their state), exactly where the walker's ``tensors_inside`` goes.
    """
    read = _read(obj, False)
    return None if read is None else read.tensors


def _read(obj: Any, lay_record: bool = True) -> Inside | None:
    """What ``obj`` holds (see :func:`whole_tensors`), read in one loop without recursion.

    ``pending`` holds the runs of children still to read, each with how deep objects
    with their own ``.to`` are nested there (``obj`` itself is 1); past
    ``SHALLOW_NESTING`` the walker moves the batch. Each dict, list and object opened
    is laid into the record as it is read, exactly as ``place/_untouched.py`` lays it
    again after a call (its ``Snapshot``): no second pass before the call; unless the
    class's last move found every tensor there (``_LAYS``: a no-op is likely again).

    A class whose last full read laid its record and met only builtin dicts and lists
    and objects whose state is their ``__dict__`` keeps where that read found its
    nodes and tensors (``_PLANS``); an input held the same way is read by that plan
    (``place/_whole_plans.py``, which always lays the record: it costs less than this loop
    without it), any other by this loop, which then keeps its plan instead.
    """
    codes = _CODES.get
    cls = type(obj)
    code = codes(cls)
    if code is None:
        code = _code_of(cls)
    if code is not _MOVES and code is not _MOVES_STATE:
        return None  # (a .to may return another type): the walker reads it
    restored = RESTORED[0]  # read first: a restore after it reads the input again
    if code is _MOVES:
        plan = PLANS.get(cls)
        if plan is not None:
            read = plan.read(obj)
            if read is not None:
                tensors, nodes, ids_of_nodes, ids, laid = read
                return Inside(
                    tensors,
                    nodes,
                    ids_of_nodes,
                    restored,
                    laid if lay_record else None,
                    ids,
                    plan,
                )
    root = cls
    plannable = code is _MOVES and lay_record
    only_tensors = PLAIN_TENSOR_TYPES.issuperset
    found: list[torch.Tensor] = []
    add = found.append
    opened: dict[int, Any] = {id(obj): obj}
    mark = opened.__setitem__
    flat: list[Any] | None = None
    lay: Callable[[Any], object]
    lay_one: Callable[[Any], object]
    if lay_record and _LAYS.get(cls, True):
        flat = []
        lay = flat.extend
        lay_one = flat.append
        first = _laid_values(obj, code, flat)
    else:  # its last move found every tensor there: most likely none is needed now
        lay = lay_one = id  # (a C builtin that does nothing with its argument)
        first = _values(obj, code)
    end = END
    pending: list[tuple[Any, int]] = [(first, 1)]
    push = pending.append
    while pending:
        items, depth = pending.pop()
        for x in items:
            cls = type(x)
            code = codes(cls)
            if code is _TENSOR:
                add(x)
                continue
            if code is _VALUE:
                continue
            if code is None:
                code = _code_of(cls)
                if code is None:
                    return None  # a type not decided yet, a value to look into, a leaf .to
                if code is _TENSOR:
                    add(x)
                    continue
                if code is _VALUE:
                    continue
            key = id(x)
            if key in opened:
                # Met twice: the walker keeps it one object (or refuses a cycle). A tuple
                # is never recorded (a cycle through one passes a list, dict or object).
                return None
            if code is _DICT:
                mark(key, x)
                children = x.values()
                lay(x)
                lay(children)
                lay_one(end)
            elif code is _LIST:
                mark(key, x)
                children = x
                lay(x)
                lay_one(end)
            elif code is _TUPLE:
                children = x
                plannable = False  # (a tuple is not laid: no plan picks from it)
            else:
                mark(key, x)
                if code is _MOVES_STATE or code is _WALKED_STATE:
                    plannable = False  # (slots or a builtin base: read as the walker does)
                if code is _MOVES or code is _MOVES_STATE:
                    if depth >= SHALLOW_NESTING:
                        return None  # nested deeper than a Data's storages
                    push((_laid_values(x, code, flat), depth + 1))
                else:
                    push((_laid_values(x, code, flat), depth))
                continue
            if only_tensors(map(type, children)):
                found.extend(children)  # the common dict of tensors, at C speed
            else:
                push((children, depth))
    ids = set(map(id, found))
    if len(ids) != len(found):
        return None  # a tensor held twice: the walker keeps it one tensor
    if plannable and flat is not None and lasting(root):
        plan = plan_of(flat, list(opened.values()))
        if plan is not None:
            PLANS[root] = plan
    return Inside(found, list(opened.values()), opened.keys(), restored, flat, ids)


def _laid_values(obj: Any, code: int, flat: list[Any] | None) -> Any:
    """:func:`_values`, with ``obj``'s run laid into ``flat`` as ``place/_untouched.py`` lays it."""
    if flat is None:
        return _values(obj, code)
    if code is _MOVES or code is _WALKED:
        own = _dict_of(obj, "__dict__")
        values = own.values()
        flat.append(STATE)
        flat.append(own)
        flat.extend(own)
        flat.extend(values)
        flat.append(END)
        return values
    lay_any(obj, type(obj), flat)
    flat.append(END)
    return contents(obj) if code is _MOVES_STATE else read_state(obj).values
