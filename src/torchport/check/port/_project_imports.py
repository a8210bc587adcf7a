"""One file's view of its project (:class:`ProjectImports`): what ``_project`` builds.

The view names, by kind, the local names its module-level imports bind to the project's
own modules (``_project``'s docstring: the kinds), and whose device methods they have.
Built for a check's owners only (``_project_view.project_owners``), its port kinds are
left to :func:`~torchport.check.port._project.complete`: until then reading one raises.
"""

from __future__ import annotations

import ast
from collections.abc import Set
from dataclasses import dataclass, field

from torchport.check._match import dotted_parts
from torchport.check.port._module_facts import KINDS, NOT_GIVEN, ModuleFacts
from torchport.check.port._project_owners import UNRESOLVED, Owned
from torchport.errors import TorchportError

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["PORT_ONLY", "ProjectImports"]


@dataclass(slots=True)
class ProjectImports:
    """One file's view of its project: local name -> what the imported thing is.

    Built by adding to the kinds' sets; the first :meth:`lookup` of a name indexes every
    name by its kind and freezes those sets (the view is complete once asked: a later
    ``add`` raises instead of going unseen by the index).
    """

    classes: Set[str] = field(default_factory=set)
    factories: Set[str] = field(default_factory=set)
    tensor_functions: Set[str] = field(default_factory=set)
    tensors: Set[str] = field(default_factory=set)
    devices: Set[str] = field(default_factory=set)
    plain_classes: Set[str] = field(default_factory=set)
    cpu_functions: Set[str] = field(default_factory=set)
    view_functions: Set[str] = field(default_factory=set)
    modules: dict[str, ModuleFacts] = field(default_factory=dict)  # `import utils as u`
    # those of `modules` reached as another's attribute (`pkg.model`: _attribute_modules.py)
    reached: set[str] = field(default_factory=set, compare=False)
    viewed: dict[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    # model class (local name) -> the forward's inputs it makes its own tensor of
    converted: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # local name -> whose device methods it has (_project_owners.py); names bound to a
    # project module's name that cannot be read; a star import of a module that cannot be
    # (apart from equality: the port's views compare without them)
    owners: dict[str, Owned] = field(default_factory=dict, compare=False)
    unresolved: set[str] = field(default_factory=set, compare=False)
    # local names of functions whose every return is host data (_host_functions.py)
    host_functions: set[str] = field(default_factory=set, compare=False)
    host_items: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False)
    # local names bound to a project module's function or module-level value by the import
    functions: set[str] = field(default_factory=set, compare=False)
    # local names of functions returning tuples with CPU tensors at known positions:
    # (length, positions) (_module_functions.tensor_positions)
    tensor_items: dict[str, tuple[int, tuple[int, ...]]] = field(
        default_factory=dict, compare=False
    )
    star_unresolved: bool = field(default=False, compare=False)
    # local names a model class could be behind that the view cannot resolve (_unsure_names)
    unsure: set[str] = field(default_factory=set, compare=False)
    # device methods of their own of the non-torch classes and instances of every project
    # module the file imports anything from: what a function of one may return
    module_methods: set[str] = field(default_factory=set, compare=False)
    # name -> the first kind (in KINDS's order) holding it; built by the first lookup
    _index: dict[str, str] | None = field(default=None, init=False, repr=False, compare=False)
    # A view being built: the records of the port's kinds left for complete() (None: done)
    _later: list[tuple[object, ...]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @classmethod
    def building(cls) -> ProjectImports:
        """A view whose port kinds are recorded by :func:`complete` (read before: raises)."""
        view = cls()
        for name in PORT_ONLY:
            setattr(view, name, _Unmade(name))
        view._later = []
        return view

    def take_later(self) -> list[tuple[object, ...]] | None:
        """The records left for :func:`complete`, its port kinds now empty to be filled (None:
        the view is complete)."""
        later = self._later
        if later is not None:
            self._later = None
            for name in PORT_ONLY:
                setattr(self, name, {} if name in _DICT_FIELDS else set())
        return later

    def later(self, record: tuple[object, ...]) -> bool:
        """Keep ``record`` for :func:`complete` while the view is being built (False: done,
        the caller records it now)."""
        if self._later is None:
            return False
        self._later.append(record)
        return True

    def _names(self, expr: ast.expr, own: Set[str], held: str) -> bool:
        """Whether the name is in ``own`` (what this file imports), or ``alias.name``'s
        module's facts hold ``name`` in their field ``held``."""
        if isinstance(expr, ast.Name):
            return expr.id in own
        if isinstance(expr, ast.Attribute) and self.modules:
            facts = self._module_of(expr)
            return facts is not None and expr.attr in getattr(facts, held)
        return False

    def _module_of(self, expr: ast.Attribute) -> ModuleFacts | None:
        """The facts of the project module ``alias`` of ``alias.name`` names, if one."""
        owner = _dotted(expr.value)
        return self.modules.get(owner) if owner is not None else None

    def model_class(self, expr: ast.expr) -> bool:
        """Whether the name or ``alias.name`` is the project's model class: :meth:`lookup`'s
        kind ``"class"`` (the first kind), read from the classes alone."""
        return self._names(expr, self.classes, "classes")

    def viewed_parameters(self, func: ast.expr) -> tuple[tuple[int, str], ...] | None:
        """For a view function (``get_batch``, ``utils.get_batch``): the ``(position,
        name)`` of each parameter its returns are views of (position -1: keyword-only)."""
        if isinstance(func, ast.Name):
            return self.viewed.get(func.id) if func.id in self.view_functions else None
        if isinstance(func, ast.Attribute) and self.modules:
            facts = self._module_of(func)
            if facts is not None and func.attr in facts.view_functions:
                return dict(facts.views).get(func.attr)
        return None

    def unsure_class(self, expr: ast.expr) -> bool:
        """Whether a model class of the project's could be behind the name or ``alias.name``
        and the view cannot tell (``_unsure_names.py``)."""
        if isinstance(expr, ast.Name):
            return expr.id in self.unsure
        owner = _dotted(expr.value) if isinstance(expr, ast.Attribute) else None
        facts = self.modules.get(owner) if owner is not None else None
        if facts is None or not isinstance(expr, ast.Attribute):
            return False
        return expr.attr in facts.unsure or (
            facts.dynamic and expr.attr[:1].isupper() and expr.attr not in facts.defined
        )

    def own_function(self, expr: ast.expr) -> bool:
        """Whether the name or ``alias.name`` is a function or module-level value of one of
        the project's own modules (no library's: the port reads its code)."""
        return self._names(expr, self.functions, "may_hold")

    def owner_of(self, expr: ast.expr) -> Owned | None:
        """Whose device methods the name or ``alias.name`` has, if a project module binds it.

        :data:`~torchport.check.port._project_owners.UNRESOLVED` where the project's module
        cannot be read; None where the name is no project module's.
        """
        if isinstance(expr, ast.Name):
            if expr.id in self.owners:
                return self.owners[expr.id]
            return UNRESOLVED if expr.id in self.unresolved else None
        if not isinstance(expr, ast.Attribute):
            return None
        owner = _dotted(expr.value)
        if owner is None:
            return None
        if owner.partition(".")[0] in self.unresolved:
            return UNRESOLVED  # `batch.Batch` after `from . import batch`, unreadable
        facts = self.modules.get(owner)
        if facts is None:
            return None
        found = facts.owned.get(expr.attr)
        if found is None and expr.attr not in facts.defined and expr.attr not in facts.given:
            return UNRESOLVED  # bound there by a star or dynamic import, not re-exported
        return found

    def lookup(self, expr: ast.expr) -> tuple[str, str] | None:
        """``(kind, name)`` for a name or ``alias.name`` the project defines, else None.

        ``kind`` is one of ``"class"``, ``"factory"``, ``"tensor_function"``,
        ``"tensor"``, ``"device"``, ``"plain_class"`` (a class that is no model),
        ``"cpu_function"`` (a plain function making CPU tensors; a tensor function or
        a factory is told as that first).
        """
        if isinstance(expr, ast.Name):  # asked of every call's function: one dict read
            index = self._index
            if index is None:
                index = self._sealed()
            kind = index.get(expr.id)
            return None if kind is None else (kind, expr.id)
        if isinstance(expr, ast.Attribute) and self.modules:  # (asked of every call)
            facts = self._module_of(expr)
            if facts is None:
                return None
            for kind, defined in facts.kinds():
                if expr.attr in defined:
                    return kind, expr.attr
        return None

    def _sealed(self) -> dict[str, str]:
        """Index every name by the first kind holding it; freeze the kinds' sets."""
        index: dict[str, str] = {}
        for kind, attr in KINDS:
            names = frozenset(getattr(self, attr))
            for name in names:
                index.setdefault(name, kind)
            setattr(self, attr, names)
        self._index = index
        return index

    def _kinds(self) -> tuple[tuple[str, Set[str]], ...]:
        return tuple((kind, getattr(self, attr)) for kind, attr in KINDS)

    def __bool__(self) -> bool:
        """Whether the project gives this file anything torch: a model, a tensor, a device,
        itself or through an imported module (a plain class alone, or a module defining
        nothing torch, as a TensorFlow sibling, does not make a file without torch a
        PyTorch program)."""
        if any(names for kind, names in self._kinds() if kind not in NOT_GIVEN):
            return True
        return any(  # (not one reached as an attribute: `pkg.model` the file may never read)
            names
            for key, facts in self.modules.items()
            if key not in self.reached
            for kind, names in facts.kinds()
            if kind not in NOT_GIVEN
        )


# The fields of a view only the port reads: left to complete() where a check asks for owners.
PORT_ONLY = (
    "factories",
    "tensor_functions",
    "tensors",
    "devices",
    "plain_classes",
    "cpu_functions",
    "view_functions",
    "viewed",
    "converted",
    "host_functions",
    "host_items",
    "tensor_items",
    "functions",
)
_DICT_FIELDS = frozenset({"viewed", "converted", "host_items", "tensor_items"})  # (else sets)


class _Unmade:
    """A port kind of a view before :func:`complete`: every read raises (an empty kind
    read there would be a wrong answer, given silently)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _unmade(self, *args: object) -> NoReturn:
        raise TorchportError(
            f"the project view's {self.name!r} was read before the view was complete: a "
            "reader of the port's kinds asks project_of(ctx), which completes it "
            "(port/_project_view.py); project_owners(ctx) gives the owners only"
        )

    __contains__ = __iter__ = __len__ = __bool__ = __getitem__ = __eq__ = _unmade
    __hash__ = None  # type: ignore[assignment]

    def __getattr__(self, attr: str) -> NoReturn:
        if attr.startswith("__"):
            raise AttributeError(attr)  # (what pickle and copy look for)
        self._unmade()


def _dotted(expr: ast.expr) -> str | None:
    parts = dotted_parts(expr)
    return None if parts is None else ".".join(parts)
