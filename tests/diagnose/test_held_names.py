"""``_held_names.swap_held_names``: every holder of a maker that the program's own objects
hold is swapped while the audit watches and put back after, however old those objects are.

Oracle: identity, read straight off each holder (``vars(cls)``, ``obj.__dict__``,
``__defaults__``, ``__kwdefaults__``); the objects' age is set with ``gc.collect()``
(which moves every survivor to the oldest generation, the state of any object of a
program that has run a while), and ``__dict__`` is read first or not (an instance's
attributes then live in a dict of their own, else in the object, Python 3.11+).
"""

from __future__ import annotations

import gc
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.diagnose import _held_names

_SOURCE = """
def maker(*a):
    return a
class Held:
    make = maker
    def __init__(self):
        self.fn = maker
def by_default(a, make=maker):
    return make(a)
def by_keyword(a, *, make=maker):
    return make(a)
held = Held()
"""


def _program(tmp: Path) -> dict[str, object]:
    """The program's module, compiled from a file of its own (so its code is the user's)."""
    path = tmp / "program_held.py"
    path.write_text(_SOURCE)
    scope: dict[str, object] = {"__name__": "program_held"}
    exec(compile(_SOURCE, str(path), "exec"), scope)
    return scope


def _holders(scope: dict[str, object]) -> dict[str, object]:
    held, cls = scope["held"], scope["Held"]
    by_default, by_keyword = scope["by_default"], scope["by_keyword"]
    assert isinstance(cls, type)
    assert isinstance(by_default, types.FunctionType)
    assert isinstance(by_keyword, types.FunctionType)
    assert by_default.__defaults__ is not None and by_keyword.__kwdefaults__ is not None
    in_class = vars(cls)["make"]
    return {
        "class": in_class.__func__ if isinstance(in_class, staticmethod) else in_class,
        "instance": held.__dict__["fn"],
        "default": by_default.__defaults__[0],
        "keyword default": by_keyword.__kwdefaults__["make"],
    }


@settings(max_examples=5, deadline=None)  # 12 cases in all; ~1.5 s of CPU each
@given(aged=st.booleans(), own_dict=st.booleans(), scans=st.integers(1, 3))
def test_every_holder_is_swapped_and_put_back_however_old(
    tmp_path_factory: pytest.TempPathFactory, aged: bool, own_dict: bool, scans: int
) -> None:
    scope = _program(tmp_path_factory.mktemp("held"))
    maker = scope["maker"]
    if own_dict:
        vars(scope["held"])  # the instance's attributes now live in a dict of their own
    if aged:
        gc.collect()
    for _ in range(scans):  # each audit block scans anew
        _held_names._NOTHING_HELD.clear()

        def stand_in(*a: object) -> object:
            return a

        restores = _held_names.swap_held_names({maker: stand_in})
        assert all(value is stand_in for value in _holders(scope).values()), _holders(scope)
        for restore in restores:
            restore()
        assert all(value is maker for value in _holders(scope).values()), _holders(scope)


def test_a_holder_rebound_during_the_block_keeps_the_program_s_value(tmp_path: Path) -> None:
    scope = _program(tmp_path)
    maker, held = scope["maker"], scope["held"]
    gc.collect()
    restores = _held_names.swap_held_names({maker: lambda *a: a})
    held.fn = len  # type: ignore[attr-defined]
    for restore in restores:
        restore()
    assert held.fn is len  # type: ignore[attr-defined]
    assert vars(scope["Held"])["make"] is maker


def test_objects_of_other_libraries_are_left_alone(tmp_path: Path) -> None:
    scope = _program(tmp_path)
    maker = scope["maker"]
    theirs = types.SimpleNamespace(fn=maker)  # a library's object: no code of the program's
    gc.collect()
    restores = _held_names.swap_held_names({maker: lambda *a: a})
    try:
        assert theirs.fn is maker
    finally:
        for restore in restores:
            restore()
