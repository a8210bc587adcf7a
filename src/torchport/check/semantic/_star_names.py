"""What a star import binds: the names ``from m import *`` gives, and what each one means.

``from helpers import *`` binds, in the importing module, each public name of
``helpers`` (its ``__all__`` when it has one, else every top-level name not starting
with ``_``), so ``np`` there is ``helpers``'s ``import numpy as np``, and ``torch``,
``nn``, ``F`` of a compatibility module are torch's. :func:`star_exports` reads one
module's syntax and says which names its star import binds and the dotted target of
each (the import it comes from, ``module.name`` for what the module defines itself,
None where that is not known), given the answers for the module's own star imports
(the caller finds their files: ``port/_star_imports.py``; this part never touches the
file system). A star import of torch or one of its modules binds torch's names as
torch's: not listed here (nothing imports torch), they are a *wildcard*: a name that
nothing else binds, read where only that import can have bound it, is
``torch.<name>``. Builtins stay builtins (torch's ``__all__`` names a few of them:
such a name is left unknown, never read as torch's), and torch's submodules, which
``__all__`` leaves out (``from torch import *`` does not bind ``nn`` or ``cuda``),
are no wildcard's. Never a guess: an import whose module cannot be read, a computed
``__all__`` or a cycle gives None, and the importing module's names stay unknown.
"""

from __future__ import annotations

import ast
import builtins

from torchport.check.semantic._binding import import_bindings

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "BUILTINS",
    "Exports",
    "is_star",
    "project_target",
    "star_exports",
    "wildcard_of",
    "wildcard_target",
]

# (the names a star import binds -> their dotted targets, the wildcards it carries)
Exports = tuple[dict[str, str | None], tuple[str, ...]]
BUILTINS = frozenset(dir(builtins))
# torch's public submodules that its `__all__` leaves out (torch 2.13, its lazy ones too):
# `from torch import *` binds none of them (test_star_imports.py holds it to torch's).
TORCH_UNSTARRED = frozenset(
    {"accelerator", "amp", "ao", "autograd", "backends", "builtins", "classes", "compiler",
     "cpu", "ctypes", "cuda", "distributed", "distributions", "fft", "func", "functional",
     "functools", "futures", "fx", "glob", "hub", "importlib", "inspect", "jit", "library",
     "linalg", "masked", "math", "monitor", "mps", "mtia", "multiprocessing", "nested", "nn",
     "ops", "optim", "os", "overrides", "package", "platform", "profiler", "quantization",
     "quasirandom", "random", "return_types", "serialization", "signal", "sparse", "special",
     "storage", "sys", "testing", "textwrap", "threading", "torch", "torch_version", "types",
     "utils", "version", "warnings", "windows", "xpu",
     "onnx", "_dynamo", "_inductor", "_export"}  # (the last: imported on first use)
)  # fmt: skip
_BLOCKS = ("body", "handlers", "orelse", "finalbody")  # in the order they run
_NESTED = (ast.If, ast.Try, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)


def is_star(stmt: ast.AST) -> bool:
    """Whether ``stmt`` is ``from m import *``."""
    return isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names)


def wildcard_of(stmt: ast.ImportFrom) -> str | None:
    """The wildcard a star import of torch carries (``"torch"``, ``"torch.nn"``), else None."""
    module = stmt.module or ""
    if stmt.level or not (module == "torch" or module.startswith("torch.")):
        return None
    return module


def project_target(dotted: str, through: dict[str, dict[str, str]]) -> str:
    """``dotted`` with a project module's name bound to torch's replaced by its target.

    ``through``: project module (``"pkg.compat"``) -> its names bound to torch's objects
    (``{"L": "torch.load"}``); ``pkg.compat.L`` (``import pkg.compat as c``, ``c.L``) is
    ``torch.load``, ``pkg.compat.T.zeros`` ``torch.zeros``. Anything else is returned as is.
    """
    for module, names in through.items():
        if dotted.startswith(module) and dotted[len(module) : len(module) + 1] == ".":
            head, dot, rest = dotted[len(module) + 1 :].partition(".")
            target = names.get(head)
            if target is not None:
                return target + dot + rest
    return dotted


def wildcard_target(prefix: str, name: str) -> str | None:
    """What ``name`` means where a wildcard ``prefix`` alone may bind it (None: unknown)."""
    if name in BUILTINS or name.startswith("_"):
        return None
    if prefix == "torch" and name in TORCH_UNSTARRED:
        return None
    return f"{prefix}.{name}"


def star_exports(
    tree: ast.Module,
    module: str | None,
    inner: Callable[[ast.ImportFrom], Exports | None],
    named: Callable[[ast.ImportFrom], dict[str, str] | None] | None = None,
    *,
    every: bool = False,
) -> Exports | None:
    """What ``from <module> import *`` binds, the module's syntax being ``tree``.

    ``module``: its absolute dotted name (None: reached by a relative import; what it
    defines itself then has no known dotted target). ``inner``: the answer for each of
    its own star imports. None: not known (a computed ``__all__``, or an unknown star
    import and no ``__all__`` to say which names it gave). ``named``: the targets a
    ``from m import a`` of the module binds where they are known to be torch's though the
    statement names another module (a project's compat module re-exporting them).
    ``every``: what ``from <module> import name`` binds instead, for every name the module
    binds, public or not, ``__all__`` aside (a name an unknown star import may have rebound:
    None; one it may have bound: absent).
    """
    bound: dict[str, str | None] = {}
    wildcards: list[str] = []
    public: list[str] | None = None
    known = True
    # each name's targets over all its bindings, and the names a nested block binds (which
    # may or may not run: such a name's target is known only where all its bindings agree)
    targets: dict[str, set[str | None]] = {}
    maybe: set[str] = set()

    def bind(name: str, target: str | None, nested: bool) -> None:
        bound[name] = target
        targets.setdefault(name, set()).add(target)
        if nested:
            maybe.add(name)

    todo: list[tuple[ast.stmt, bool, bool]] = [(s, False, False) for s in reversed(tree.body)]
    sure: set[str] = set()  # what the top-level statements surely bind, all together
    while todo:
        stmt, handled, nested = todo.pop()  # (handled: in an `except` block)
        if not nested:  # what this statement surely binds: earlier bindings no longer count
            surely = _sure_names([stmt])
            sure |= surely
            for name in surely:
                targets.pop(name, None)
                maybe.discard(name)
        if is_star(stmt):
            assert isinstance(stmt, ast.ImportFrom)
            got = inner(stmt)
            if got is None:
                known = False  # and what it may have rebound is not known either
                bound = dict.fromkeys(bound)
            else:
                for name, target in got[0].items():
                    if not nested:  # it replaces earlier bindings (one it may not make: no target)
                        targets.pop(name, None)
                        maybe.discard(name)
                    bind(name, target, nested)
                wildcards.extend(w for w in got[1] if w not in wildcards)
            continue
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            given = named(stmt) if named is not None and isinstance(stmt, ast.ImportFrom) else None
            for name, target in import_bindings(stmt):
                bind(name, given.get(name, target) if given else target, nested)
            continue
        if _names_all(stmt):
            public = _all_of(stmt, public)
            if public is None:
                return None  # computed: which names it lists is not known
            continue
        for name in _bound_by(stmt):
            if handled and _placeholder(stmt) and bound.get(name) is not None:
                continue  # `except ImportError: np = None`: the import's, as the resolver reads it
            bind(name, f"{module}.{name}" if module else None, nested)
        for name in _deleted_by(stmt):
            bound.pop(name, None)
        if isinstance(stmt, _NESTED):
            for field in reversed(_BLOCKS):
                for item in reversed(getattr(stmt, field, None) or []):
                    if isinstance(item, ast.ExceptHandler):
                        todo.extend((inner, True, True) for inner in reversed(item.body))
                    else:
                        todo.append((item, handled, True))
    for name in maybe:
        if name in bound and (len(targets[name]) > 1 or name not in sure):
            bound[name] = None  # bound on some paths only, or one way on some, another on others
    if every:
        return bound, ()
    if public is not None:
        lone = wildcards[0] if len(wildcards) == 1 and known else None
        return {
            n: bound[n] if n in bound else (wildcard_target(lone, n) if lone else None)
            for n in public
        }, ()
    if not known:
        return None
    return {n: t for n, t in bound.items() if not n.startswith("_")}, tuple(wildcards)


def _sure_names(block: list[ast.stmt]) -> set[str]:
    """Names every path through ``block`` that goes on binds (star imports aside)."""
    found: set[str] = set()
    for stmt in block:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and not is_star(stmt):
            found.update(name for name, _ in import_bindings(stmt))
        elif isinstance(stmt, ast.If):
            found |= _sure_names(stmt.body) & _sure_names(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            normal = _sure_names(stmt.body) | _sure_names(stmt.orelse)
            for handler in stmt.handlers:
                normal &= _sure_names(handler.body)
            found |= normal | _sure_names(stmt.finalbody)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            found |= set(_bound_by(stmt)) | _sure_names(stmt.body)
        elif not isinstance(stmt, _NESTED):
            found.update(_bound_by(stmt))
    return found


def _names_all(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` sets or grows ``__all__``."""
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return isinstance(stmt.target, ast.Name) and stmt.target.id == "__all__"
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "__all__"
        )
    return False


def _strings(node: ast.expr | None) -> list[str] | None:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    out = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return out if len(out) == len(node.elts) else None


def _all_of(stmt: ast.stmt, public: list[str] | None) -> list[str] | None:
    """``__all__`` after ``stmt`` (None: computed, not known)."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) != 1:
            return None
        return _strings(stmt.value)
    if public is None:
        return None  # grown before it was set: not a list this reads
    if isinstance(stmt, ast.AugAssign):
        more = _strings(stmt.value) if isinstance(stmt.op, ast.Add) else None
        return None if more is None else public + more
    assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
    call = stmt.value
    method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if method == "append" and len(call.args) == 1 and not call.keywords:
        arg = call.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return [*public, arg.value]
    if method == "extend" and len(call.args) == 1 and not call.keywords:
        more = _strings(call.args[0])
        return None if more is None else public + more
    return None


def _targets(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for e in node.elts for n in _targets(e)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


def _bound_by(stmt: ast.stmt) -> list[str]:
    """The names ``stmt`` itself binds at its own level (its nested blocks aside)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [n for t in stmt.targets for n in _targets(t)]
    if isinstance(stmt, ast.AnnAssign):
        return _targets(stmt.target) if stmt.value is not None else []
    if isinstance(stmt, ast.AugAssign):
        return _targets(stmt.target)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return _targets(stmt.target)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [n for i in stmt.items if i.optional_vars for n in _targets(i.optional_vars)]
    named = [n.target.id for n in ast.walk(stmt) if isinstance(n, ast.NamedExpr)]
    return named if not isinstance(stmt, _NESTED) else []


def _deleted_by(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Delete):
        return [n for t in stmt.targets for n in _targets(t)]
    return []


def _placeholder(stmt: ast.stmt) -> bool:
    """``x = None``: the fallback of an optional import."""
    return (
        isinstance(stmt, ast.Assign)
        and isinstance(stmt.value, ast.Constant)
        and stmt.value.value is None
    )
