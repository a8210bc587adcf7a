"""Which classes the walker may remember: those that outlive any batch anyway.

A cache keyed by class (what a leaf type is, how a class copies, what its
``.to`` takes) and an optree registration hold the class strongly. A class
defined in C, or one reachable by its module and qualified name, lives as long
as its module, so remembering it keeps nothing alive that was not alive
already. A class made while the program runs (``namedtuple("batch",
batch.keys())`` in a collate function, a class defined inside a function) may be
one of many made batch after batch; remembering each would keep every one of
them (and what their class attributes hold) alive for good. Those are decided
again on each call, and the walker's optree registration of one lasts only as
long as the call that needed it (``place/_registrations.py``).

Every class-keyed cache of ``place/`` and ``feed/`` asks :func:`lasting` before
it stores a class, and registers itself with :func:`forget_with`;
``tests/place/test_retention.py`` holds them to it.

A module may also rebind a name to a new class batch after batch (``global Batch;
Batch = namedtuple(...)`` in a collate module): the first class looked lasting while
its module held it. When a second class turns up at the same home, the name is one
that a module rebinds: the first is forgotten (taken out of every registered cache,
its optree registration dropped) and no class of that home is remembered again.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["forget_with", "lasting"]

_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time (in Python, or from a spec)
# Classes found lasting, until their home is found rebound (see the module).
_LASTING: set[type] = set()
# The home (module, dotted name) each lasting class made at run time was found at.
_HOMES: dict[tuple[str, str], type] = {}
# Homes a module rebinds to new classes: none of their classes is remembered.
_REBOUND: set[tuple[str, str]] = set()
# What forgets a class: registered caches (class-keyed: the key; others: emptied) and calls.
_KEYED: list[dict[Any, Any] | set[Any]] = []
_WHOLE: list[dict[Any, Any]] = []
_CALLS: list[Callable[[type], None]] = []
_LOCK = threading.Lock()


def forget_with(
    *keyed: dict[Any, Any] | set[Any],
    whole: tuple[dict[Any, Any], ...] = (),
    call: Callable[[type], None] | None = None,
) -> None:
    """Register what must forget a class that turns out not to last.

    ``keyed``: caches keyed by class (its entry goes); ``whole``: caches whose
    entries may hold a class anywhere inside (plans, structures: emptied); ``call``:
    called with the class (an optree registration to drop).
    """
    _KEYED.extend(keyed)
    _WHOLE.extend(whole)
    if call is not None:
        _CALLS.append(call)


def lasting(cls: type) -> bool:
    """Whether ``cls`` lives as long as the process (or its module), so caching it keeps nothing.

    True for static types defined in C (``int``, ``torch.Tensor``'s C base,
    structseqs) and for classes that their module holds under their qualified
    name (``mod.Outer.Inner``). False for classes made at run time that no module
    holds: a ``namedtuple``, ``make_dataclass`` or ``type(...)`` result kept only
    by the batches, a class defined inside a function; and for classes of
    ``__main__`` (a script or notebook), whose top level may make one per batch
    under the same name. A class that a module of one of its bases holds under
    its name lasts too (PyG's ``DataBatch``). Reads module and class dictionaries
    only (no ``__getattr__``, so no lazy import is triggered).
    """
    if cls in _LASTING:
        return True
    if not cls.__flags__ & _HEAPTYPE:
        _LASTING.add(cls)
        return True
    home = next((home for home in _homes(cls) if _held_by(home, cls)), None)
    if home is None or home in _REBOUND:
        return False
    with _LOCK:
        before = _HOMES.setdefault(home, cls)
        if before is cls:
            _LASTING.add(cls)
            return True
        # A second class at one home: the module rebinds the name (see the module).
        _REBOUND.add(home)
        del _HOMES[home]
        _LASTING.discard(before)
    _forget(before)
    return False


def _forget(cls: type) -> None:
    """Take ``cls`` out of every registered cache (it was remembered as lasting)."""
    for cache in _KEYED:
        if isinstance(cache, dict):
            cache.pop(cls, None)
        else:
            cache.discard(cls)
    for whole in _WHOLE:
        whole.clear()
    for call in _CALLS:
        call(cls)


def _homes(cls: type) -> list[tuple[str, str]]:
    """Where a module may hold ``cls``: its own module under its qualified name, then the
    modules of its bases under its name (PyTorch Geometric keeps the ``DataBatch`` class
    it makes in ``torch_geometric.data.batch``, while the class says it is from ``abc``)."""
    found = []
    module = cls.__dict__.get("__module__")
    qualname = getattr(cls, "__qualname__", None)
    if type(module) is str and type(qualname) is str and "<locals>" not in qualname:
        found.append((module, qualname))
    name = cls.__name__
    for base in cls.__mro__[1:-1]:
        home = base.__dict__.get("__module__")
        if type(home) is str and (home, name) not in found:
            found.append((home, name))
    return found


def _held_by(home: tuple[str, str], cls: type) -> bool:
    """Whether the module ``home[0]`` holds ``cls`` under the dotted name ``home[1]``."""
    module, qualname = home
    if module == "__main__":
        # A script or notebook may make a class per batch at its top level, rebinding one
        # name: the class the name holds now is not one that lasts.
        return False
    found: object = sys.modules.get(module)
    for part in qualname.split("."):
        try:
            found = vars(found).get(part)
        except TypeError:  # an object without a __dict__ on the way
            return False
    return found is cls
