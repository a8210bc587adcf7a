"""The checker's private records: dataclasses' methods, built without ``exec``.

``@dataclass`` writes each method it adds as source text and compiles it, about half
a millisecond per class; the checker's dozens of classes made that the largest single
part of ``torchport check``'s start-up. :func:`record` gives a class the methods
``@dataclass(slots=True)`` (with ``frozen=True`` where asked) gives it, as closures
over the field names, so building a class costs one ``type()`` call. The methods
behave as dataclasses' do: ``__init__`` (positional or keyword, defaults and
``default_factory``), ``__repr__``, ``__eq__`` (same class only), ``__hash__``
(fields compared, or None for a mutable record), frozen ``__setattr__`` and
``__delattr__`` raising :class:`dataclasses.FrozenInstanceError`, ``__match_args__``,
``__slots__`` and pickling. tests/check/test_records.py holds every record of the
package equal to the ``@dataclass`` built from the same fields.

What differs: a record is not a dataclass to :mod:`dataclasses` (``fields``,
``replace`` and ``asdict`` refuse it), so the public types (``Finding``, ``Config``,
``CheckResult``, ...) stay dataclasses; only private ones are records. ``order``,
``init=False`` fields, ``InitVar``, ``KW_ONLY`` and ``__post_init__`` are not
supported, and a record needs a docstring: a class that does not fit is refused with
a ``TypeError`` at import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

__all__ = ["field", "record"]

_T = TypeVar("_T")
_NO_DEFAULT: Any = object()


class _Field:
    __slots__ = ("compare", "default", "default_factory")

    def __init__(
        self, default: Any, default_factory: Callable[[], Any] | None, compare: bool
    ) -> None:
        self.default = default
        self.default_factory = default_factory
        self.compare = compare


def field(
    *,
    default: Any = _NO_DEFAULT,
    default_factory: Callable[[], Any] | None = None,
    compare: bool = True,
) -> Any:
    """As :func:`dataclasses.field` with these three arguments."""
    if default is not _NO_DEFAULT and default_factory is not None:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, compare)


def _is_class_var(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return text.startswith(("ClassVar", "typing.ClassVar"))


@dataclass_transform(field_specifiers=(field,))
def record(*, frozen: bool = False) -> Callable[[type[_T]], type[_T]]:
    """``@dataclass(slots=True, frozen=frozen)`` for a private class, without ``exec``."""

    def build(cls: type[_T]) -> type[_T]:
        made: type[_T] = _build(cls, frozen=frozen)
        return made

    return build


def _build(cls: Any, *, frozen: bool) -> Any:
    body = dict(cls.__dict__)
    own = {"__post_init__", "__slots__", "__eq__", "__hash__"} & set(body)
    # no docstring: dataclasses would write one from the signature (inspect's work)
    if cls.__bases__ != (object,) or own or not body.get("__doc__"):
        raise TypeError(
            f"record {cls.__qualname__}: only a plain class (see torchport.check._records)"
        )
    names: list[str] = []
    defaults: dict[str, Any] = {}
    factories: dict[str, Callable[[], Any]] = {}
    compared: list[str] = []
    for name, annotation in body.get("__annotations__", {}).items():
        if _is_class_var(annotation):
            continue
        if "InitVar" in str(annotation) or "KW_ONLY" in str(annotation):
            raise TypeError(
                f"record {cls.__qualname__}.{name}: InitVar and KW_ONLY are not supported"
            )
        value = body.pop(name, _NO_DEFAULT)
        spec = value if isinstance(value, _Field) else _Field(value, None, True)
        if spec.default is not _NO_DEFAULT:
            if type(spec.default).__hash__ is None:  # as dataclasses: no shared mutable default
                raise ValueError(
                    f"mutable default {type(spec.default)} for field {name} is not allowed: "
                    "use default_factory"
                )
            defaults[name] = spec.default
        elif spec.default_factory is not None:
            factories[name] = spec.default_factory
        elif defaults or factories:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        names.append(name)
        if spec.compare:
            compared.append(name)
    fields = tuple(names)
    keys = tuple(compared)
    qualname = cls.__qualname__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(fields):
            raise TypeError(
                f"{qualname}.__init__() takes {len(fields) + 1} positional arguments "
                f"but {len(args) + 1} were given"
            )
        values = dict(zip(fields, args, strict=False))
        for key, value in kwargs.items():
            if key not in fields:
                raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {key!r}")
            if key in values:
                raise TypeError(f"{qualname}.__init__() got multiple values for argument {key!r}")
            values[key] = value
        for name in fields:
            if name in values:
                value = values[name]
            elif name in defaults:
                value = defaults[name]
            elif name in factories:
                value = factories[name]()
            else:
                given = {*values, *defaults, *factories}
                missing = [n for n in fields if n not in given]
                raise TypeError(
                    f"{qualname}.__init__() missing {len(missing)} required positional "
                    f"argument{'s' if len(missing) > 1 else ''}: "
                    + " and ".join(repr(n) for n in missing)
                )
            object.__setattr__(self, name, value)

    guard: set[int] = set()

    def __repr__(self: Any) -> str:
        if id(self) in guard:  # a record that holds itself: as reprlib.recursive_repr
            return "..."
        guard.add(id(self))
        try:
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in fields)
        finally:
            guard.discard(id(self))
        return f"{self.__class__.__qualname__}({inner})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:  # tuples, as dataclasses compare (NaN is itself)
            return tuple(getattr(self, n) for n in keys) == tuple(getattr(other, n) for n in keys)
        return NotImplemented

    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    body["__slots__"] = fields
    body["__match_args__"] = fields
    body["__init__"] = __init__
    body.setdefault("__repr__", __repr__)
    body.setdefault("__eq__", __eq__)
    if frozen:
        made = type(cls)(cls.__name__, cls.__bases__, body)

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

        def __hash__(self: Any) -> int:
            return hash(tuple(getattr(self, n) for n in keys))

        def __getstate__(self: Any) -> list[Any]:
            return [getattr(self, n) for n in fields]

        def __setstate__(self: Any, state: list[Any]) -> None:
            for name, value in zip(fields, state, strict=False):
                object.__setattr__(self, name, value)

        made.__setattr__ = __setattr__
        made.__delattr__ = __delattr__
        made.__hash__ = __hash__
        made.__getstate__ = __getstate__
        made.__setstate__ = __setstate__
        return made
    body["__hash__"] = None  # eq without frozen: unhashable, as dataclasses make it
    return type(cls)(cls.__name__, cls.__bases__, body)
