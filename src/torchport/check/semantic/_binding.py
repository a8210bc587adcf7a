"""The facts the scope pass records: scopes, bindings and how a module imports torch.

Data only; :mod:`torchport.check.semantic._scope` builds them and answers questions about them.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator

from torchport.check._records import field, record

__all__ = [
    "Binding",
    "BindingKind",
    "Scope",
    "ScopeKind",
    "StatementFacts",
    "TorchImport",
    "import_bindings",
    "import_tails",
    "statement_facts",
    "statement_names",
    "written_names",
]


class ScopeKind(enum.Enum):
    """What opened a scope."""

    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"
    LAMBDA = "lambda"
    COMPREHENSION = "comprehension"


class BindingKind(enum.Enum):
    """How a name got bound."""

    IMPORT = "import"
    ASSIGN = "assign"  # `x = ...`, `x: T = ...`, tuple unpacking
    AUGMENTED = "augmented"  # `x += ...`
    PARAMETER = "parameter"
    DEF = "def"  # def / async def
    CLASS = "class"
    LOOP = "loop"  # for / async for / comprehension targets
    WITH = "with"
    EXCEPT = "except"
    WALRUS = "walrus"
    MATCH = "match"
    DELETE = "delete"  # `del x`: unbinds


@record(frozen=True, eq=False)
class Binding:
    """One place that binds ``name`` in ``scope``.

    ``value`` is the expression bound when the name is a whole assignment
    target (``x = value``, ``x: T = value``, ``(x := value)``), else None.
    ``qualified`` is the dotted import target (``import torch.nn as nn`` binds
    ``nn`` to ``"torch.nn"``), else None.
    """

    name: str
    kind: BindingKind
    node: ast.AST
    scope: Scope = field(repr=False)
    value: ast.expr | None = None
    qualified: str | None = None


@record(eq=False, slots=False)
class Scope:
    """One scope: what opened it, what encloses it, and its bindings in source order."""

    kind: ScopeKind
    node: ast.AST
    parent: Scope | None = field(repr=False)
    bindings: dict[str, list[Binding]] = field(default_factory=dict, repr=False)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)
    star_imports: list[ast.ImportFrom] = field(default_factory=list)

    def add(self, binding: Binding) -> None:
        self.bindings.setdefault(binding.name, []).append(binding)


class TorchImport(enum.Enum):
    """How a module imports torch (see :meth:`ScopeMap.torch_import`)."""

    UNCONDITIONAL = "unconditional"  # a module-level statement always imports from torch
    OPTIONAL = "optional"  # only under try/if/TYPE_CHECKING or inside functions
    NONE = "none"  # not imported anywhere


def import_bindings(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str | None]]:
    """(local name, dotted target) for each name an import binds (target None: relative).

    A name ``torch`` imported from another module (``from ..compat import torch``,
    ``from utils import torch``) is torch itself, re-exported: the compatibility
    idiom, whose whole point is to be torch on every version. ``from . import torch``
    is not: it imports the package's own submodule named ``torch``.
    """
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                head = alias.name.partition(".")[0]
                yield head, head
        return
    base = node.module if not node.level else None
    for alias in node.names:
        if alias.name == "torch" and node.module and not node.module.startswith("torch"):
            # `from ..compat import torch`: a project's compatibility module re-exporting torch
            yield alias.asname or alias.name, "torch"
        elif alias.name != "*":
            yield alias.asname or alias.name, f"{base}.{alias.name}" if base else None


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def import_tails(tree: ast.Module) -> dict[str, str | None]:
    """Every name an import binds anywhere in ``tree``, with the last part of what it imports.

    ``ld`` -> ``"load"`` after ``from torch import load as ld``; None when
    imports give the name different last parts. See :func:`statement_names`.
    """
    return statement_names(tree)[0]


def statement_names(tree: ast.Module) -> tuple[dict[str, str | None], frozenset[str]]:
    """What the statements of ``tree`` bind: import tails, and the names assigned a value.

    The tails: every name an import binds anywhere, with the last part of what
    it imports (``ld`` -> ``"load"`` after ``from torch import load as ld``; None
    when imports give the name different last parts). The assigned: every name
    that is a whole target of an assignment with a value (``x = v``, ``x: T = v``)
    anywhere; a :class:`Binding` has a ``value`` only there (and for ``:=``,
    which is an expression, not looked for here). Only statements are visited
    (imports and assignments are statements), a tenth of the nodes: cheap
    enough to run on every file before its walk. A name missing from the tails
    is no import anywhere, so nothing resolves it to one; what a name that is
    there means at a given place is
    :class:`~torchport.check.semantic._scope.ScopeMap`'s answer.
    """
    facts = statement_facts(tree)
    return facts.tails, facts.assigned


@record()
class StatementFacts:
    """What one walk over a module's statements finds (see :func:`statement_facts`)."""

    tails: dict[str, str | None]
    assigned: frozenset[str]
    # names module-level imports bind, with their dotted targets (None: relative)
    module_imports: dict[str, set[str | None]]
    nested_imports: set[str]  # names an import in a function or class body binds
    # how often the import statements write each name with no dot after it
    written: dict[str, int]
    # (local name, dotted target) of every import anywhere: what the scope pass's
    # import bindings hold, in statement order (see import_bindings)
    imported: list[tuple[str, str | None]]
    # the module-level star imports (`from m import *`, also under `if`/`try` there)
    stars: list[ast.ImportFrom]
    # the other `from m import a` of another module than torch's, anywhere (relative too)
    froms: list[ast.ImportFrom]
    # the `import m [as c]` of other modules than torch's, anywhere
    plain: list[ast.Import]
    # names assigned a dotted name or a `functools.partial` of one anywhere, with its last
    # part (`pack` -> "pack_padded_sequence" after `pack = nn.utils.rnn.pack_padded_sequence`;
    # None: different ones): the engine's call dispatch, as for `tails`
    aliases: dict[str, str | None] = field(default_factory=dict)
    # the same for attributes (`self.pack = nn.utils.rnn.pack_padded_sequence`, a class
    # body's `pack = staticmethod(...)`): the engine's dispatch of `self.pack(...)`
    attribute_aliases: dict[str, str | None] = field(default_factory=dict)


_SCOPE_STATEMENTS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_BLOCKS_OF: dict[type[ast.AST], tuple[str, ...]] = {}


def statement_facts(tree: ast.Module) -> StatementFacts:
    """:func:`statement_names`, and where each import binds its names, in the same walk."""
    tails: dict[str, str | None] = {}
    assigned: set[str] = set()
    module_imports: dict[str, set[str | None]] = {}
    nested: set[str] = set()
    written: dict[str, int] = {}
    imported: list[tuple[str, str | None]] = []
    stars: list[ast.ImportFrom] = []
    froms: list[ast.ImportFrom] = []
    plain: list[ast.Import] = []
    bound: list[tuple[str, ast.expr]] = []  # (name, value) of assignments of a dotted name
    kept: list[tuple[str, ast.expr]] = []  # (attribute, value): `self.pack = pps`
    todo: list[tuple[ast.AST, bool]] = [(stmt, True) for stmt in tree.body]
    pop, extend = todo.pop, todo.extend
    blocks_of = _BLOCKS_OF
    while todo:
        stmt, at_module = pop()
        kind = stmt.__class__
        if kind is ast.Assign:
            assert isinstance(stmt, ast.Assign)
            names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
            assigned.update(names)
            if stmt.value.__class__ in _ALIAS_VALUES:
                bound.extend((n, stmt.value) for n in names)
                kept.extend(
                    (t.attr, stmt.value) for t in stmt.targets if isinstance(t, ast.Attribute)
                )
            continue
        if kind is ast.AnnAssign:
            assert isinstance(stmt, ast.AnnAssign)
            target = stmt.target
            if isinstance(target, ast.Name) and stmt.value is not None:
                assigned.add(target.id)
                if stmt.value.__class__ in _ALIAS_VALUES:
                    bound.append((target.id, stmt.value))
            continue
        if kind is ast.Import or kind is ast.ImportFrom:
            assert isinstance(stmt, (ast.Import, ast.ImportFrom))
            for name in written_names(stmt):
                written[name] = written.get(name, 0) + 1
            if at_module and kind is ast.ImportFrom and stmt.names[0].name == "*":
                stars.append(stmt)  # type: ignore[arg-type]
            elif isinstance(stmt, ast.ImportFrom):
                if stmt.names[0].name != "*" and (stmt.level or not _torch_module(stmt.module)):
                    froms.append(stmt)
            elif not all(_torch_module(a.name) for a in stmt.names):
                plain.append(stmt)
            for local, target_name in import_bindings(stmt):
                imported.append((local, target_name))
                tail = (target_name or local).rpartition(".")[2]
                tails[local] = tail if tails.get(local, tail) == tail else None
                if at_module:
                    module_imports.setdefault(local, set()).add(target_name)
                else:
                    nested.add(local)
            continue
        fields = blocks_of.get(kind)
        if fields is None:  # the block fields this class has (most statements: none)
            fields = blocks_of[kind] = tuple(f for f in _BLOCKS if f in kind._fields)
        if not fields:
            continue
        inside = at_module and kind not in _SCOPE_STATEMENTS
        for field_name in fields:
            block = getattr(stmt, field_name)
            if block:
                extend([(item, inside) for item in block])
    facts = StatementFacts(
        tails, frozenset(assigned), module_imports, nested, written, imported, stars, froms, plain
    )
    for name, value in bound:
        last = _alias_tail(value, tails)
        if last is not None and last != name:
            aliases = facts.aliases
            aliases[name] = last if aliases.get(name, last) == last else None
    attrs = facts.attribute_aliases
    found = [(n, _alias_tail(v, tails)) for n, v in kept]
    for name, last in [*found, *facts.aliases.items()]:  # a class body's `pack = ...` too
        if last is not None and last != name:
            attrs[name] = last if attrs.get(name, last) == last else None
    return facts


_ALIAS_VALUES = frozenset({ast.Name, ast.Attribute, ast.Call})


def _alias_tail(value: ast.expr, tails: dict[str, str | None]) -> str | None:
    """The last part of the function ``value`` names: ``nn.utils.rnn.pack_padded_sequence``,
    ``pps`` imported as it, ``functools.partial`` of either; None for anything else."""
    for _ in range(4):
        if isinstance(value, ast.Attribute):
            return value.attr
        if isinstance(value, ast.Name):
            return tails.get(value.id, value.id)
        if not (isinstance(value, ast.Call) and value.args):
            return None
        func = value.func
        if getattr(func, "attr", getattr(func, "id", None)) not in ("partial", "staticmethod"):
            return None
        value = value.args[0]  # `functools.partial(f, ...)`: f's
    return None


def _torch_module(module: str | None) -> bool:
    return module is not None and (module == "torch" or module.startswith("torch."))


def written_names(stmt: ast.Import | ast.ImportFrom) -> list[str]:
    """The identifiers ``stmt`` writes with no dot after them (the text shows each once)."""
    out: list[str] = []
    if isinstance(stmt, ast.ImportFrom):
        if stmt.module:
            # the last part of a module name: `torch` of `from torch import nn`, `nn` of
            # `from torch.nn import Linear` (the parts before it are followed by dots)
            out.append(stmt.module.rpartition(".")[2])
        for alias in stmt.names:
            if alias.name != "*":
                out.append(alias.name)  # `nn` of `from torch import nn [as tnn]`
            if alias.asname:
                out.append(alias.asname)
        return out
    for alias in stmt.names:
        out.append(alias.name.rpartition(".")[2])  # `torch` / `nn` of `import torch[.nn] [as x]`
        if alias.asname:
            out.append(alias.asname)
    return out
