"""The reachability oracle: what ``to_device`` promises, checked without the code under test.

It shares no code with ``torchport.place``: it walks every object itself, through

* container items: mappings by their items (``dict``, ``OrderedDict``, ``UserDict``,
  ``MappingProxyType``, any ``collections.abc.Mapping``), sequences and sets by
  iteration (``list``, ``tuple`` and namedtuples, ``deque``, ``set``, ``frozenset``,
  any ``collections.abc.Sequence`` or ``collections.abc.Set``: ``WeakSet`` too);
* dataclass, attrs and pydantic fields, read through their own APIs;
* the Python objects a numpy array of an object dtype holds, and a dict's values
  and items views;
* every object's own ``__dict__`` and ``__slots__`` (so the attributes of container
  subclasses, caches such as ``functools.cached_property`` values, pydantic's
  extra and private attributes), read past ``__getattr__``;

and stops at values: numbers, strings, ``None``, dtypes, devices, sizes, ``Enum``
members, classes, functions, modules and weak references (the contract's list).
Mapping keys are not followed (the contract: a key is looked up by its hash).
The one documented exception is ``PackedSequence.batch_sizes``, which stays on
the CPU for RNNs. ``skip_keys`` skips values under those keys of any mapping,
except inside an object with its own ``.to``, which moves all it holds.

:func:`check_move` states the invariant: after ``to_device(x, target)`` returns,
every tensor reachable from the result is on ``target`` (or sits under a skipped
key), the input is unchanged, every value is unchanged and tensors shared in the
input are shared in the result (and distinct ones stay distinct).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import enum
import functools
import types
import weakref
from collections.abc import Callable, Hashable, ItemsView, Iterator, Mapping, Sequence, ValuesView
from collections.abc import Set as AbstractSet
from typing import Any

import numpy
import torch

try:
    import attrs
except ImportError:  # the test extra installs it; without it attrs classes are not generated
    attrs = None  # type: ignore[assignment]

try:
    import pydantic
except ImportError:
    pydantic = None  # type: ignore[assignment]

VALUES: tuple[type, ...] = (
    int,
    float,
    complex,
    str,
    bytes,
    bool,
    type(None),
    torch.dtype,
    torch.device,
    torch.Size,
    torch.layout,
    torch.memory_format,
    enum.Enum,
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    functools.partial,
    weakref.ref,
)

Path = tuple[str, ...]


def _slots(cls: type) -> list[str]:
    names = []
    for klass in cls.__mro__:
        declared = klass.__dict__.get("__slots__", ())
        for name in [declared] if isinstance(declared, str) else declared:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{klass.__name__.lstrip('_')}{name}"
            names.append(name)
    return names


def children(node: Any) -> Iterator[tuple[str, Any]]:
    """Every (step, child) the contract counts as reachable from ``node``."""
    if isinstance(node, torch.nn.utils.rnn.PackedSequence):
        for name in ("data", "sorted_indices", "unsorted_indices"):
            yield f".{name}", getattr(node, name)
        return
    if isinstance(node, numpy.ndarray):
        if node.dtype.hasobject:  # Python objects: what it holds, in nested lists
            held = node.tolist()
            yield from enumerate_steps(held if isinstance(held, list) else [held], "<{}>")
        return
    if isinstance(node, ValuesView | ItemsView):
        yield from enumerate_steps(list(node), "<{}>")
        return
    if isinstance(node, Mapping):
        for key, value in list(node.items()):
            yield f"[{key!r}]", value
    elif isinstance(node, AbstractSet):
        # Unordered: named by the item itself, so both sides name a tensor alike.
        for i, item in enumerate(sorted(node, key=_order_key)):
            yield f"{{{i}}}", item
    elif isinstance(node, list | tuple | collections.deque | Sequence) and not isinstance(
        node, str | bytes
    ):
        for i, item in enumerate(list(node)):
            yield f"[{i}]", item
    if dataclasses.is_dataclass(node):
        for field in dataclasses.fields(node):
            if hasattr(node, field.name):
                yield f".{field.name}", getattr(node, field.name)
    if attrs is not None and attrs.has(type(node)):
        for field in attrs.fields(type(node)):
            yield f".{field.name}", getattr(node, field.name)
    if pydantic is not None and isinstance(node, pydantic.BaseModel):
        for name in type(node).model_fields:
            yield f".{name}", getattr(node, name)
        for name, value in (node.__pydantic_extra__ or {}).items():
            yield f".{name}", value
        for name, value in (node.__pydantic_private__ or {}).items():
            yield f".{name}", value
    try:
        own = object.__getattribute__(node, "__dict__")
    except (AttributeError, TypeError):
        own = {}
    for name, value in list(own.items()):
        yield f".{name}", value
    for name in _slots(type(node)):
        try:
            yield f".{name}", object.__getattribute__(node, name)
        except AttributeError:
            continue


def enumerate_steps(items: list[Any], step: str) -> Iterator[tuple[str, Any]]:
    for i, item in enumerate(items):
        yield step.format(i), item


def _order_key(item: Any) -> tuple[str, str]:
    if isinstance(item, torch.Tensor):
        # Shape, and the dtype only where a cast keeps it (a dtype= cast changes every
        # floating dtype alike): the input and the result must sort alike.
        kind = "floating" if item.is_floating_point() else str(item.dtype)
        return ("tensor", f"{tuple(item.shape)}{kind}")
    return (type(item).__name__, repr(item))


def _digest(t: torch.Tensor) -> str:
    if t.is_meta:
        return ""
    return repr(t.detach().to("cpu", torch.float64).flatten().tolist())


def is_value(node: Any) -> bool:
    return isinstance(node, VALUES)


def has_to(node: Any) -> bool:
    """Whether ``node`` is moved by its own ``.to`` (which skip_keys do not reach into).

    A ``UserDict`` or ``UserList`` is walked through its state even with a ``.to``
    (HuggingFace's ``BatchEncoding``), so skip_keys apply inside it.
    """
    if isinstance(node, torch.Tensor | collections.UserDict | collections.UserList):
        return False
    return callable(getattr(type(node), "to", None))


def walk(root: Any, skip: frozenset[Hashable] = frozenset()) -> Iterator[tuple[Path, Any, bool]]:
    """Depth first, each object once (cycles end): (path, node, under a skipped key)."""
    seen: set[int] = set()
    stack: list[tuple[Path, Any, bool, frozenset[Hashable]]] = [((), root, False, skip)]
    while stack:
        path, node, skipped, skip = stack.pop()
        yield path, node, skipped
        if isinstance(node, torch.Tensor) or is_value(node) or id(node) in seen:
            continue
        seen.add(id(node))
        steps = list(children(node))
        if has_to(node):
            skip = frozenset()  # its own .to moves everything it holds
        for step, child in reversed(steps):
            under = skipped or (
                isinstance(node, Mapping) and step.startswith("[") and _key_of(step, node, skip)
            )
            stack.append(((*path, step), child, under, skip))


def _key_of(step: str, node: Mapping[Any, Any], skip: frozenset[Hashable]) -> bool:
    return any(step == f"[{key!r}]" for key in skip)


def tensors(root: Any, skip: frozenset[Hashable] = frozenset()) -> list[tuple[Path, torch.Tensor]]:
    """Every reachable tensor with its first path, excluding those under skipped keys."""
    return [
        (path, node)
        for path, node, skipped in walk(root, skip)
        if isinstance(node, torch.Tensor) and not skipped
    ]


def snapshot(root: Any) -> list[tuple[Path, type, int, Any]]:
    """What "unchanged" compares: each reachable node's path, type, identity and content."""
    taken = []
    for path, node, _ in walk(root):
        if isinstance(node, torch.Tensor):
            content: Any = (node.device, node.dtype, tuple(node.shape), _digest(node))
        elif is_value(node):
            content = node if isinstance(node, Hashable) else repr(node)
        else:
            content = None
        taken.append((path, type(node), id(node), content))
    return taken


def on(t: torch.Tensor, target: torch.device) -> bool:
    if target.type in ("cpu", "meta"):
        return t.device.type == target.type
    return t.device == target


def describe(root: Any, depth: int = 8) -> str:
    """A short, cycle-safe picture of a graph for failure messages (ids mark sharing)."""
    seen: set[int] = set()

    def show(node: Any, level: int) -> str:
        if isinstance(node, torch.Tensor):
            return f"T{tuple(node.shape)}:{node.device.type}#{id(node) % 997}"
        if is_value(node) or isinstance(node, weakref.ref):
            return repr(node)[:20]
        name = f"{type(node).__name__}#{id(node) % 997}"
        if id(node) in seen or level > depth:
            return name
        seen.add(id(node))
        inner = ", ".join(f"{step}={show(child, level + 1)}" for step, child in children(node))
        return f"{name}({inner})"

    return show(root, 0)


def _same_value(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) or (a != a and b != b)  # NaN equals itself here
    except Exception:
        return repr(a) == repr(b)


def left_by_own_to(root: Any, target: torch.device) -> set[Path]:
    """The paths of tensors that objects with their own ``.to`` leave off ``target``.

    Each outermost such object's ``.to`` is called on a deep copy of it (the input is
    not touched; a shallow copy where the deep copy fails); a tensor the copy still
    holds off ``target`` is one its ``.to`` leaves where it is, and may stay so in a
    move's result at the same path.
    """
    left: set[Path] = set()
    outer: list[Path] = []
    for path, node, _ in walk(root):
        if not has_to(node) or any(path[: len(p)] == p for p in outer):
            continue
        outer.append(path)
        try:
            copied = copy.deepcopy(node)
        except Exception:
            # A deep copy some class cannot make (a constructor the copy protocol calls
            # with the wrong arguments): the shallow copy to_device promises to call
            # .to on stands in (called after the input was compared).
            try:
                copied = copy.copy(node)
            except Exception:
                continue
        try:
            moved = copied.to(target)
        except Exception:
            continue
        left.update((*path, *inner) for inner, t in tensors(moved) if not on(t, target))
    return left


def check_move(
    before: Any,
    taken: list[tuple[Path, type, int, Any]],
    after: Any,
    target: torch.device,
    *,
    skip: frozenset[Hashable] = frozenset(),
    cast: Callable[[torch.Tensor], torch.dtype] | None = None,
    check_device: bool = True,
) -> None:
    """Assert the invariant for ``after = to_device(before, target)``.

    Args:
        before: The input, after the call.
        taken: ``snapshot(before)`` taken before the call.
        after: The result.
        target: The device moved to.
        skip: The skip_keys of the call.
        cast: The dtype each input tensor should have in the result (default: its own).
        check_device: Whether the result's tensors must be on ``target`` (False
            for a rebuild that moved nothing).
    """
    # 1. The input is unchanged: the same objects at the same paths, same contents.
    assert snapshot(before) == taken, "to_device changed its input"
    # 2. Every reachable tensor of the result is on the target (or skipped on request),
    # except those an object's own .to leaves where they are (PyG's _slice_dict).
    left = left_by_own_to(before, target) if check_device else set()
    for path, t in tensors(after, skip) if check_device else ():
        assert on(t, target) or path in left, (
            f"result{''.join(path)} is on {t.device}, not {target}"
        )
    # 3. Values and structure: the result mirrors the input, path by path.
    pairs = list(_pairs(before, after, skip))
    # 4. Sharing: one input tensor gives one result tensor, distinct ones stay distinct.
    made: dict[int, int] = {}
    source: dict[int, int] = {}
    for path, x, y in pairs:
        if not isinstance(x, torch.Tensor):
            continue
        want = cast(x) if cast is not None else x.dtype
        assert (y.dtype, tuple(y.shape)) == (want, tuple(x.shape)), f"result{''.join(path)}"
        if any(step.startswith("{") for step in path):
            continue  # in a set: paired by shape and dtype only, so not by identity
        assert made.setdefault(id(x), id(y)) == id(y), f"result{''.join(path)}: sharing lost"
        assert source.setdefault(id(y), id(x)) == id(x), f"result{''.join(path)}: merged"
        if not y.is_meta and not x.is_meta:
            assert torch.equal(y.to("cpu"), x.to(y.dtype).to("cpu")), f"result{''.join(path)}"


def _pairs(x: Any, y: Any, skip: frozenset[Hashable]) -> Iterator[tuple[Path, Any, Any]]:
    """Walk input and result in step; assert they mirror each other; yield tensor pairs."""
    counterpart: dict[int, Any] = {}
    references: list[tuple[str, Any, Any]] = []
    stack: list[tuple[Path, Any, Any, bool, frozenset[Hashable]]] = [((), x, y, False, skip)]
    while stack:
        path, a, b, skipped, skip = stack.pop()
        where = f"result{''.join(path)}"
        if skipped:
            assert b is a, f"{where}: a value under a skipped key was not kept as it was"
            continue
        if isinstance(a, torch.Tensor):
            # A device may give its tensors a class of its own (the simulated accelerator).
            assert isinstance(b, torch.Tensor), f"{where}: a tensor became {type(b).__name__}"
            yield path, a, b
            continue
        assert type(a) is type(b), f"{where}: {type(a).__name__} became {type(b).__name__}"
        if isinstance(a, weakref.ref):
            references.append((where, a, b))
            continue
        if is_value(a):
            assert a is b or _same_value(a, b), f"{where}: {a!r} became {b!r}"
            continue
        if id(a) in counterpart:
            continue
        counterpart[id(a)] = b
        steps_a = list(children(a))
        steps_b = list(children(b))
        names_a = [step for step, _ in steps_a]
        names_b = [step for step, _ in steps_b]
        assert names_a == names_b, f"{where}: children {names_a} became {names_b}"
        if has_to(a):
            skip = frozenset()  # its own .to moves everything it holds
        for (step, ca), (_, cb) in zip(steps_a, steps_b, strict=True):
            under = isinstance(a, Mapping) and step.startswith("[") and _key_of(step, a, skip)
            stack.append(((*path, step), ca, cb, under, skip))
    # A weak reference into the graph points at the counterpart (a storage's _parent
    # at the copied object); one that points outside still points at the same object.
    for where, a, b in references:
        referent = a()
        want = counterpart.get(id(referent), referent)
        assert b() is want, f"{where}: a weak reference points at the wrong object"
