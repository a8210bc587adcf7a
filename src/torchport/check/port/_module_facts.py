"""What one project module defines that the port needs: the record a project view reads.

:class:`ModuleFacts` is what :func:`~torchport.check.port._project.module_facts` keeps per
module and file version; :data:`KINDS` names each kind of name it holds and the field
holding it (``ProjectImports``, one file's view, has the same fields).

A check asks a view only whose device methods a name has (its owners); the port asks
every kind. So the kinds only the port reads (:class:`PortKinds`: all but the classes) may
be made on first read instead (``port/_port_kinds.py``): ``ModuleFacts.port`` then holds
what makes them, and every field of them is read through it, so a reader cannot tell
which it got.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields

from torchport.check.port._project_owners import Owned

__all__ = ["KINDS", "NOT_GIVEN", "ModuleFacts", "PortKinds"]


@dataclass(frozen=True, slots=True)
class PortKinds:
    """The kinds of a module's names only the port reads (``_project``'s docstring)."""

    factories: frozenset[str] = frozenset()
    tensor_functions: frozenset[str] = frozenset()
    tensors: frozenset[str] = frozenset()
    devices: frozenset[str] = frozenset()
    cpu_functions: frozenset[str] = frozenset()  # functions making CPU tensors (or numpy reads)
    view_functions: frozenset[str] = frozenset()  # returns only views of their parameters
    # each view function's viewed parameters: (function, ((position or -1, name), ...))
    views: tuple[tuple[str, tuple[tuple[int, str], ...]], ...] = ()
    # model classes whose forward makes its own tensor of an input: (class, (position, ...))
    converted: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # functions whose every return is host data (numpy, numbers): _host_functions.py
    host_functions: frozenset[str] = frozenset()
    # functions returning tuples: the positions holding host data in every return
    host_items: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # functions returning tuples of one length: (function, (length, the positions holding a
    # CPU tensor in every return)) (_module_functions.tensor_positions)
    tensor_items: tuple[tuple[str, tuple[int, tuple[int, ...]]], ...] = ()
    # the functions and module-level values of other project modules it re-exports
    # (_reexports.py): an importer's port reads their code as the module's own
    given: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, eq=False)
class ModuleFacts:
    """What one project module defines that the port needs (``_project``'s docstring: the kinds)."""

    path: str
    classes: frozenset[str] = frozenset()
    plain_classes: frozenset[str] = frozenset()  # module-level classes that are no models
    # whose device methods its classes, instances and re-exports have (_project_owners.py)
    owners: tuple[tuple[str, Owned], ...] = ()
    defined: frozenset[str] = frozenset()  # the names it binds itself (no star imports)
    # the names a port kind may hold: its module-level functions and `name = ...` targets
    # (a name outside it is in none, asked without making them)
    may_hold: frozenset[str] = frozenset()
    # the names it binds by a module-level `from ... import name`, and whether it has a star
    # import there: a port kind may hold them too, re-exported (_reexports.py)
    imports: frozenset[str] = frozenset()
    starred: bool = False
    # names a model class could be behind that the view cannot resolve (_unsure_names.py),
    # and whether a module-level `__getattr__` may give the names it does not bind
    unsure: frozenset[str] = frozenset()
    dynamic: bool = False
    # the project modules it has as attributes: (attribute, path) (_attribute_modules.py)
    attributes: tuple[tuple[str, str], ...] = ()
    # the port's kinds, or what makes them (once, on the first read of one: replaced then)
    port: PortKinds | Callable[[], PortKinds] = PortKinds()
    # :attr:`owned`, made on first use (asked for every name a file imports from the module)
    _owned: dict[str, Owned] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def owned(self) -> Mapping[str, Owned]:
        """:attr:`owners` as a mapping (one, made on first use: read it, never change it)."""
        if self._owned is None:
            object.__setattr__(self, "_owned", dict(self.owners))  # (a cache: frozen fields)
        return self._owned  # type: ignore[return-value]

    @property
    def made(self) -> PortKinds:
        """The port's kinds, made now if they were left for their first read."""
        port = self.port
        if isinstance(port, PortKinds):
            return port
        made = port()
        object.__setattr__(self, "port", made)  # (what made them is dropped with it)
        return made

    @property
    def kinds_made(self) -> bool:
        """Whether the port's kinds are made (reading them costs nothing more)."""
        return isinstance(self.port, PortKinds)

    factories = property(lambda self: self.made.factories)
    tensor_functions = property(lambda self: self.made.tensor_functions)
    tensors = property(lambda self: self.made.tensors)
    devices = property(lambda self: self.made.devices)
    cpu_functions = property(lambda self: self.made.cpu_functions)
    view_functions = property(lambda self: self.made.view_functions)
    views = property(lambda self: self.made.views)
    converted = property(lambda self: self.made.converted)
    host_functions = property(lambda self: self.made.host_functions)
    host_items = property(lambda self: self.made.host_items)
    tensor_items = property(lambda self: self.made.tensor_items)
    given = property(lambda self: self.made.given)

    def starred_only(self, name: str) -> bool:
        """Whether only a star import of the module may give ``name`` a port kind."""
        return name not in self.may_hold and name not in self.imports

    def may_give(self, name: str) -> bool:
        """Whether a port kind may hold ``name``, asked without making them: its own
        function or value (``may_hold``), or one it re-exports (an import, a star import)."""
        return (
            name in self.may_hold
            or name in self.imports
            or (self.starred and name not in self.defined)
        )

    def kinds(self) -> tuple[tuple[str, frozenset[str]], ...]:
        """``(kind, names)`` for each kind of name, in :data:`KINDS`'s order."""
        return tuple((kind, getattr(self, attr)) for kind, attr in KINDS)

    def _key(self) -> tuple[object, ...]:
        return (
            self.path,
            self.classes,
            self.plain_classes,
            self.owners,
            self.defined,
            self.unsure,
            self.dynamic,
            self.imports,
            self.starred,
            self.attributes,
        )

    def __eq__(self, other: object) -> bool:
        """Equal facts: the same fields, the port's kinds too (made to be compared)."""
        if not isinstance(other, ModuleFacts):
            return NotImplemented
        return (
            self._key() == other._key()
            and self.may_hold == other.may_hold
            and self.made == other.made
        )

    def __hash__(self) -> int:
        return hash(self._key())


# Each kind of name a project module defines, and the field holding it in ModuleFacts and
# ProjectImports alike: everything that copies or reads them goes through this list.
KINDS = (
    ("class", "classes"),
    ("factory", "factories"),
    ("tensor_function", "tensor_functions"),
    ("tensor", "tensors"),
    ("device", "devices"),
    ("plain_class", "plain_classes"),
    ("cpu_function", "cpu_functions"),
    ("view_function", "view_functions"),
)
# Kinds that are no torch the importing file gets: a plain class, a function it only calls.
NOT_GIVEN = frozenset({"plain_class", "cpu_function", "view_function"})
# The fields of PortKinds (made on first read where a view is built for owners only).
PORT_FIELDS = frozenset(f.name for f in fields(PortKinds))
