"""Objects that are not containers: what each is, and the recipe of those walked by their state.

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
  ``TensorDict``, ...): moved by that ``.to`` on a shallow copy, its tensors found
  by walking its state (``place/_mover_recipe.py``). An object with a ``.to`` but no
  state the walker can read is a leaf whose ``.to`` is called as it is
  (``place/_leaf_kinds.py``'s ``LEAF_MOVER``);
* **refused** (``place/_refusals.py``): modules, optimizers, LR schedulers and
  ``GradScaler``s, and iterators without state of their own.

What one rebuild knows while it runs (the move's device, the objects made so far)
is in ``place/_rebuilding.py``.
"""

from __future__ import annotations

import collections
import enum
import functools
import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import torch

from torchport._device_types import CPU, META
from torchport.place._containers import Recipe, share_siblings
from torchport.place._copying import (
    RebuildRefused,
    State,
    copies_plainly,
    copy_object,
    has_state,
    read_state,
    restore_state,
    write_state,
)
from torchport.place._entries import StateEntry
from torchport.place._rebuilding import current

__all__ = [
    "MOVER",
    "VALUE",
    "WALKED",
    "contents",
    "kind_of_object",
    "object_recipe",
    "on_device",
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


def kind_of_object(cls: type) -> int:
    """:data:`VALUE`, :data:`WALKED` or :data:`MOVER` for a type that is not a container."""
    if issubclass(cls, _REFERENCES) or not has_state(cls):
        return VALUE
    to = getattr(cls, "to", None)
    if callable(to):
        return MOVER
    return WALKED


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
    if cls is list or cls is tuple or cls is collections.deque:
        return len(a) == len(b) and all(map(_same, a, b))
    if cls is dict:
        return len(a) == len(b) and all(_same(v, b.get(k, _same)) for k, v in a.items())
    if cls is collections.OrderedDict:  # order too, as the rebuild keeps it
        return list(a) == list(b) and all(_same(v, b[k]) for k, v in a.items())
    if cls is set or cls is frozenset:  # hashable items: each the very object, or changed
        return len(a) == len(b) and {id(x) for x in a} == {id(x) for x in b}
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
        finish = current()
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
            _check_items(new, children, finish.target, finish.skip, find)
        return new

    return Recipe(flatten, unflatten, StateEntry)


def _check_items(
    container: Any,
    moved: Sequence[Any],
    target: torch.device,
    skip: frozenset[Any],
    find: Callable[[list[Any], frozenset[Any]], list[torch.Tensor]],
) -> None:
    """Check that every tensor reachable from a custom container's items is moved too.

    Its items were moved through its attributes; one that computes its items from
    somewhere else, or holds them by weak reference (``WeakSet``,
    ``WeakValueDictionary``), would hand out tensors the walk never saw, directly
    or inside the objects it hands out. A tensor off ``target`` that the moved
    attributes (``moved``) hold is no such tensor: it was left on the host on
    purpose (an own ``.to``'s bookkeeping, PyG's ``_slice_dict``).
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
    kept: set[int] | None = None
    for item in find(items, skip):
        if not on_device(item, target):
            if kept is None:
                kept = {id(t) for t in find(list(moved), skip)}
            if id(item) in kept:
                continue
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


def contents(obj: Any) -> list[Any]:
    """What an object holds: its items if it is a builtin container's subclass, then its state."""
    values = read_state(obj).values
    if isinstance(obj, dict):
        return [*dict.values(obj), *values]
    if isinstance(obj, list | tuple | set | frozenset | collections.deque):
        return [*obj, *values]
    return values
