"""What stands on a module of torch's for one of its functions while an audit watches.

:mod:`._methods` swaps a few module attributes (``torch.save``, ``torch.load``,
``torch.from_numpy``, ``torch.frombuffer``, ``torch.jit.script`` and kin) for wrappers
that tell the audit what ran. Invariant: **the stand-in is the original for everything
but what a call reports.** Two things a plain wrapper function changes, found by
breaking the audit on purpose (``tests/diagnose/test_invariant_stand_ins.py``):

* *Binding.* A Python function is a descriptor; torch's builtins are not. A class body
  run while the audit watches (``class Dataset: make = torch.from_numpy``) made
  ``self.make(array)`` pass ``self`` as the array (``TypeError``). A builtin's stand-in
  is a callable object that binds to nothing, as the builtin; a Python function's is a
  function, which binds as the original does.
* *Pickling.* A function is pickled by reference (its module and qualified name) and the
  reference must reach the very object; a wrapper named as the original reached the
  original, so ``pickle.dumps(functools.partial(torch.load, map_location="cpu"))`` (a
  dataset's loader handed to spawned DataLoader workers) raised ``PicklingError``. The
  stand-in is pickled by the name it stands at (``torch.load``, ``torch.jit.script``),
  which reaches it while the audit watches and torch's own function after.

* *Keys.* A builtin's stand-in is equal to the builtin and hashes as it, so a table keyed
  by ``torch.from_numpy`` before the block finds it.

Not kept: ``type(torch.from_numpy)`` and ``isinstance(fn, types.BuiltinFunctionType)``
answer for the stand-in while the audit watches; ``torch.save``'s and ``torch.load``'s
stand-ins are functions of their own (``is`` and a dict keyed by the original tell them
apart); a pickle names ``torch.save`` where the original pickles as
``torch.serialization.save`` (the same function).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

__all__ = ["stand_in"]


class _Unbound:
    # The stand-in of a builtin: called, it runs the wrapper; read from a class, it stays
    # itself (no __get__, as a builtin); pickled, it is the module attribute it stands at.
    __slots__ = ("__dict__", "__wrapped__", "_call")

    def __init__(self, call: Callable[..., Any], original: Any, module: str, name: str) -> None:
        self._call = call
        self.__wrapped__ = original
        self.__dict__.update(
            __module__=module,
            __name__=name,
            __qualname__=name,
            __doc__=getattr(original, "__doc__", None),
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __reduce__(self) -> str:
        # a string: pickle looks `module.name` up, finds this object, and writes that name
        return str(self.__dict__["__name__"])

    def __repr__(self) -> str:
        return repr(self.__wrapped__)

    # equal to the builtin and hashed as it: a table keyed by torch.from_numpy before the
    # block (a library's dispatch dict) still finds it when looked up with the stand-in
    def __eq__(self, other: object) -> bool:
        return other is self or other is self.__wrapped__

    def __hash__(self) -> int:
        return hash(self.__wrapped__)


def stand_in(original: Any, wrapper: Callable[..., Any], owner: types.ModuleType, name: str) -> Any:
    """What to bind at ``owner.name`` for ``original`` while the audit watches, calling
    ``wrapper`` (see the module docstring). A Python function's wrapper is renamed to the
    place it stands at; anything else (a builtin) gets an :class:`_Unbound`, the same one
    each time for the same builtin and place (``wrapper`` must then do the same)."""
    if isinstance(original, types.FunctionType) and isinstance(wrapper, types.FunctionType):
        wrapper.__module__ = owner.__name__
        wrapper.__qualname__ = name
        return wrapper
    # one stand-in per builtin and place, whoever asks (torch's module attribute and the
    # program's names rebound by ._held_names): pickle finds the very object at torch.name
    key = (id(original), owner.__name__, name)
    made = _UNBOUND.get(key)
    if made is None or made.__wrapped__ is not original:
        made = _UNBOUND[key] = _Unbound(wrapper, original, owner.__name__, name)
    return made


# builtins live as long as the process: their stand-ins too (the first wrapper is kept)
_UNBOUND: dict[tuple[int, str, str], _Unbound] = {}
