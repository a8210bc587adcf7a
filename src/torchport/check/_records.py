"""The checker's records: dataclasses, built without ``exec`` and without :mod:`dataclasses`.

``@dataclass`` writes each method it adds as source text and compiles it, about half
a millisecond per class, and importing :mod:`dataclasses` brings :mod:`inspect` and
:mod:`dis`; the checker's classes made that the largest single part of ``torchport
check``'s start-up. :func:`record` gives a class the methods ``@dataclass(slots=True,
frozen=..., order=..., eq=...)`` gives it, as closures over the field names, so
building a class costs one ``type()`` call. The methods behave as dataclasses' do:
``__init__`` (positional or keyword, defaults and ``default_factory``), ``__repr__``
(``field(repr=False)`` left out), ``__eq__`` (same class only; none with
``eq=False``), the four orderings with ``order=True``, ``__hash__`` (fields compared;
None for a mutable record with ``eq``; identity without ``eq``), frozen
``__setattr__`` and ``__delattr__`` raising :class:`dataclasses.FrozenInstanceError`,
``__match_args__``, ``__slots__`` (unless ``slots=False``) and pickling.

A record is a dataclass to :mod:`dataclasses` too: ``__dataclass_fields__``,
``__dataclass_params__`` and ``__signature__`` are read, on first use, from the
``@dataclass`` of the same class body (its "twin", built then, which imports
:mod:`dataclasses`), so ``fields``, ``replace``, ``asdict``, ``astuple``,
``is_dataclass`` and ``inspect.signature`` answer as for the dataclass.
tests/check/test_records.py holds every record of the package equal to the
``@dataclass`` built from the same class body.

What differs: on a frozen slotted record, assigning a name that is no field raises
:class:`dataclasses.FrozenInstanceError` where Python 3.11's slotted dataclass raises
``TypeError``; ``inspect.signature(cls.__init__)`` is ``(self, *args, **kwargs)``.
``init=False`` fields, ``InitVar``, ``KW_ONLY``, ``__post_init__`` and base classes are
not supported, and a record needs a docstring: a class that does not fit is refused
with a ``TypeError`` at import.
"""

from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any, TypeVar, dataclass_transform

    _T = TypeVar("_T")
else:

    def dataclass_transform(**_: object) -> Callable[[Callable[..., object]], object]:
        """typing's marker for type checkers, which at run time only tags the function."""
        return lambda function: function


__all__ = ["field", "fields_of", "record", "replace"]

_NO_DEFAULT: Any = object()
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}  # record class -> its fields, in order


class _Field:
    __slots__ = ("compare", "default", "default_factory", "repr")

    def __init__(
        self,
        default: Any,
        default_factory: Callable[[], Any] | None,
        compare: bool,
        repr: bool,
    ) -> None:
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr


def field(
    *,
    default: Any = _NO_DEFAULT,
    default_factory: Callable[[], Any] | None = None,
    compare: bool = True,
    repr: bool = True,
) -> Any:
    """As :func:`dataclasses.field` with these four arguments."""
    if default is not _NO_DEFAULT and default_factory is not None:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, compare, repr)


def _is_class_var(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return text.startswith(("ClassVar", "typing.ClassVar"))


@dataclass_transform(field_specifiers=(field,))
def record(
    *, frozen: bool = False, order: bool = False, eq: bool = True, slots: bool = True
) -> Callable[[type[_T]], type[_T]]:
    """``@dataclass(slots=slots, frozen=frozen, order=order, eq=eq)``, without ``exec``."""
    if order and not eq:
        raise ValueError("eq must be true if order is true")

    def build(cls: type[_T]) -> type[_T]:
        made: type[_T] = _build(cls, frozen=frozen, order=order, eq=eq, slots=slots)
        return made

    return build


class _FromTwin:
    """A class attribute read from the record's ``@dataclass`` twin, built on first use."""

    def __init__(self, name: str, twin: Callable[[], type]) -> None:
        self.name = name
        self.twin = twin

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        twin = self.twin()
        if self.name == "__signature__":
            import inspect

            return inspect.signature(twin)
        return getattr(twin, self.name)


def _twin_maker(original: dict[str, Any], cls: Any, flags: dict[str, bool]) -> Callable[[], type]:
    made: list[type] = []

    def twin() -> type:
        if not made:
            import dataclasses

            body = {
                k: v
                for k, v in original.items()
                if k not in ("__dict__", "__weakref__") and not isinstance(v, _FromTwin)
            }
            for name, value in body.items():
                if isinstance(value, _Field):
                    body[name] = dataclasses.field(
                        default=(
                            dataclasses.MISSING if value.default is _NO_DEFAULT else value.default
                        ),
                        default_factory=(
                            dataclasses.MISSING
                            if value.default_factory is None
                            else value.default_factory
                        ),
                        compare=value.compare,
                        repr=value.repr,
                    )
            shell = type(cls.__name__, (), body)
            made.append(dataclasses.dataclass(**flags)(shell))
        return made[0]

    return twin


def _build(cls: Any, *, frozen: bool, order: bool, eq: bool, slots: bool) -> Any:
    original = dict(cls.__dict__)
    body = dict(original)
    own = {"__post_init__", "__slots__", "__eq__", "__hash__"} & set(body)
    if order:
        own |= {"__lt__", "__le__", "__gt__", "__ge__"} & set(body)
    # no docstring: dataclasses would write one from the signature (inspect's work)
    if cls.__bases__ != (object,) or own or not body.get("__doc__"):
        raise TypeError(
            f"record {cls.__qualname__}: only a plain class (see torchport.check._records)"
        )
    names: list[str] = []
    defaults: dict[str, Any] = {}
    factories: dict[str, Callable[[], Any]] = {}
    compared: list[str] = []
    shown: list[str] = []
    for name, annotation in body.get("__annotations__", {}).items():
        if _is_class_var(annotation):
            continue
        if "InitVar" in str(annotation) or "KW_ONLY" in str(annotation):
            raise TypeError(
                f"record {cls.__qualname__}.{name}: InitVar and KW_ONLY are not supported"
            )
        value = body.pop(name, _NO_DEFAULT)
        spec = value if isinstance(value, _Field) else _Field(value, None, True, True)
        if spec.default is not _NO_DEFAULT:
            if type(spec.default).__hash__ is None:  # as dataclasses: no shared mutable default
                raise ValueError(
                    f"mutable default {type(spec.default)} for field {name} is not allowed: "
                    "use default_factory"
                )
            defaults[name] = spec.default
            if not slots:  # as dataclasses: the default stays a class attribute
                body[name] = spec.default
        elif spec.default_factory is not None:
            factories[name] = spec.default_factory
        elif defaults or factories:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        names.append(name)
        if spec.compare:
            compared.append(name)
        if spec.repr:
            shown.append(name)
    fields = tuple(names)
    keys = tuple(compared)
    visible = tuple(shown)
    qualname = cls.__qualname__
    built: list[type] = []  # the class, once made
    calls = [0]
    # what the check of a call's arguments reads: the fields without a default come
    # first (as dataclasses require, see above), and each field's position
    required = sum(1 for n in fields if n not in defaults and n not in factories)
    position = {name: at for at, name in enumerate(fields)}

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        if calls[0] > COMPILE_AFTER and built:  # a hot class: its own compiled __init__
            fast = _compiled_init(qualname, fields, defaults, factories)
            built[0].__init__ = fast  # type: ignore[misc]
            fast(self, *args, **kwargs)
            return
        given = len(args)
        rest = fields[given:]  # the fields the positional arguments leave
        if (  # too many, an unknown or a repeated keyword, a field left without a value
            given > len(fields)
            or (kwargs and any(position.get(k, -1) < given for k in kwargs))
            or (given < required and any(n not in kwargs for n in fields[given:required]))
        ):
            # Python's own words for the call's mistake: the compiled __init__ raises them
            _compiled_init(qualname, fields, defaults, factories)(self, *args, **kwargs)
            raise AssertionError("unreachable: the compiled __init__ refused the call")
        for name, value in zip(fields, args, strict=False):
            object.__setattr__(self, name, value)
        for name in rest:
            if name in kwargs:
                value = kwargs[name]
            elif name in defaults:
                value = defaults[name]
            else:
                value = factories[name]()
            object.__setattr__(self, name, value)

    guard: set[int] = set()

    def __repr__(self: Any) -> str:
        if id(self) in guard:  # a record that holds itself: as reprlib.recursive_repr
            return "..."
        guard.add(id(self))
        try:
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in visible)
        finally:
            guard.discard(id(self))
        return f"{self.__class__.__qualname__}({inner})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:  # tuples, as dataclasses compare (NaN is itself)
            return tuple(getattr(self, n) for n in keys) == tuple(getattr(other, n) for n in keys)
        return NotImplemented

    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    if slots:
        body["__slots__"] = fields
    body["__match_args__"] = fields
    body["__init__"] = __init__
    body.setdefault("__repr__", __repr__)
    if eq:
        body["__eq__"] = __eq__
    if order:
        body.update(_orderings(keys))
    flags = {"frozen": frozen, "order": order, "eq": eq, "slots": slots}
    twin = _twin_maker(original, cls, flags)
    for name in ("__dataclass_fields__", "__dataclass_params__", "__signature__"):
        body[name] = _FromTwin(name, twin)
    if frozen:
        made = type(cls)(cls.__name__, cls.__bases__, body)
        built.append(made)

        def __setattr__(self: Any, name: str, value: Any) -> None:
            if type(self) is made or name in fields:
                from dataclasses import FrozenInstanceError

                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            object.__setattr__(self, name, value)

        def __delattr__(self: Any, name: str) -> None:
            if type(self) is made or name in fields:
                from dataclasses import FrozenInstanceError

                raise FrozenInstanceError(f"cannot delete field {name!r}")
            object.__delattr__(self, name)

        made.__setattr__ = __setattr__
        made.__delattr__ = __delattr__
        if eq:

            def __hash__(self: Any) -> int:
                return hash(tuple(getattr(self, n) for n in keys))

            made.__hash__ = __hash__
        if slots:

            def __getstate__(self: Any) -> list[Any]:
                return [getattr(self, n) for n in fields]

            def __setstate__(self: Any, state: list[Any]) -> None:
                for name, value in zip(fields, state, strict=False):
                    object.__setattr__(self, name, value)

            made.__getstate__ = __getstate__
            made.__setstate__ = __setstate__
        _FIELD_NAMES[made] = fields
        return made
    if eq:
        body["__hash__"] = None  # eq without frozen: unhashable, as dataclasses make it
    made = type(cls)(cls.__name__, cls.__bases__, body)
    built.append(made)
    _FIELD_NAMES[made] = fields
    return made


# Constructions of one class before it gets a compiled __init__: a check of a small
# file builds most classes a few times (compiling is what start-up saves), a tree
# builds some (bindings, findings, edits) hundreds of thousands of times.
COMPILE_AFTER = 200


def _compiled_init(
    qualname: str,
    fields: tuple[str, ...],
    defaults: dict[str, Any],
    factories: dict[str, Callable[[], Any]],
) -> Callable[..., None]:
    """The ``__init__`` dataclasses would write for these fields (its text, compiled)."""
    space: dict[str, Any] = {"__set": object.__setattr__, "__FACTORY": _NO_DEFAULT}
    params, lines = [], []
    for name in fields:
        if name in defaults:
            space[f"__d_{name}"] = defaults[name]
            params.append(f"{name}=__d_{name}")
            lines.append(f"    __set(__record_self__, {name!r}, {name})")
        elif name in factories:
            space[f"__f_{name}"] = factories[name]
            params.append(f"{name}=__FACTORY")
            lines.append(
                f"    __set(__record_self__, {name!r}, "
                f"__f_{name}() if {name} is __FACTORY else {name})"
            )
        else:
            params.append(name)
            lines.append(f"    __set(__record_self__, {name!r}, {name})")
    text = f"def __init__(__record_self__, {', '.join(params)}):\n" + (
        "\n".join(lines) or "    pass"
    )
    exec(text, space)  # our own text, as dataclasses write theirs
    made: Callable[..., None] = space["__init__"]
    made.__qualname__ = f"{qualname}.__init__"
    return made


def _orderings(keys: tuple[str, ...]) -> dict[str, Callable[[Any, Any], bool]]:
    """``__lt__``, ``__le__``, ``__gt__``, ``__ge__`` over the compared fields' tuples."""

    def of(self: Any) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in keys)

    def __lt__(self: Any, other: Any) -> bool:
        if other.__class__ is self.__class__:
            return of(self) < of(other)
        return NotImplemented

    def __le__(self: Any, other: Any) -> bool:
        if other.__class__ is self.__class__:
            return of(self) <= of(other)
        return NotImplemented

    def __gt__(self: Any, other: Any) -> bool:
        if other.__class__ is self.__class__:
            return of(self) > of(other)
        return NotImplemented

    def __ge__(self: Any, other: Any) -> bool:
        if other.__class__ is self.__class__:
            return of(self) >= of(other)
        return NotImplemented

    return {"__lt__": __lt__, "__le__": __le__, "__gt__": __gt__, "__ge__": __ge__}


def replace(obj: _T, /, **changes: Any) -> _T:
    """As :func:`dataclasses.replace` for a record (without importing :mod:`dataclasses`)."""
    names = fields_of(type(obj))
    for name in names:
        if name not in changes:
            changes[name] = getattr(obj, name)
    made: _T = obj.__class__(**changes)
    return made


def fields_of(cls: type) -> tuple[str, ...]:
    """The field names of record class ``cls``, in order (``TypeError`` for any other class)."""
    found = _FIELD_NAMES.get(cls)
    if found is None:
        raise TypeError(f"{cls.__qualname__} is not a record (see torchport.check._records)")
    return found
