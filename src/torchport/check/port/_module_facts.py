"""What one project module defines that the port needs: the record a project view reads.

:class:`ModuleFacts` is what :func:`~torchport.check.port._project.module_facts` keeps per
module and file version; :data:`KINDS` names each kind of name it holds and the field
holding it (``ProjectImports``, one file's view, has the same fields).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from torchport.check.port._project_owners import Owned

__all__ = ["KINDS", "NOT_GIVEN", "ModuleFacts"]


@dataclass(frozen=True, slots=True)
class ModuleFacts:
    """What one project module defines that the port needs (``_project``'s docstring: the kinds)."""

    path: str
    classes: frozenset[str] = frozenset()
    factories: frozenset[str] = frozenset()
    tensor_functions: frozenset[str] = frozenset()
    tensors: frozenset[str] = frozenset()
    devices: frozenset[str] = frozenset()
    plain_classes: frozenset[str] = frozenset()  # module-level classes that are no models
    cpu_functions: frozenset[str] = frozenset()  # functions making CPU tensors (or numpy reads)
    view_functions: frozenset[str] = frozenset()  # returns only views of their parameters
    # each view function's viewed parameters: (function, ((position or -1, name), ...))
    views: tuple[tuple[str, tuple[tuple[int, str], ...]], ...] = ()
    # model classes whose forward makes its own tensor of an input: (class, (position, ...))
    converted: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # whose device methods its classes, instances and re-exports have (_project_owners.py)
    owners: tuple[tuple[str, Owned], ...] = ()
    defined: frozenset[str] = frozenset()  # the names it binds itself (no star imports)
    # functions whose every return is host data (numpy, numbers): _host_functions.py
    host_functions: frozenset[str] = frozenset()
    # functions returning tuples: the positions holding host data in every return
    host_items: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # :attr:`owned`, made on first use (asked for every name a file imports from the module)
    _owned: dict[str, Owned] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def owned(self) -> Mapping[str, Owned]:
        """:attr:`owners` as a mapping (one, made on first use: read it, never change it)."""
        if self._owned is None:
            object.__setattr__(self, "_owned", dict(self.owners))  # (a cache: frozen fields)
        return self._owned  # type: ignore[return-value]

    def kinds(self) -> tuple[tuple[str, frozenset[str]], ...]:
        """``(kind, names)`` for each kind of name, in :data:`KINDS`'s order."""
        return tuple((kind, getattr(self, attr)) for kind, attr in KINDS)


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
