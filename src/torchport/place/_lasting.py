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
it stores a class; ``tests/place/test_retention.py`` holds them to it.
"""

from __future__ import annotations

import itertools
import sys

__all__ = ["lasting"]

_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time (in Python, or from a spec)
# Classes found lasting (a positive answer never changes: the module holds the class).
_LASTING: set[type] = set()


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
    if not any(map(_held_by, _homes(cls), itertools.repeat(cls))):
        return False
    _LASTING.add(cls)
    return True


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
