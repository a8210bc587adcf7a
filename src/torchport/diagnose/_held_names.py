"""The program's other names for a torch function, bound before the audit started.

``torch.from_numpy``/``torch.frombuffer`` reach no mode of torch's, so while an audit
watches they are swapped for wrappers that report their tensor (:mod:`._methods`). A
name bound while it watches (``from torch import from_numpy`` run in a function, a method
or an ``__init__``) gets the wrapper by itself; one bound before it started still holds
torch's own function. Those the program's code holds are found through the garbage
collector's referrers of that function, once when the audit starts watching:

* an attribute of an instance of a class of the program's (``self.fn = torch.from_numpy``),
  or of such a class itself (``make = torch.from_numpy`` in a class body): set with
  ``setattr`` (never written into a class's dictionary behind its back);
* a default argument of a function of the program's (``def f(a, make=torch.from_numpy)``,
  keyword-only ones too).

Each is restored exactly when the audit stops, unless the program bound it anew meanwhile.
A scan costs one pass over the heap (~0.1 s in a large process); it is skipped when the
last scan found no holder and no function has gained or lost a reference since (its
reference count), so a program that opens many audit blocks pays for one scan. (A holder
made while another reference went away in the same stretch is missed by that test.)
Names in closures, containers (a list or a dict of makers) and other libraries' objects
are not reached: tensors made through them are the device's in the prediction (a wait
predicted for each host read).
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Callable
from typing import Any

from torchport._origin import Origin, code_origin, origin

__all__ = ["bind_in_program_modules", "swap_held_names"]


def bind_in_program_modules(original: Any, wrapper: Any) -> list[tuple[Any, str, Any, bool, Any]]:
    """Bind ``wrapper`` where the program's modules name ``original`` (``from torch import
    from_numpy`` run before the audit); returns ``(module, name, original, True, wrapper)``
    for each, which the audit's uninstall restores as it restores ``torch``'s own names.
    Names in no module of ``sys.modules`` are left to :func:`swap_held_names`."""
    bound: list[tuple[Any, str, Any, bool, Any]] = []
    for module in list(sys.modules.values()):
        found = getattr(module, "__file__", None) if isinstance(module, types.ModuleType) else None
        if not isinstance(found, str) or origin(found) is not Origin.USER:
            continue
        namespace = vars(module)
        for name, value in list(namespace.items()):
            if value is original:
                bound.append((module, name, original, True, wrapper))
                namespace[name] = wrapper
    return bound


def _programs(value: Any) -> bool:
    """Whether a function (or the first function of a class) is the program's code."""
    code = getattr(value, "__code__", None)
    if isinstance(code, types.CodeType):
        return code_origin(code) is Origin.USER
    if isinstance(value, type):
        for each in vars(value).values():
            code = getattr(each, "__code__", None)
            if isinstance(code, types.CodeType):
                return code_origin(code) is Origin.USER
    return False


def swap_held_names(swaps: dict[Any, Any]) -> list[Callable[[], None]]:
    """Bind each wrapper where the program's objects hold its original (``swaps``:
    original -> wrapper; see the module docstring); returns what restores each. Two
    passes of the garbage collector's referrers, whatever the number of functions."""
    originals = list(swaps)
    counts = tuple((id(o), sys.getrefcount(o)) for o in originals)
    if _NOTHING_HELD and _NOTHING_HELD[0] == counts:
        return []  # the last scan found no holder, and no reference came or went since
    restores = _scan(swaps, originals)
    _NOTHING_HELD[:] = [] if restores else [counts]
    return restores


# The originals' (id, reference count) when a scan last found no holder of them.
_NOTHING_HELD: list[tuple[tuple[int, int], ...]] = []


def _scan(swaps: dict[Any, Any], originals: list[Any]) -> list[Callable[[], None]]:
    restores: list[Callable[[], None]] = []
    modules = {id(vars(m)) for m in list(sys.modules.values()) if isinstance(m, types.ModuleType)}
    holders = gc.get_referrers(*originals)
    dicts = {id(h): h for h in holders if type(h) is dict and id(h) not in modules}
    tuples = {id(h): h for h in holders if type(h) is tuple}
    for each in holders:
        if type(each) not in (dict, tuple) and not isinstance(each, (type, types.ModuleType)):
            # an instance whose attributes live in the object itself (Python 3.11+)
            attributes = _own_dict(each) if _programs(type(each)) else None
            if attributes is not None:
                _swap_items(attributes, swaps, restores)
    if not dicts and not tuples:
        return restores
    # Each dict's owner is told by what it is to the referrer (a class's namespace, an
    # instance's __dict__, a function's keyword defaults), never by the order the collector
    # lists referrers in: that order follows the generations (the youngest first, this
    # scan's own lists among them), so a first-found rule missed an old program's classes.
    for owner in gc.get_referrers(*dicts.values(), *tuples.values()):
        if isinstance(owner, types.FunctionType):
            if id(owner.__defaults__) in tuples:
                _swap_defaults(owner, swaps, restores)
            held = dicts.pop(id(owner.__kwdefaults__), None)
            if held is not None and _programs(owner):
                _swap_items(held, swaps, restores)
        elif isinstance(owner, type):
            for found in gc.get_referents(owner):
                held = dicts.get(id(found)) if type(found) is dict else None
                if held is found and _programs(owner):
                    del dicts[id(found)]
                    _swap_attributes(owner, held, swaps, restores)
        elif not isinstance(owner, (types.ModuleType, types.FrameType)):
            attributes = _own_dict(owner) if _programs(type(owner)) else None
            held = dicts.get(id(attributes))
            if held is not None and held is attributes:
                del dicts[id(held)]
                _swap_items(held, swaps, restores)
    return restores


def _own_dict(value: Any) -> dict[Any, Any] | None:
    """An object's own attribute dictionary, or None (no ``__dict__``, or one that is not a
    plain dict, or a ``__getattr__`` that raises: odd objects are passed over)."""
    try:
        attributes = object.__getattribute__(value, "__dict__")
    except Exception:
        return None
    return attributes if type(attributes) is dict else None


def _swap_defaults(
    function: types.FunctionType, swaps: dict[Any, Any], restores: list[Callable[[], None]]
) -> None:
    if not _programs(function) or function.__defaults__ is None:
        return
    before = function.__defaults__
    after = tuple(swaps.get(value, value) if _known(value, swaps) else value for value in before)
    function.__defaults__ = after

    def restore() -> None:
        if function.__defaults__ is after:
            function.__defaults__ = before

    restores.append(restore)


def _known(value: Any, swaps: dict[Any, Any]) -> bool:
    """Whether ``value`` is one of the originals (by identity: a hash may be anything)."""
    return any(value is original for original in swaps)


def _swap_items(
    held: dict[Any, Any], swaps: dict[Any, Any], restores: list[Callable[[], None]]
) -> None:
    for name, value in list(held.items()):
        if _known(value, swaps):
            original, wrapper = value, swaps[value]
            held[name] = wrapper

            def restore(name: Any = name, original: Any = original, wrapper: Any = wrapper) -> None:
                if held.get(name) is wrapper:
                    held[name] = original

            restores.append(restore)


def _swap_attributes(
    owner: type, held: dict[Any, Any], swaps: dict[Any, Any], restores: list[Callable[[], None]]
) -> None:
    for name, value in list(held.items()):
        if _known(value, swaps) and isinstance(name, str):
            original = value
            static = staticmethod(swaps[value])  # a function in a class body would bind `self`
            setattr(owner, name, static)

            def restore(name: str = name, static: Any = static, original: Any = original) -> None:
                if vars(owner).get(name) is static:
                    setattr(owner, name, original)

            restores.append(restore)
