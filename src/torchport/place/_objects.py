"""Objects that are not containers: values, objects walked through their state, ``.to`` movers.

Every object a batch holds is one of these (decided once per type by
:func:`kind_of_object`), so no tensor inside an object can be passed by:

* **a value** (:data:`VALUE`): instances that hold no attributes of their own
  (``int``, ``str``, ``torch.dtype``, a numpy array, ...), and by decision
  classes, modules, functions, methods, ``functools.partial`` objects, weak
  references and ``Enum`` members: they are *referred to* by a batch, not part
  of it, and come back as the very object. (A numpy array of Python objects and
  a dict's values or items view hold objects without state of their own: the
  walker looks into each one, ``place/_tree.py``);
* **walked through its state** (:data:`WALKED`): any other object with a
  ``__dict__`` or ``__slots__`` and no ``.to`` (dataclasses, attrs and pydantic
  classes, ``torch.distributions`` objects, ``UserDict``/``ChainMap``, custom
  ``Mapping``s, plain classes). Its attributes are its children;
  ``functools.cached_property`` values are attributes like the others and move
  too. It comes back as the very object when nothing under it changed, else as
  a copy made without its constructor (:func:`~torchport.place._copying.copy_object`)
  with the changed attributes written past ``__setattr__``;
* **moved with its own ``.to``** (:data:`MOVER`), an object with state and a
  ``.to`` (PyTorch Geometric's ``Data``/``Batch``/``HeteroData``, a
  ``TensorDict``, ...): the tensors in its state are found by walking it. When
  every one of them is already where the move goes, the object comes back as it
  is and ``.to`` is not called. Otherwise the move gives what the object's own
  ``.to`` gives on a shallow copy (``copy.copy``, which honours the class's
  ``__copy__``): the tensors ``.to`` moves are moved, those it leaves on the host
  stay there (PyG's ``_slice_dict``/``_inc_dict``, which ``get_example`` reads on
  the CPU), and non-tensor payload is shared, never copied. Every tensor
  reachable from what ``.to`` returns must be on the target or be one of the
  input's own tensors left where it was, and the input's tensors must be the
  ones it held before (a ``.to`` that writes through what its shallow copy
  shares with the input is refused, naming the class). When one of its tensors
  also sits elsewhere in the batch (or in another such object), the object is
  instead deep-copied around the batch's moved tensors and ``.to`` is called on
  that copy, so the tensor stays one tensor. An object with a ``.to`` but no
  state the walker can read is a leaf whose ``.to`` is called as it is
  (``place/_tree.py``'s ``_MOVER``);
* **refused** (:func:`refusal`): modules, optimizers, LR schedulers and
  ``GradScaler``s, which hold training state that has its own rules, and
  iterators without state of their own (generators, ``map``, ``zip``, a list's
  iterator), whose items exist only once iterated; the error says what to do
  instead.
"""

from __future__ import annotations

import collections
import enum
import functools
import operator
import threading
import types
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import torch
from torch import nn

from torchport._device_types import CPU, META
from torchport.hardware import GRAD_SCALER, LR_SCHEDULER_BASES
from torchport.place._containers import Recipe, share_siblings
from torchport.place._copying import (
    RebuildRefused,
    State,
    copies_plainly,
    copy_object,
    deep_copy_sharing,
    defines_copy,
    has_state,
    read_state,
    restore_state,
    write_state,
)
from torchport.place._entries import StateEntry, TensorInsideEntry
from torchport.place._lasting import lasting

__all__ = [
    "MOVER",
    "SHALLOW_NESTING",
    "VALUE",
    "WALKED",
    "Finish",
    "Opened",
    "kind_of_object",
    "mover_recipe",
    "moving",
    "note_repeats",
    "object_recipe",
    "on_device",
    "refusal",
    "same_children",
]

VALUE = 0
WALKED = 1
MOVER = 2

# Instances of these are referred to by a batch, not part of it.
_REFERENCES: tuple[type, ...] = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    types.CodeType,
    types.FrameType,
    types.TracebackType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
    functools.partial,
    staticmethod,
    classmethod,
    property,
    weakref.ref,
    weakref.ProxyType,
    weakref.CallableProxyType,
    enum.Enum,
    torch.Size,
)


def refusal(cls: type, where: str, device: str | None) -> str | None:
    """Why ``to_device`` refuses an object of type ``cls`` at ``where``, and what to do; or None.

    Args:
        cls: The object's type.
        where: Its path in the batch (``batch['model']``), or ``"the object"``.
        device: The target, for the advice (``None``: written as ``device``).
    """
    name = cls.__name__
    if device is None:
        return _refusal(cls, name, where, "device", "device.type")
    return _refusal(cls, name, where, repr(device), repr(device.split(":")[0]))


def _refusal(cls: type, name: str, where: str, device: str, kind: str) -> str | None:
    if issubclass(cls, Iterator) and not has_state(cls):
        return (
            f"{where} is an iterator ({name}): what it yields is made or read only when "
            "it is iterated, so to_device cannot move it and would hand it back with "
            "its tensors where they are; turn it into a list first (list(it)), or "
            "keep it out of the batch"
        )
    if issubclass(cls, nn.Module):
        return (
            f"{where} is a module ({name}), which to_device moves in place, so it cannot "
            f"be part of a batch that is copied; move it on its own with "
            f"tp.to_device(module, {device}) (it keeps its Parameter objects) and keep "
            "it out of the batch, or pass the key it is under in skip_keys"
        )
    if issubclass(cls, torch.optim.Optimizer):
        return (
            f"{where} is an optimizer ({name}), whose state must follow its parameters; "
            f"move the model first, then the optimizer on its own with "
            f"tp.to_device(optimizer, {device}), and keep it out of the batch"
        )
    if issubclass(cls, LR_SCHEDULER_BASES):
        return (
            f"{where} is an LR scheduler ({name}); it holds no tensors of its own, only "
            "its optimizer's learning rates, so there is nothing to move: move the "
            f"optimizer (tp.to_device(optimizer, {device}), after the model) and keep "
            "using the same scheduler"
        )
    if issubclass(cls, GRAD_SCALER):
        return (
            f"{where} is a GradScaler ({name}): its device is fixed when it is built and "
            "its scale lives on the device of the first outputs it scales, so it cannot "
            f"be moved; build it for the device, torch.amp.GradScaler({kind}), "
            "and to carry its state over call new.load_state_dict(old.state_dict())"
        )
    return None


def kind_of_object(cls: type) -> int:
    """:data:`VALUE`, :data:`WALKED` or :data:`MOVER` for a type that is not a container."""
    if issubclass(cls, _REFERENCES) or not has_state(cls):
        return VALUE
    to = getattr(cls, "to", None)
    if callable(to):
        return MOVER
    return WALKED


def _stateful(cls: type) -> bool:
    """Objects with state, walked or with their own ``.to`` (not builtin containers)."""
    return not issubclass(cls, _BUILTIN_CONTAINERS) and kind_of_object(cls) != VALUE


_BUILTIN_CONTAINERS = (dict, list, tuple, set, frozenset, collections.deque)
# Classes with a .to whose own deep copy does not give back the tensors it is handed
# in the memo (it clones them, or shares attributes with the original): copied by state.
_COPIED_BY_STATE: set[type] = set()


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


def same_children(old: Sequence[Any], new: Sequence[Any]) -> bool:
    """Whether a node's rebuilt children hold exactly the objects it held before.

    optree rebuilds every builtin container, so a child dict is a new dict even
    when every leaf under it came back as it was; those are looked into (by
    identity of what they hold), anything else must be the very object.
    """
    return len(old) == len(new) and all(map(_same, old, new))


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    cls = type(a)
    if cls is not type(b):
        return False
    if cls is list or cls is tuple:
        return len(a) == len(b) and all(map(_same, a, b))
    if cls is dict:
        return len(a) == len(b) and all(_same(v, b.get(k, _same)) for k, v in a.items())
    return False


def object_recipe(
    cls: type, find: Callable[[list[Any], frozenset[Any]], list[torch.Tensor]]
) -> Recipe:
    """Walk an object through its state; rebuild it as a copy only when a child changed.

    ``find(values, skip)`` lists the tensors reachable from ``values`` (outside
    the keys in ``skip``): a custom ``Mapping``, ``Sequence`` or ``Set`` is checked
    with it after a move, through the items it hands out.
    """

    def flatten(obj: Any) -> tuple[list[Any], tuple[Any, State], list[str]]:
        state = read_state(obj)
        return state.values, (obj, state), state.names

    checks_items = issubclass(cls, Mapping | Sequence | AbstractSet) and not issubclass(
        cls, collections.UserDict | collections.UserList | collections.ChainMap
    )

    def unflatten(meta: tuple[Any, State], children: Any) -> Any:
        obj, state = meta
        finish = _current()
        if same_children(state.values, children):
            new = obj
        else:
            new = finish.made.get(id(obj))
            if new is None:
                new = finish.made[id(obj)] = copy_object(obj)
                values = share_siblings(state.values, list(children))
                if copies_plainly(type(obj)):
                    write_state(new, state, values)  # the copy has the state as it was
                else:
                    # copy.copy went through __copy__, __reduce_ex__ or __setstate__,
                    # which may leave an attribute out or change one: give the copy
                    # the state the object has, with the moved values.
                    restore_state(obj, new, state, values)
        if checks_items and finish.target is not None:
            _check_items(new, finish.target, finish.skip, find)
        return new

    return Recipe(flatten, unflatten, StateEntry)


def _check_items(
    container: Any,
    target: torch.device,
    skip: frozenset[Any],
    find: Callable[[list[Any], frozenset[Any]], list[torch.Tensor]],
) -> None:
    """Check that every tensor reachable from a custom container's items is moved too.

    Its items were moved through its attributes; one that computes its items from
    somewhere else, or holds them by weak reference (``WeakSet``,
    ``WeakValueDictionary``), would hand out tensors the walk never saw, directly
    or inside the objects it hands out.
    """
    try:
        if isinstance(container, Mapping):
            items = [v for k, v in container.items() if not (skip and _is_key(k, skip))]
        else:
            items = list(container)
    except Exception as exc:
        raise RebuildRefused(
            f"its items cannot be read back through the {type(container).__name__} "
            f"interface ({type(exc).__name__}: {exc}), so torchport cannot tell whether "
            "they were moved"
        ) from exc
    if not items:
        return
    for item in find(items, skip):
        if not on_device(item, target):
            raise RebuildRefused(
                f"it hands out an item holding a tensor on {item.device} that is not "
                f"among its attributes (those were moved to {target}); a container that "
                "computes its items or holds them by weak reference cannot be moved by "
                f"its state: give {type(container).__name__} a .to(device) method that "
                "moves what its items come from, or keep it out of the batch"
            )


def _is_key(key: Any, skip: frozenset[Any]) -> bool:
    try:
        return key in skip
    except TypeError:  # an unhashable key is no skipped key
        return False


def on_device(t: torch.Tensor, target: torch.device) -> bool:
    """Whether ``t`` is on ``target`` (the CPU and meta by type; accelerators by index)."""
    kind = target.type
    if kind == CPU:
        return t.is_cpu
    if kind == META:
        return t.is_meta
    return t.device == target


class Finish:
    """What one rebuild knows while it runs: how to finish a mover's copy, and what it made.

    Attributes:
        call_to: Calls an object's ``.to`` with the move's device and options;
            ``None`` for a rebuild that moves nothing (identity rebuilds), where
            a mover comes back as it is when none of its tensors changed.
        check: Raises :class:`RebuildRefused` when a tensor reachable from what
            ``.to`` returned is not on the target, except the tensors in the set
            it is given (the input's own, which a ``.to`` may leave on the host).
        target: The device of the move, or None.
        skip: The keys whose values the move leaves as they are.
        dtype: The move's floating dtype, or None.
        own: The ids of the objects whose own ``.to`` moves their tensors (the
            engine left them as they were): they are moved on a shallow copy.
        made: The object rebuilt for each object met so far (by id), so that an
            object met twice comes back as one object, as it went in.
    """

    __slots__ = ("call_to", "check", "dtype", "made", "own", "skip", "target")

    def __init__(
        self,
        call_to: Callable[[Any], Any] | None = None,
        check: Callable[[Any, frozenset[int]], None] | None = None,
        target: torch.device | None = None,
        skip: frozenset[Any] = frozenset(),
        dtype: torch.dtype | None = None,
        own: frozenset[int] = frozenset(),
    ) -> None:
        self.call_to = call_to
        self.check = check
        self.target = target
        self.skip = skip
        self.dtype = dtype
        self.own = own
        self.made: dict[int, Any] = {}


_LOCAL = threading.local()


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


def _current() -> Finish:
    finish: Finish | None = getattr(_LOCAL, "finish", None)
    return finish if finish is not None else Finish()


def contents(obj: Any) -> list[Any]:
    """What an object holds: its items if it is a builtin container's subclass, then its state."""
    values = read_state(obj).values
    if isinstance(obj, dict):
        return [*dict.values(obj), *values]
    if isinstance(obj, list | tuple | set | frozenset | collections.deque):
        return [*obj, *values]
    return values


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
            tensors = find(contents(obj))
            nested = _LOCAL.nested - len(active) + 1
            repeats = _LOCAL.repeats
        finally:
            active.discard(key)
            _LOCAL.nested = max(outer, _LOCAL.nested)
            _LOCAL.repeats = outer_repeats or _LOCAL.repeats
        return tensors, Opened(obj, tensors, nested, repeats), range(len(tensors))

    def unflatten(meta: Opened, moved: Any) -> Any:
        obj, tensors = meta.obj, meta.tensors
        finish = _current()
        call_to = finish.call_to
        if call_to is None or finish.target is None:
            if all(map(operator.is_, moved, tensors)):
                return obj
        elif _there(tensors, finish.target, finish.dtype):
            return obj  # nothing to move: no copy, no call
        result = finish.made.get(id(obj))
        if result is not None:
            return result
        if call_to is not None and id(obj) in finish.own:
            result = _own_to_on_copy(obj, tensors, call_to, find)
            if finish.check is not None:
                finish.check(result, frozenset(map(id, tensors)))
        else:
            result = _copy_sharing(obj, tensors, moved, find)
            if call_to is not None:
                result = call_to(result)
                if finish.check is not None:
                    finish.check(result, frozenset())
        finish.made[id(obj)] = result
        return result

    return Recipe(flatten, unflatten, TensorInsideEntry)


def _own_to_on_copy(
    obj: Any,
    tensors: list[torch.Tensor],
    call_to: Callable[[Any], Any],
    find: Callable[[list[Any]], list[torch.Tensor]],
) -> Any:
    """What ``obj``'s own ``.to`` gives on a shallow copy; the input must come out as it was.

    A class with a ``__copy__`` of its own (PyG's ``Data``, ``TensorDict``) says what a
    copy shares, and its ``.to`` is trusted to leave the input alone on it; for any
    other class the input's tensors are read again after the call.

    Raises:
        RebuildRefused: The copy cannot be made, or the call changed which tensors
            the input holds (its ``.to`` wrote through an attribute the shallow copy
            shares with it).
    """
    result = call_to(copy_object(obj))
    if defines_copy(type(obj)):
        return result
    after = find(contents(obj))
    if len(after) != len(tensors) or not all(map(operator.is_, after, tensors)):
        raise RebuildRefused(
            f"the {type(obj).__name__} object's .to, called on a shallow copy (copy.copy), "
            "changed the input through an attribute the copy shares with it; give the "
            "class a __copy__ that copies what its .to replaces (as PyTorch Geometric's "
            "storages copy their mapping), or move it yourself and pass its key in skip_keys"
        )
    return result
