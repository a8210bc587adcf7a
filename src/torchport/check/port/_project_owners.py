"""Whose device methods the classes of the project's own modules have: a fix's view across files.

A fix rewrites ``recv.cuda()`` or ``recv.to("cuda")`` only where the receiver is
torch's (see ``semantic/_receivers.py``). Its class is often another module's:
``from .batch import Batch`` then ``Batch(x).cuda()``, or ``class Sub(Base)``
with ``Base`` from a sibling. The project view (:mod:`torchport.check.port._project`,
the port's, one per file and cached per module version) records here, for each
module-level class and each module-level instance of one (``config = Cfg()``):

* the device methods (:data:`DEVICE_METHODS`) the class or a base the project
  defines has of its own (a batch class's ``cuda``, a config's ``to``);
* its lineage: ``"torch"`` (a base is torch's, an ``nn.Module`` subclass, through
  the project's modules too), ``"object"`` (its bases lead nowhere but to the
  project's plain classes and ``object``), or ``"unknown"`` (another library's
  base, a builtin, a base that cannot be read).

The methods recorded also name each **loader** a class has (of its own or through a base
the project defines): a ``classmethod``/``staticmethod`` with a ``map_location``
parameter that defaults to None and goes straight to ``torch.load`` (chemprop's
``MPNN.load_from_file(path, map_location=None)``). It is recorded as
``"<name>(map_location=<i>)"``, ``i`` the parameter's place among the arguments a call
passes (-1: keyword-only), a spelling no device method has (:func:`loader_place`). A class
that annotates its ``device`` field as a string (``device: Literal["cpu", "cuda"]``, of its
own or through a base the project defines) records :data:`~torchport.check.semantic.
_string_fields.STRING_DEVICE` there too: its instances' ``.device`` is no torch device.

Names a package's ``__init__`` imports from its own modules are its names too
(re-exports). A name of a project module that cannot be read (a module that does
not parse, a name it does not bind itself: a star or dynamic import) is
:data:`UNRESOLVED`: a fix leaves a receiver bound to it alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

from torchport.check.port._models import own_build
from torchport.check.semantic import BindingKind
from torchport.check.semantic._dynamic_methods import dynamic_methods
from torchport.check.semantic._string_fields import STRING_DEVICE, declares_string_field

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from torchport.check._context import Context
    from torchport.check.port._project import ProjectImports  # (annotations only)
    from torchport.check.semantic import Binding

__all__ = [
    "DEVICE_METHODS",
    "UNRESOLVED",
    "Owned",
    "bound_names",
    "decide",
    "loader_place",
    "may_own",
    "module_aliases",
    "owners_of",
    "rebound_by_own_call",
]

# The methods a fix rewrites or whose receiver it follows (a class of its own defining
# one is no tensor or module of torch's for that method).
DEVICE_METHODS = frozenset(
    {"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "to_empty", "xpu",
     "mps", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "pin_memory",
     "share_memory_", "long", "int", "bool", "detach", "clone", "contiguous"}
)  # fmt: skip
# (is it an instance, its own device methods, its lineage: "torch" | "object" | "unknown")
Owned = tuple[bool, frozenset[str], str]
UNRESOLVED: Owned = (False, frozenset(), "unresolved")
_GIVEN = "<given at run time>"  # (an owner no import can name: its methods, the module's)
_PLAIN_BASES = frozenset({"typing.Generic", "typing.Protocol", "abc.ABC", "builtins.object"})
_LOOKALIKES = frozenset({"numba", "cupy", "cupyx", "jax", "tensorflow", "keras", "numpy"})


def decide(owned: Owned, method: str, instance: bool) -> str:
    """``"torch"``, ``"other"`` or ``"unknown"``: whose ``method`` a value of ``owned`` has.

    ``instance``: the value is an instance of the class ``owned`` describes (``Batch(x)``),
    not the name itself (``Batch``: a class object; ``config``: an instance already).
    """
    is_instance, methods, lineage = owned
    if lineage == "unresolved":
        return "other"  # reported, never rewritten
    if not instance and not is_instance:
        return "other"  # a class object has no `.cuda()` of torch's
    if method in methods or (method == "cuda" and "to" in methods):
        return "other"  # the program's own `.cuda()` / `.to()` (which `.cuda()` becomes)
    return {"torch": "torch", "object": "other"}.get(lineage, "unknown")


def bound_names(tree: ast.Module) -> frozenset[str]:
    """Names the module binds at its top level (also in ``if``/``try``, a walrus), star imports
    aside."""
    names: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
            continue
        for head in (getattr(stmt, f, None) for f in ("test", "value", "iter")):
            if isinstance(head, ast.expr):  # `if (Net := lambda: _Net()):` (x31an)
                names.update(
                    n.target.id
                    for n in ast.walk(head)
                    if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)
                )
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(stmt, ast.Import):
            names.update((a.asname or a.name).partition(".")[0] for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            names.update(a.asname or a.name for a in stmt.names if a.name != "*")
        elif isinstance(stmt, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                stack.extend(getattr(stmt, block, []))
            for handler in getattr(stmt, "handlers", []):
                stack.extend(handler.body)
    return frozenset(names)


def _own(cls: ast.ClassDef, ctx: Context) -> set[str]:
    found: set[str] = set()
    loaders: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.add(stmt.name)
            place = _loader(stmt, ctx)
            if place is not None:
                loaders.add(f"{stmt.name}(map_location={place})")
        elif isinstance(stmt, ast.Assign):
            found.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    if declares_string_field(cls, "device"):
        loaders.add(STRING_DEVICE)  # `device: str`: its `.device` is no torch device
    return (found & DEVICE_METHODS) | loaders


def loader_place(methods: frozenset[str], name: str) -> int | None:
    """Where a call of the loader ``name`` passes ``map_location`` (-1: by keyword only),
    if ``methods`` (an :data:`Owned`'s) records ``name`` as a loader."""
    prefix = f"{name}(map_location="
    for method in methods:
        if method.startswith(prefix):
            return int(method[len(prefix) : -1])
    return None


def _loader(func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context) -> int | None:
    """The place of ``map_location`` among a call's arguments, for a class or static method
    whose ``map_location=None`` goes straight to ``torch.load`` (by keyword or second)."""
    kinds = {d.id for d in func.decorator_list if isinstance(d, ast.Name)}
    if not kinds & {"classmethod", "staticmethod"}:
        return None
    a = func.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
    defaults += a.defaults
    params = [
        *zip(positional, defaults, strict=True),
        *zip(a.kwonlyargs, a.kw_defaults, strict=True),
    ]
    found = [(i, d) for i, (p, d) in enumerate(params) if p.arg == "map_location"]
    if not found:
        return None
    index, default = found[0]
    if not (isinstance(default, ast.Constant) and default.value is None):
        return None
    if not any(_loads_with(n, ctx) for n in ast.walk(func)):
        return None
    if index >= len(positional):
        return -1
    return index - ("classmethod" in kinds)


def _loads_with(node: ast.AST, ctx: Context) -> bool:
    """``torch.load(f, map_location=map_location)`` (or the name second): the parameter as is."""
    if not isinstance(node, ast.Call) or ctx.qualname(node.func) != "torch.load":
        return False
    given = [k.value for k in node.keywords if k.arg == "map_location"] + node.args[1:2]
    return any(isinstance(v, ast.Name) and v.id == "map_location" for v in given)


def may_own(ctx: Context, name: str) -> bool:
    """Whether :func:`owners_of` the file's project view can hold ``name`` at all, read from
    the file alone (False: it holds no owner by that name, and no view need be built).

    The owners are the module's own classes and ``x = Cls(...)`` instances at module level,
    and the names its module-level imports (also in ``try``/``if``) bind from a module
    found in the project (a star import of one: any name). So True where the file binds
    ``name`` so, or has a star import, from a module ``find_module`` finds; a file not on
    disk: True (asked as before).
    """
    if not ctx.path or ctx.path.startswith("<"):
        return True
    from torchport.check.port._module_files import Lookups, find_module  # (as _project's)

    importer, lookups = Path(ctx.path), Lookups()
    todo = list(ctx.tree.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            return True
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in stmt.targets
        ):
            return True
        if isinstance(stmt, (ast.Try, ast.If)):
            todo.extend(stmt.body + stmt.orelse + getattr(stmt, "finalbody", []))
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.name == "*" or (alias.asname or alias.name) == name:
                    dotted = f"{stmt.module}.{alias.name}" if stmt.module else alias.name
                    if find_module(importer, stmt.module, stmt.level, lookups) or (
                        alias.name != "*" and find_module(importer, dotted, stmt.level, lookups)
                    ):
                        return True
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if (alias.asname or alias.name.partition(".")[0]) == name and find_module(
                    importer, alias.name, 0, lookups
                ):
                    return True
    return False


def owners_of(
    ctx: Context, imported: ProjectImports, models: frozenset[str]
) -> tuple[tuple[str, Owned], ...]:
    """The owners of the module's classes, instances and re-exported names (module docstring).

    ``imported``: the module's own project view; ``models``: its ``nn.Module`` classes.
    """
    classes = _Classes(ctx, imported, models)
    owners: dict[str, Owned] = dict(imported.owners)  # re-exports (`from .batch import Batch`)
    owners.update((name, UNRESOLVED) for name in imported.unresolved)
    for name in classes.defs:
        owners[name] = classes.of_class(name)
    for stmt in ctx.tree.body:  # `config = Cfg()`: an instance of a class the project knows
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call)
        ):
            func = stmt.value.func
            if isinstance(func, ast.Name) and func.id in classes.defs:
                cls: Owned | None = classes.of_class(func.id)
            else:
                cls = imported.owner_of(func)
            if cls is not None and not cls[0] and cls[2] != "unresolved":
                owners[stmt.targets[0].id] = (True, cls[1], cls[2])
    bindings = ctx.scopes.module.bindings
    for name, value in module_aliases(ctx, bindings):  # `Net = _Net`, `Net = model.Net`: an
        found = owners.get(value.id) if isinstance(value, ast.Name) else None  # alias's class's
        if found is None and isinstance(value, ast.Name) and value.id in classes.defs:
            found = classes.of_class(value.id)
        if found is None and isinstance(value, ast.Attribute):
            found = imported.owner_of(value)
        if found is not None and not found[0] and found[2] != "unresolved":
            owners.setdefault(name, found)
    dynamic = classes.dynamic
    for name, given in dynamic.by_name.items():  # `Box = type("Box", (), {"cuda": f})`
        if name in owners:  # `config.to = f` of a module-level instance: merged
            was = owners[name]
            owners[name] = (was[0], was[1] | given, was[2])
        elif name not in classes.defs:
            owners[name] = (False, given, "unknown")
    if dynamic.anywhere:  # given at run time to what the module hands out: no name to import
        owners[_GIVEN] = (False, dynamic.anywhere, "object")
    return tuple(owners.items())


class _Classes:
    """The owners of one module's classes, through their bases (no cycles left behind)."""

    __slots__ = ("ctx", "defs", "done", "dynamic", "imported", "models")

    def __init__(self, ctx: Context, imported: ProjectImports, models: frozenset[str]) -> None:
        self.ctx, self.imported, self.models = ctx, imported, models
        self.defs = {c.name: c for c in ctx.tree.body if isinstance(c, ast.ClassDef)}
        self.done: dict[str, Owned] = {}
        self.dynamic = dynamic_methods(ctx.tree, ctx.source)

    def of_class(self, name: str) -> Owned:
        done = self.done
        if name in done:
            return done[name]
        done[name] = (False, frozenset(), "unknown")  # a cycle of bases: unknown
        methods = _own(self.defs[name], self.ctx)
        dynamic = self.dynamic  # `Box.cuda = f` after it; `cls.cuda = f` in a decorator
        methods |= dynamic.by_name.get(name, frozenset()) | dynamic.unowned
        lineages = {"torch"} if name in self.models else set()
        for base in self.defs[name].bases:
            _, inherited, lineage = self.base_owner(
                base.value if isinstance(base, ast.Subscript) else base
            )
            methods |= inherited
            lineages.add(lineage)
        if "unknown" in lineages or "unresolved" in lineages:
            lineage = "unknown"
        else:
            lineage = "torch" if "torch" in lineages else "object"
        done[name] = (False, frozenset(methods), lineage)
        return done[name]

    def base_owner(self, base: ast.expr) -> Owned:
        if isinstance(base, ast.Name) and base.id in self.defs:
            return self.of_class(base.id)
        found = self.imported.owner_of(base)
        if found is not None:
            return found
        name = self.ctx.qualname(base, at_module=True)  # (a module-level class's base)
        if name is None:
            plain = isinstance(base, ast.Name) and base.id == "object"
            return (False, frozenset(), "object" if plain else "unknown")
        root = name.partition(".")[0]
        if root == "torch":
            return (False, frozenset(), "torch")
        plain = name in _PLAIN_BASES or root in _LOOKALIKES  # another library's: not torch's
        return (False, frozenset(), "object" if plain else "unknown")


def rebound_by_own_call(bindings: Sequence[Binding], name: str) -> bool:
    """An imported model class whose name is rebound only to its own instance.

    ``from model import GRUmodel`` then ``GRUmodel = GRUmodel(...)``: the name holds
    the class up to that line and the model after it, as a class defined in the file
    and rebound the same way does. Anything else binding the name (another call, a
    second import) leaves it unknown.
    """
    if not bindings or bindings[0].kind is not BindingKind.IMPORT:
        return False
    rest = bindings[1:]
    return bool(rest) and all(
        b.kind is BindingKind.ASSIGN and own_build(b.value, name) is not None for b in rest
    )


def module_aliases(ctx: Context, bindings: dict[str, list[Binding]]) -> list[tuple[str, ast.expr]]:
    """Each module-level ``name = other`` or ``name = module.other``, its only binding."""
    out: list[tuple[str, ast.expr]] = []
    for stmt in ctx.tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, (ast.Name, ast.Attribute))
            and len(bindings.get(stmt.targets[0].id, [])) == 1
        ):
            out.append((stmt.targets[0].id, stmt.value))
    return out
