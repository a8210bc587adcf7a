"""Whether a call makes a plain Python object: an instance of a class that holds no tensors.

TP301 asks it of the values a ``torch.load`` stands in for (``encoder =
Vocab(train_set)`` on one path, ``encoder = torch.load(path)`` on the other):
what is loaded is then such an object, pickled, and ``map_location`` has
nothing to move.

A class is plain when its bases lead only to ``object`` (through other plain
classes of the same module), it names no metaclass, and no assignment in its
body or its methods puts a value that reads a name imported from torch into an
attribute or a class variable (``self.table = torch.zeros(n)``,
``weights = nn.Parameter(...)``). The class is found in the file, or in the
project module a ``from ... import`` names (found as Python finds it when the
script runs from its folder; syntax only, nothing is imported). Anything else
(a function's result, a class of an installed package, a class not found) is
not known to be plain. A careful guess from syntax: a plain class that stores a
tensor it is handed (``self.vectors = vectors``) is not seen.
"""

from __future__ import annotations

import ast
import functools
import weakref
from pathlib import Path

from torchport.check._context import Context
from torchport.check.semantic import BindingKind, Scope

__all__ = ["plain_instance", "stands_for_plain_object"]

_DEPTH = 4
# A name bound or read more often than this in its scope is not followed: the work
# per load stays bounded (a scope rebinding one name per copy was quadratic).
_FOLLOWED = 8


def plain_instance(value: ast.expr, ctx: Context) -> bool:
    """Whether ``value`` is ``C(...)`` for a plain class ``C`` of the file or the project."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return False
    binding = ctx.scopes.binding_at(value.func)
    if binding is None:
        return False
    if binding.kind is BindingKind.CLASS and isinstance(binding.node, ast.ClassDef):
        return _module_of(ctx).plain(binding.node.name)
    if binding.kind is BindingKind.IMPORT and isinstance(binding.node, ast.ImportFrom):
        original = _imported_as(binding.node, value.func.id)
        module = _project_module(ctx.path, binding.node.module, binding.node.level)
        return original is not None and module is not None and module.plain(original)
    return False


def stands_for_plain_object(load: ast.Call, ctx: Context) -> bool:
    """Whether ``load`` takes the place of a plain object the program otherwise builds.

    The name it is bound to, or a name it is copied into (``use = loaded``), is
    bound elsewhere in the scope to ``C(...)`` of a plain class (directly or
    through one more name: ``use = built``, ``built = C(...)``).
    """
    scopes = ctx.scopes
    value: ast.expr = load
    holder = scopes.parent(load)
    if isinstance(holder, ast.IfExp):  # `x = C() if fresh else torch.load(path)`
        if plain_instance(holder.body if holder.orelse is load else holder.orelse, ctx):
            return True
        value, holder = holder, scopes.parent(holder)
    if not (isinstance(holder, ast.Assign) and holder.value is value and len(holder.targets) == 1):
        return False
    target = holder.targets[0]
    if not isinstance(target, ast.Name):
        return False
    scope = scopes.resolve(target.id, target)
    reads = scopes.reads_of(target.id, scope)
    names = {target.id}
    for read in reads if len(reads) <= 4 * _FOLLOWED else ():  # copies: where few reads
        copy = scopes.parent(read)
        if isinstance(copy, ast.Assign) and copy.value is read and len(copy.targets) == 1:
            names.update(t.id for t in copy.targets if isinstance(t, ast.Name))
    for name in names:
        for bound in _values(scope, name):
            if bound is value:
                continue
            values = _values(scope, bound.id) if isinstance(bound, ast.Name) else [bound]
            if any(plain_instance(v, ctx) for v in values):
                return True
    return False


def _values(scope: Scope, name: str) -> list[ast.expr]:
    """The values ``name`` is bound to in ``scope`` (none when it is bound too often)."""
    bindings = scope.bindings.get(name, [])
    if len(bindings) > _FOLLOWED:
        return []
    return [b.value for b in bindings if b.value is not None]


def _imported_as(node: ast.ImportFrom, local: str) -> str | None:
    """The name ``from m import name as local`` imports."""
    for alias in node.names:
        if (alias.asname or alias.name) == local:
            return alias.name
    return None


class _Module:
    """One module's top-level classes and the names it binds to torch."""

    def __init__(self, tree: ast.Module) -> None:
        self._plain: dict[str, bool] = {}
        self.classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
        self.torch_names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.partition(".")[0] == "torch":
                        self.torch_names.add(alias.asname or "torch")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
                self.torch_names.update(a.asname or a.name for a in node.names)

    def plain(self, name: str, depth: int = 0) -> bool:
        known = self._plain.get(name)
        if known is None:
            known = self._plain[name] = self._is_plain(name, depth)
        return known

    def _is_plain(self, name: str, depth: int) -> bool:
        cls = self.classes.get(name)
        if cls is None or depth > _DEPTH or cls.keywords:
            return False
        for base in cls.bases:
            if not isinstance(base, ast.Name):
                return False  # `nn.Module`, `abc.ABC`, `Generic[T]`: not known to be plain
            if base.id != "object" and not self.plain(base.id, depth + 1):
                return False
        own = {id(s) for s in cls.body}
        return not any(self._stores_torch(node, id(node) in own) for node in ast.walk(cls))

    def _stores_torch(self, node: ast.AST, class_level: bool) -> bool:
        """An assignment of a value that reads a torch name to an attribute or class variable.

        A method's local (``t = torch.cat(rows)``, returned) is not stored in the object.
        """
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            return False
        if not class_level and not any(_into_an_object(t) for t in targets):
            return False
        return any(isinstance(n, ast.Name) and n.id in self.torch_names for n in ast.walk(value))


def _into_an_object(target: ast.expr) -> bool:
    """``self.x = ...``, ``self.d[k] = ...``, ``a, self.b = ...``: stored in an object."""
    return any(isinstance(n, ast.Attribute) for n in ast.walk(target))


_MODULES: weakref.WeakKeyDictionary[Context, _Module] = weakref.WeakKeyDictionary()


def _module_of(ctx: Context) -> _Module:
    """The checked file's own classes, read once per file."""
    found = _MODULES.get(ctx)
    if found is None:
        found = _MODULES[ctx] = _Module(ctx.tree)
    return found


def _project_module(path: str, module: str | None, level: int) -> _Module | None:
    """The project module ``from <level dots><module> import ...`` names from ``path``."""
    from torchport.check.port._module_files import find_module  # only when a load asks

    try:
        found = find_module(Path(path).resolve(), module, level)
        if found is None:
            return None
        stat = found.stat()
    except (OSError, ValueError):
        return None
    return _parsed(str(found), stat.st_ctime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _parsed(path: str, mtime_ns: int, size: int) -> _Module | None:
    """The module's classes, read once per file version (path, mtime, size)."""
    del mtime_ns, size  # the cache key
    try:
        return _Module(ast.parse(Path(path).read_bytes()))
    except (OSError, SyntaxError, ValueError):
        return None
