"""Every record of the checker behaves as the ``@dataclass`` of the same class body.

The oracle is :mod:`dataclasses` itself: for each ``@record(...)`` class in the
package, the test takes the class's source, puts ``@dataclass(slots=..., frozen=...,
order=..., eq=...)`` in place of the decorator (and ``dataclasses.field`` for
``field``), runs it in the module's namespace, and compares the two on generated
arguments: construction (positional, keyword, defaults, fresh default factories, the
errors), ``repr``, ``==``, the orderings, ``hash``, frozen assignment and deletion,
``__match_args__``, ``__slots__``, copying and pickling, and what :mod:`dataclasses`
and :mod:`inspect` say of each (``fields``, the parameters, ``replace``, ``asdict``,
``astuple``, ``signature``), :func:`torchport.check.records_module.replace` among them.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import importlib
import inspect
import operator
import pickle
import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import torchport.check
import torchport.check._records as records_module
from torchport.check._records import field, record

Flags = tuple[tuple[str, bool], ...]  # the decorator's arguments, as dataclass takes them


def _flags(deco: ast.Call) -> Flags:
    given = {k.arg: ast.literal_eval(k.value) for k in deco.keywords}
    return tuple({"frozen": False, "order": False, "eq": True, "slots": True, **given}.items())


def _records() -> list[tuple[ModuleType, ast.ClassDef, Flags]]:
    """(module, class source, flags) for each ``@record(...)`` class of the package."""
    found = []
    for info in pkgutil.walk_packages(torchport.check.__path__, "torchport.check."):
        module = importlib.import_module(info.name)
        tree = ast.parse(inspect.getsource(module))
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and getattr(deco.func, "id", "") == "record":
                    found.append((module, node, _flags(deco)))
    return found


RECORDS = _records()


@functools.cache
def _reference(module: ModuleType, node: ast.ClassDef, flags: Flags) -> type:
    """The same class body under ``@dataclasses.dataclass(**flags)``."""
    body = copy.deepcopy(node)
    arguments = ", ".join(f"{k}={v}" for k, v in flags)
    body.decorator_list = [ast.parse(f"__dc__.dataclass({arguments})", mode="eval").body]
    for sub in ast.walk(body):
        if isinstance(sub, ast.Call) and getattr(sub.func, "id", "") == "field":
            sub.func = ast.parse("__dc__.field", mode="eval").body
    namespace = {**vars(module), "__dc__": dataclasses}
    code = compile(ast.fix_missing_locations(ast.Module([body], [])), module.__file__ or "", "exec")
    exec(code, namespace)
    made: type = namespace[node.name]
    return made


def _rebuilt(module: ModuleType, node: ast.ClassDef) -> type:
    """The class built again from its source with its own ``@record(...)``: a fresh class."""
    namespace = dict(vars(module))
    namespace.update(record=record, field=field)
    code = compile(ast.Module([node], []), module.__file__ or "", "exec")
    exec(code, namespace)
    made: type = namespace[node.name]
    return made


def _outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as exc:
        return "raises", type(exc), str(exc).replace("__dataclass_self__", "__record_self__")


VALUES = st.one_of(st.integers(-3, 3), st.text(max_size=3), st.none(), st.tuples(st.integers()))


def _field_facts(cls: type) -> list[tuple[object, ...]]:
    keys = "name type default default_factory init repr hash compare metadata kw_only _field_type"
    return [tuple(getattr(f, k) for k in keys.split()) for f in dataclasses.fields(cls)]


def _compare(ours: type, theirs: type, flags: Flags, data: st.DataObject) -> None:
    names = [f.name for f in dataclasses.fields(theirs)]
    slots = dict(flags)["slots"]
    assert ("__slots__" in vars(ours)) is ("__slots__" in vars(theirs)) is slots
    if slots:
        assert ours.__slots__ == tuple(names)
    else:  # defaults stay class attributes
        assert [vars(ours).get(n) for n in names] == [vars(theirs).get(n) for n in names]
    assert ours.__match_args__ == theirs.__match_args__  # type: ignore[attr-defined]
    assert ours.__qualname__ == theirs.__qualname__
    assert ours.__doc__ == theirs.__doc__
    assert dataclasses.is_dataclass(ours)
    assert _field_facts(ours) == _field_facts(theirs)
    assert repr(ours.__dataclass_params__) == repr(theirs.__dataclass_params__)  # type: ignore[attr-defined]
    assert inspect.signature(ours) == inspect.signature(theirs)
    assert records_module.fields_of(ours) == tuple(names)
    for method in ("__eq__", "__hash__", "__lt__", "__le__", "__gt__", "__ge__"):
        assert (method in vars(ours)) is (method in vars(theirs)), method
    for _ in range(2):
        count = data.draw(st.integers(0, len(names) + 1))
        args = data.draw(st.lists(VALUES, min_size=count, max_size=count))
        keys = data.draw(st.lists(st.sampled_from([*names, "bogus"]), unique=True, max_size=3))
        kwargs = {k: data.draw(VALUES) for k in keys}
        _compare_made(ours, theirs, names, args, kwargs, dict(flags), data)


def _compare_made(
    ours: type,
    theirs: type,
    names: list[str],
    args: list[Any],
    kwargs: dict[str, Any],
    flags: dict[str, bool],
    data: st.DataObject,
) -> None:
    a, b = _outcome(ours, *args, **kwargs), _outcome(theirs, *args, **kwargs)
    assert a[0] == b[0], (args, kwargs, a, b)
    if a[0] == "raises":
        assert a[1:] == b[1:] and a[1] is TypeError  # the same words
        return
    x, y = a[1], b[1]
    assert [getattr(x, n) for n in names] == [getattr(y, n) for n in names]
    assert repr(x) == repr(y)
    x2, y2 = ours(*args, **kwargs), theirs(*args, **kwargs)
    assert (x == x2) == (y == y2) and (x != x2) == (y != y2)
    for n in names:  # a default factory gives each record its own value
        assert (getattr(x, n) is getattr(x2, n)) == (getattr(y, n) is getattr(y2, n))
    assert (x == object()) is (y == object()) is False
    values = {n: getattr(x, n) for n in names}
    orderings = (operator.lt, operator.le, operator.gt, operator.ge)
    for n in names:  # one field changed: equal only where the field is not compared
        other = {**values, n: data.draw(VALUES)}
        a1, a2, b1, b2 = ours(**values), ours(**other), theirs(**values), theirs(**other)
        assert (a1 == a2) == (b1 == b2)
        for compare in orderings:
            assert _outcome(compare, a1, a2) == _outcome(compare, b1, b2)
        change = {n: other[n]}
        assert repr(dataclasses.replace(x, **change)) == repr(dataclasses.replace(y, **change))
        assert repr(records_module.replace(x, **change)) == repr(dataclasses.replace(y, **change))
    if flags["eq"]:
        assert _outcome(hash, x) == _outcome(hash, y)
    else:  # identity, as object's
        assert hash(x) == object.__hash__(x) and hash(y) == object.__hash__(y)
    assert _outcome(dataclasses.asdict, x) == _outcome(dataclasses.asdict, y)
    assert _outcome(dataclasses.astuple, x) == _outcome(dataclasses.astuple, y)
    # A copy holds equal values; its repr is compared only where no field is a set, whose
    # iteration order a rebuilt set need not keep (pickle re-inserts in the old order).
    unordered = any(isinstance(getattr(x, n), (set, frozenset)) for n in names)
    for twin in (copy.copy(x), copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        assert type(twin) is type(x) and (twin == x) is flags["eq"]
        assert [getattr(twin, n) for n in names] == [getattr(x, n) for n in names]
        assert unordered or repr(twin) == repr(x)
    for n in names:
        value = data.draw(VALUES)
        assert _outcome(setattr, x, n, value) == _outcome(setattr, y, n, value)
        assert _outcome(delattr, x2, n) == _outcome(delattr, y2, n)
    # A name that is no field: both refuse (no __dict__, or frozen). Python 3.11's frozen
    # slotted dataclass says TypeError (its __setattr__ calls super() with the class it
    # replaced), a record FrozenInstanceError, as the unslotted dataclass does.
    if flags["slots"] or flags["frozen"]:
        for target in (x, y):
            assert _outcome(setattr, target, "bogus", 1)[0] == "raises"
            assert _outcome(delattr, target, "bogus")[0] == "raises"
    else:
        assert _outcome(setattr, x, "bogus", 1) == _outcome(setattr, y, "bogus", 1)
        assert vars(x) == vars(y)


def test_the_package_has_records() -> None:
    assert len(RECORDS) >= 30, [n.name for _, n, _ in RECORDS]


@pytest.mark.parametrize("compiled", [False, True], ids=["closure", "compiled"])
@pytest.mark.parametrize(("module", "node", "flags"), RECORDS, ids=[n.name for _, n, _ in RECORDS])
@given(data=st.data())
def test_a_record_behaves_as_its_dataclass(
    module: ModuleType, node: ast.ClassDef, flags: Flags, compiled: bool, data: st.DataObject
) -> None:
    """Both ``__init__``s: the closure a class starts with, the one compiled once it is hot."""
    assert records_module.fields_of(getattr(module, node.name))  # the package's is a record
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(records_module, "COMPILE_AFTER", 0 if compiled else 10**9)
        ours = _rebuilt(module, node)
        mp.setattr(module, node.name, ours)  # pickle finds classes by name
        _compare(ours, _reference(module, node, flags), flags, data)


@record(frozen=True)
class _Point:
    """Frozen, with a default, a default factory and a field left out of comparisons."""

    x: int
    y: object = None
    tags: list[int] = field(default_factory=list)
    seen: int = field(default=0, compare=False)


@record()
class _Bag:
    """Mutable, all defaulted."""

    items: list[int] = field(default_factory=list)
    name: str = ""


@record(frozen=True, order=True)
class _Span:
    """Ordered, with a field left out of the repr and one out of comparisons."""

    start: int
    end: object = 0
    note: object = field(default="", repr=False)
    seen: int = field(default=0, compare=False)


@record(frozen=True, eq=False)
class _Token:
    """Frozen without eq: compared and hashed by identity."""

    kind: object
    parent: object = field(default=None, repr=False)


@record(eq=False, slots=False)
class _Open:
    """Unslotted and mutable, without eq: other attributes may be set."""

    kind: object
    names: dict[str, int] = field(default_factory=dict, repr=False)
    level: object = 0


@record(frozen=True, slots=False)
class _Sealed:
    """Unslotted and frozen."""

    a: object
    b: object = None


@pytest.mark.parametrize("cls", [_Point, _Bag, _Span, _Token, _Open, _Sealed])
@given(data=st.data())
def test_records_of_every_shape_behave_as_dataclasses(cls: type, data: st.DataObject) -> None:
    source = inspect.getsource(cls)
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef)
    deco = node.decorator_list[0]
    assert isinstance(deco, ast.Call)
    module = importlib.import_module(__name__)
    _compare(cls, _reference(module, node, _flags(deco)), _flags(deco), data)


def test_what_a_record_cannot_be_is_refused_at_import() -> None:
    with pytest.raises(ValueError, match="mutable default"):

        @record()
        class _Shared:
            """A shared mutable default."""

            items: list[int] = []  # noqa: RUF012

    with pytest.raises(TypeError, match="non-default argument"):

        @record()
        class _Order:
            """A field without default after one with."""

            a: int = 0
            b: int

    with pytest.raises(TypeError, match="only a plain class"):

        @record()
        class _Undocumented:
            a: int

    with pytest.raises(TypeError, match="only a plain class"):

        @record()
        class _Posted:
            """With a __post_init__."""

            a: int

            def __post_init__(self) -> None:
                pass
