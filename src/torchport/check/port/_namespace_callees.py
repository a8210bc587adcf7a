"""Settings another module of the project stores on the namespace it is handed.

timm's ``train.py`` hands its namespace to ``utils.init_distributed_device(args)``, which
stores ``args.world_size = 1`` there; the script then reads ``args.world_size``. A call of a
function of another project module (``f(args)`` after ``from mod import f``, ``mod.f(args)``
after ``import mod``, at module level or inside a function) is read here, syntax only: for
each parameter handed the namespace, the attributes the function stores and whether every
store is a Python number, string or bool by what its syntax shows
(:func:`~torchport.check.port._namespace_stores.plain_value`, in that function's own names:
a read of an attribute of the parameter it stores plainly itself, a local bound only to such
values, a builtin the module does not rebind). Stores on any object are counted by
attribute name, as the file's own are.

Nothing is told (the call hands the namespace out, as before) where the parameter escapes:
used other than as ``p.attr`` (handed to a call, a callee of that module's included, bound
to another name, put in a container, indexed; ``return p`` alone is allowed), rebound, an
attribute deleted, a method of it called or a dunder read (``p.update(...)``,
``p.__dict__``), given to ``setattr``/``vars``; where the call unpacks ``*args``/``**kwargs``;
where the module cannot be found, read or parsed, or binds the name other than by one
module-level ``def`` without decorators.
"""

from __future__ import annotations

import ast
from pathlib import Path

from torchport.check._context import Context
from torchport.check._listing import note
from torchport.check._syntax import parsed_module
from torchport.check.port._module_files import Lookups
from torchport.check.port._namespace_stores import keep_plain, plain_value
from torchport.check.port._script_path import find_on_script_path
from torchport.check.semantic import BindingKind

__all__ = ["handed_stores"]

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def handed_stores(ctx: Context, call: ast.Call, given: list[int | str]) -> dict[str, bool] | None:
    """What the other module's function ``call`` calls stores (attribute: every store
    plain) when handed the namespace at each of ``given`` (a position, or a keyword's
    name); None: not told (see the module docstring)."""
    found = _callee(ctx, call.func)
    if found is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    func, module_names = found
    if any(k.arg is None for k in call.keywords):
        return None
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    named = set(positional[len(a.posonlyargs) :]) | {p.arg for p in a.kwonlyargs}
    params: set[str] = set()
    for place in given:
        if isinstance(place, int):
            if place >= len(positional):
                return None  # into `*args`
            params.add(positional[place])
        elif place in named:
            params.add(place)
        else:
            return None  # into `**kwargs`
    if any(_escapes(func, p) for p in params):
        return None
    return _stores(func, module_names)


def _callee(ctx: Context, func: ast.expr) -> tuple[_Function, frozenset[str]] | None:
    """The module-level function of another project module that ``func`` names, and the
    names that module binds anywhere."""
    if not ctx.path or ctx.path.startswith("<") or not Path(ctx.path).is_file():
        return None
    name, holder = (func.id, func) if isinstance(func, ast.Name) else ("", None)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        name, holder = func.attr, func.value
    if holder is None:
        return None
    binding = ctx.scopes.binding_at(holder)
    if binding is None or binding.kind is not BindingKind.IMPORT:
        return None
    node = binding.node
    find = Lookups()
    if isinstance(node, ast.ImportFrom) and holder is func:
        alias = next((a for a in node.names if (a.asname or a.name) == holder.id), None)
        if alias is None or alias.name == "*":
            return None
        name = alias.name
        path = find_on_script_path(ctx, Path(ctx.path), find, node.module, node.level)
    elif isinstance(node, ast.Import) and holder is not func and binding.qualified:
        path = find_on_script_path(ctx, Path(ctx.path), find, binding.qualified, 0)
    else:
        return None
    if path is None or path.name == "__init__.py":
        return None  # (a package's names may be its submodules': not read here)
    return _function_of(path, name)


def _function_of(path: Path, name: str) -> tuple[_Function, frozenset[str]] | None:
    note(path)  # what the check cache's answer rests on (check/_listing.py)
    try:
        source = path.read_text(encoding="utf-8", errors="surrogateescape")
        tree = parsed_module(str(path), source)
    except (OSError, SyntaxError, ValueError):
        return None
    found: list[ast.AST] = []
    names: set[str] = set()
    for node in ast.walk(tree):
        bound = None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = node.name
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound = node.id
        elif isinstance(node, ast.alias):
            bound = (node.asname or node.name).partition(".")[0]
        if bound is not None:
            names.add(bound)
            if bound == name:
                found.append(node)
    top = found[0] if len(found) == 1 else None
    if not isinstance(top, ast.FunctionDef) or top not in tree.body or top.decorator_list:
        return None  # (a decorator may call it otherwise; a coroutine's body runs later)
    return top, frozenset(names)


def _escapes(func: _Function, param: str) -> bool:
    """Whether ``param`` of ``func`` may reach anything but reads and stores of its
    attributes (``return param`` aside)."""
    parents = {id(c): n for n in ast.walk(func) for c in ast.iter_child_nodes(n)}
    for node in ast.walk(func):
        if isinstance(node, ast.arg) and node.arg == param and parents.get(id(node)) is not None:
            holder = parents[id(node)]
            if parents.get(id(holder)) is not func:
                return True  # a nested function's or lambda's parameter of that name
        if not (isinstance(node, ast.Name) and node.id == param):
            continue
        if not isinstance(node.ctx, ast.Load):
            return True  # rebound, deleted
        above = parents.get(id(node))
        if isinstance(above, ast.Return):
            continue
        if not isinstance(above, ast.Attribute) or above.attr.startswith("__"):
            return True  # (`p.__dict__`, `p.__setattr__`)
        outer = parents.get(id(above))
        called = isinstance(outer, ast.Call) and outer.func is above
        if called or isinstance(above.ctx, ast.Del):
            return True  # `p.update(ws=t)`: a method of its own may store anything
    return False


def _set_name(node: ast.AST) -> str | None:
    """The name ``setattr(x, "name", v)`` writes out (None: another node or no name)."""
    if not isinstance(node, ast.Call) or len(node.args) != 3 or node.keywords:
        return None
    func, name = node.func, node.args[1]
    if not (isinstance(func, ast.Name) and func.id == "setattr"):
        return None
    return name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None


def _stores(func: _Function, module_names: frozenset[str]) -> dict[str, bool]:
    """Each attribute ``func`` stores on any object, and whether every store is plain
    (``module_names``: what its module binds anywhere, no builtin then)."""
    values: dict[str, list[ast.expr | None]] = {}
    locals_: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            whole = node.value if len(targets) == 1 else None
            for target in targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Attribute) and not isinstance(t.ctx, ast.Load):
                        values.setdefault(t.attr, []).append(whole if t is target else None)
                    elif isinstance(t, ast.Name) and not isinstance(t.ctx, ast.Load):
                        kept = whole if t is target and isinstance(node, ast.Assign) else None
                        locals_.setdefault(t.id, []).append(kept)
    for node in ast.walk(func):  # bindings the assignments above do not pair with a value
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            for t in ast.walk(node.target):
                if isinstance(t, ast.Attribute):
                    values.setdefault(t.attr, []).append(None)
                elif isinstance(t, ast.Name):
                    locals_.setdefault(t.id, []).append(None)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            for t in ast.walk(node.optional_vars):
                if isinstance(t, ast.Attribute):
                    values.setdefault(t.attr, []).append(None)
                elif isinstance(t, ast.Name):
                    locals_.setdefault(t.id, []).append(None)
        elif isinstance(node, ast.NamedExpr):
            locals_.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                locals_.setdefault((alias.asname or alias.name).partition(".")[0], []).append(None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node is not func:
                locals_.setdefault(node.name, []).append(None)
        elif isinstance(node, ast.arg):
            locals_.setdefault(node.arg, []).append(None)
        elif _set_name(node) is not None:
            assert isinstance(node, ast.Call)
            values.setdefault(str(_set_name(node)), []).append(node.args[2])
    plain = set(values)
    seen: set[str] = set()

    def setting(expr: ast.Attribute) -> bool:
        return expr.attr in plain

    def local_plain(name: ast.Name) -> bool:
        bound = locals_.get(name.id)
        if not bound or name.id in seen or any(v is None for v in bound):
            return False
        seen.add(name.id)
        try:
            return all(
                v is not None and plain_value(v, setting, local_plain, builtin) for v in bound
            )
        finally:
            seen.discard(name.id)

    def builtin(name: ast.Name) -> bool:
        return name.id not in locals_ and name.id not in module_names

    keep_plain(plain, values, lambda v: plain_value(v, setting, local_plain, builtin))
    return {attr: attr in plain for attr in values}
