"""Test code whose accelerator gate is elsewhere: on its caller, its module, its base class.

``_test_code.accelerator_is_the_subject`` reads the gate on the function or class holding
the line; this module finds the gates one step away (benchmarks/RESULTS.md, sample P), once
per file and accelerator (``Context.memo``):

* a module-level ``pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), ...)``
  (or a list of marks holding one): every test of the module runs only where CUDA is;
* a mark bound to a name at module level and used as a decorator (``requires_sp24 =
  pytest.mark.skipif(compute_capability < (8, 0))`` then ``@requires_sp24``), in the file or
  imported from the project's own modules (xformers' ``from .utils import rocm_only``);
* a unittest class whose ``setUp``/``setUpClass`` skips, returns or raises without it
  (``if not torch.cuda.is_available(): raise unittest.SkipTest(...)``), or whose base does
  (in the file, or a class the file imports from the project's own modules:
  ``from .test_fsdp import DistributedTest``);
* a test that hands its work to a spawner running it once per CUDA device count (a
  function, in the file or imported from the project, that loops over a parameter or
  value derived from ``torch.cuda.device_count()``: fairscale's
  ``spawn_for_all_world_sizes``, whose ``world_sizes`` default is ``get_world_sizes()``);
* a helper, worker, model class, closure or module-level value that only gated code names
  (every reference to it in the module lies inside a gated function or class, its
  decorators included, and at least one does): a worker spawned by a ``@skip_if_single_gpu``
  test, the model class of a ``@pytest.mark.gpu`` test, the workers a gated test is
  parametrized over (``SETTINGS = [{"test_function": run_test_slowmo, ...}]``). A helper
  named by one ungated test too is not this: it runs where that test runs.

A gate names CUDA by its words (``_test_words``), its GPU architecture included (sample Q:
``COMPUTE_CAPABILITY != 9``, ``not IS_SM100``, ``torch.version.hip``, ``@sm80_or_better_only``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from torchport.check._context import Context
from torchport.check.rules._test_words import _marks, _mentions, _names, _skips

__all__ = ["gated_definitions"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SETUPS = frozenset({"setUp", "setUpClass", "setup_method", "setup_class", "setup"})
_COUNT = ("device_count",)


def gated_definitions(ctx: Context, accelerator: str, words: tuple[str, ...]) -> dict[int, int]:
    """The ``id`` of every function and class of the file gated on the accelerator, with
    the line after which it is (0: all of it; a body's gate: its last line); with a
    module-level ``pytestmark`` naming it, the module's own ``id`` (all of it is)."""
    key = f"cuda_gates.{accelerator}"
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = _gated(ctx, words)
    return found  # type: ignore[return-value]


def _gated(ctx: Context, words: tuple[str, ...]) -> dict[int, int]:
    tree = ctx.tree
    if any(_pytestmark(stmt, words) for stmt in tree.body):
        return {id(tree): 0}
    defs: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = []
    named: list[tuple[str, int]] = []  # what a name may refer to: a definition, module data
    refs: list[tuple[str, tuple[int, ...]]] = []  # (name, the definitions around it)
    _collect(tree, (), defs, named, refs)
    resolver = _Resolver(ctx)
    gated: dict[int, int] = {}
    for d in defs:
        if _names(d.name, words) or any(
            _marks(dec, words) or _named_mark(dec, tree, resolver, words)
            for dec in d.decorator_list
        ):
            gated[id(d)] = 0
        elif isinstance(d, ast.ClassDef):
            if _class_gated(d, tree, resolver, words, 0):
                gated[id(d)] = 0
        elif _spawns_per_device(d, tree, resolver):
            gated[id(d)] = 0
        elif (after := _gate_line(d.body, words)) is not None:
            gated[id(d)] = after  # the lines after the gate: what it names, it runs gated
    by_name: dict[str, list[int]] = {}
    for name, ident in named:
        by_name.setdefault(name, []).append(ident)
    changed = True
    while changed:
        changed = False
        for name, ids in by_name.items():
            if all(i in gated for i in ids):
                continue
            around = [chain for ref, chain in refs if ref == name and not set(ids) & set(chain)]
            if around and all(gated.keys() & set(chain) for chain in around):
                gated.update(dict.fromkeys(ids, 0))
                changed = True
    return gated


def _collect(
    node: ast.AST,
    chain: tuple[int, ...],
    defs: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef],
    named: list[tuple[str, int]],
    refs: list[tuple[str, tuple[int, ...]]],
) -> None:
    """Definitions, module-level data (``CASES = [...]``) and the names read, each with the
    definitions around it; a decorator's names are its definition's (``@parametrize("f",
    [worker])`` on a gated test: only that test uses ``worker``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _DEFS):
            defs.append(child)
            named.append((child.name, id(child)))
            _collect(child, (*chain, id(child)), defs, named, refs)
            continue
        if isinstance(node, ast.Module) and isinstance(child, ast.Assign):
            targets = [t.id for t in child.targets if isinstance(t, ast.Name)]
            named.extend((t, id(child)) for t in targets)
            _collect(child, (id(child),) if targets else chain, defs, named, refs)
            continue
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
            refs.append((child.id, chain))
        elif isinstance(child, ast.Attribute):  # `self._test_transformer`, `cls.helper`
            refs.append((child.attr, chain))
        _collect(child, chain, defs, named, refs)


def _pytestmark(stmt: ast.stmt, words: tuple[str, ...]) -> bool:
    """``pytestmark = pytest.mark.skipif(<names it>)``, or a list or tuple holding one."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return False
    target = stmt.targets[0]
    if not (isinstance(target, ast.Name) and target.id == "pytestmark"):
        return False
    value = stmt.value
    marks = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
    return any(_marks(mark, words) for mark in marks)


def _named_mark(
    decorator: ast.expr, tree: ast.Module, resolver: _Resolver, words: tuple[str, ...]
) -> bool:
    """``@requires_sp24`` where ``requires_sp24 = pytest.mark.skipif(<names it>)`` at module
    level, in the file or imported from the project's own modules (xformers' ``tests/utils``)."""
    if not isinstance(decorator, ast.Name):
        return False
    value = resolver.value(decorator.id, tree)
    return value is not None and _marks(value, words)


def _leaves(body: list[ast.stmt]) -> bool:
    """``return``, ``raise``, a skip call, or ``self.skipTest(...)`` last in the block."""
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if not isinstance(last, ast.Expr):
        return False
    call = last.value
    skip_test = isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
    return _skips(call) or (skip_test and call.func.attr == "skipTest")  # type: ignore[attr-defined]


def _gate_line(body: list[ast.stmt], words: tuple[str, ...]) -> int | None:
    """The last line of the block's first top-level ``if <names it>: <leave>`` or
    ``assert <names it>`` (None: no such gate)."""
    for s in body:
        if (isinstance(s, ast.If) and _mentions(s.test, words) and _leaves(s.body)) or (
            isinstance(s, ast.Assert) and _mentions(s.test, words)
        ):
            return s.end_lineno or s.lineno
    return None


def _class_gated(
    cls: ast.ClassDef, tree: ast.Module, resolver: _Resolver, words: tuple[str, ...], depth: int
) -> bool:
    """Its set-up leaves without the accelerator, or a base's does (the file's, or imported)."""
    for stmt in cls.body:
        setup = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in _SETUPS
        if setup and _gate_line(stmt.body, words) is not None:  # type: ignore[attr-defined]
            return True
    if depth > 3:
        return False
    for base in cls.bases:
        if not isinstance(base, ast.Name):
            continue
        found = resolver.definition(base.id, tree)
        if found is None or not isinstance(found[0], ast.ClassDef):
            continue
        if _names(found[0].name, words) or _class_gated(
            found[0], found[1], resolver, words, depth + 1
        ):
            return True
    return False


def _spawns_per_device(
    func: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module, resolver: _Resolver
) -> bool:
    """A call in ``func`` of a spawner that runs its argument once per device count."""
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and resolver.spawner(node.func.id, tree)
        ):
            return True
    return False


def _per_device(func: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module) -> bool:
    """A ``for`` over a value from ``torch.cuda.device_count()`` (a parameter's default,
    directly or through a function of the same module that returns one)."""
    args = func.args
    named = [a.arg for a in args.args][len(args.args) - len(args.defaults) :]
    defaults = dict(zip(named, args.defaults, strict=True))
    pairs = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    defaults |= {a.arg: d for a, d in pairs if d is not None}
    local = {d.name: d for d in tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(func):
        if not isinstance(node, (ast.For, ast.AsyncFor)):
            continue
        source = node.iter
        if isinstance(source, ast.Name) and source.id in defaults:
            source = defaults[source.id]
        if _mentions(source, _COUNT):
            return True
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Name):
            helper = local.get(source.func.id)
            if helper is not None and _mentions(helper, _COUNT):
                return True
    return False


class _Resolver:
    """A name's definition: the file's own top-level one, or what a ``from <project
    module> import name`` binds (read once per file, lazily: most files never ask)."""

    def __init__(self, ctx: Context) -> None:
        self.path = ctx.path
        self.trees: dict[str, ast.Module | None] = {"": ctx.tree}
        # (name, the tree's id) -> whether it names a per-device spawner: asked once per
        # name, not once per call (a file's every call site asks; Lightning's tests)
        self._spawners: dict[tuple[str, int], bool] = {}

    def spawner(self, name: str, tree: ast.Module) -> bool:
        """Whether ``name`` in ``tree`` is a function that runs its argument once per
        device count (:func:`_per_device`)."""
        key = (name, id(tree))
        known = self._spawners.get(key)
        if known is None:
            found = self.definition(name, tree)
            known = found is not None and not isinstance(found[0], ast.ClassDef)
            known = known and _per_device(found[0], found[1])  # type: ignore[index,arg-type]
            self._spawners[key] = known
        return known

    def definition(
        self, name: str, tree: ast.Module
    ) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, ast.Module] | None:
        for stmt in tree.body:
            if isinstance(stmt, _DEFS) and stmt.name == name:
                return stmt, tree
        if tree is not self._own():
            return None  # one step into the project only
        for stmt in tree.body:
            if not isinstance(stmt, ast.ImportFrom):
                continue
            for alias in stmt.names:
                if (alias.asname or alias.name) != name:
                    continue
                other = self._module(stmt.module, stmt.level)
                if other is None:
                    return None
                for d in other.body:
                    if isinstance(d, _DEFS) and d.name == alias.name:
                        return d, other
        return None

    def value(self, name: str, tree: ast.Module) -> ast.expr | None:
        """What a module-level ``name = <value>`` binds, in the file or (one step) in the
        project module a ``from ... import name`` reads it from; None: not such a name."""
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in stmt.targets
            ):
                return stmt.value
        for stmt in tree.body:
            if not isinstance(stmt, ast.ImportFrom):
                continue
            for alias in stmt.names:
                if (alias.asname or alias.name) == name:
                    other = self._module(stmt.module, stmt.level)
                    return None if other is None else self.value(alias.name, other)
        return None

    def _own(self) -> ast.Module | None:
        return self.trees.get("")

    def _module(self, module: str | None, level: int) -> ast.Module | None:
        from torchport.check.port._module_files import find_module  # first use only

        if not self.path or self.path.startswith("<") or not Path(self.path).is_file():
            return None
        found = find_module(Path(self.path), module, level)
        if found is None:
            return None
        key = str(found)
        if key not in self.trees:
            try:
                self.trees[key] = ast.parse(found.read_text(encoding="utf-8", errors="replace"))
            except (OSError, SyntaxError, ValueError):
                self.trees[key] = None
        return self.trees[key]
