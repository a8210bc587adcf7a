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

A function of that module the parameter is handed on to (``def main(args): train(args)``,
``train`` a module-level ``def`` of the same module bound by nothing else, without
decorators; by position or keyword) is read the same way, and so on down (each function
and parameter once, at most 32 of them): its stores join the call's.

Nothing is told (the call hands the namespace out, as before) where the parameter escapes:
used other than as ``p.attr`` (handed to any other call, a function of another module's
included, bound to another name, put in a container, indexed; ``return p`` alone is
allowed), rebound, an
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
from torchport.check.port._module_files import parse_file
from torchport.check.port._namespace_stores import keep_plain, plain_value
from torchport.check.port._script_path import imported_name

__all__ = ["handed_stores", "unread_stores"]

_Function = ast.FunctionDef | ast.AsyncFunctionDef
# (the function, what its module binds anywhere, its functions the namespace may be handed on to)
_Found = tuple[_Function, frozenset[str], dict[str, ast.FunctionDef]]
_MOST_FUNCTIONS = 32  # functions followed for one call, at most (then not told)


def handed_stores(ctx: Context, call: ast.Call, given: list[int | str]) -> dict[str, bool] | None:
    """What the other module's function ``call`` calls stores (attribute: every store
    plain) when handed the namespace at each of ``given`` (a position, or a keyword's
    name); None: not told (see the module docstring)."""
    found = _callee(ctx, call.func)
    if found is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    func, module_names, defs = found
    if any(k.arg is None for k in call.keywords):
        return None
    params = _params_given(func, given)
    if params is None:
        return None
    stored: dict[str, bool] = {}
    seen: set[tuple[int, str]] = set()
    work = [(func, p) for p in params]
    while work:  # the function, then each function of its module it hands the namespace on to
        function, param = work.pop()
        if (id(function), param) in seen:
            continue
        seen.add((id(function), param))
        handed = _escapes(function, param, defs)
        if handed is None or len(seen) > _MOST_FUNCTIONS:
            return None
        for callee, places in handed:
            onward = _params_given(callee, places)
            if onward is None:
                return None
            work += [(callee, p) for p in onward]
        for attr, plain in _stores(function, module_names).items():
            stored[attr] = stored.get(attr, True) and plain
    return stored


def unread_stores(ctx: Context, call: ast.Call) -> frozenset[str]:
    """The attributes the project module of ``call``'s function (one :func:`handed_stores`
    cannot tell) stores anywhere, on any object but ``self`` (an object's own state, not
    the namespace: ``self.args.ws`` counts), other than as a literal (``x.ws = 1``):
    what that module's code may make of a setting it is handed (a declared ``--lr`` stored
    as a tensor there is none of argparse's scalars). Empty for a callee of no project
    module; ``setattr`` with a name that is no literal is not read."""
    found = imported_name(ctx, call.func)
    if found is None:
        return frozenset()
    path = found[1]
    note(path)
    tree = parse_file(path)
    if tree is None:
        return frozenset()
    stored: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            literal = isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in targets:
                for t in ast.walk(target):
                    if not isinstance(t, ast.Attribute) or (literal and t is target):
                        continue
                    if not (isinstance(t.value, ast.Name) and t.value.id == "self"):
                        stored.add(t.attr)  # (a tuple's part, `+=`, any other value)
        elif _set_name(node) is not None:
            assert isinstance(node, ast.Call)
            if not isinstance(node.args[2], ast.Constant):
                stored.add(str(_set_name(node)))
    return frozenset(stored)


def _params_given(func: _Function, given: list[int | str]) -> set[str] | None:
    """The parameters of ``func`` that a call filling ``given`` (positions, keywords' names)
    hands the namespace to; None: into ``*args`` or ``**kwargs``."""
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
    return params


def _callee(ctx: Context, func: ast.expr) -> _Found | None:
    """The module-level function of another project module that ``func`` names, the
    names that module binds anywhere and its functions the namespace may be handed on to."""
    found = imported_name(ctx, func)
    if found is None or found[1].name == "__init__.py":
        return None  # (a package's names may be its submodules': not read here)
    return _function_of(found[1], found[0])


def _function_of(path: Path, name: str) -> _Found | None:
    note(path)  # what the check cache's answer rests on (check/_listing.py)
    tree = parse_file(path)
    if tree is None:
        return None
    found: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        bound = None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = node.name
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound = node.id
        elif isinstance(node, ast.alias):
            bound = (node.asname or node.name).partition(".")[0]
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for each in node.names:  # (bound elsewhere by a function)
                found.setdefault(each, []).extend((node, node))
        if bound is not None:
            found.setdefault(bound, []).append(node)
    # Functions read: a module-level `def` bound by nothing else, without decorators (a
    # decorator may call it otherwise; a coroutine's body runs later).
    defs: dict[str, ast.FunctionDef] = {}
    for each, nodes in found.items():
        node = nodes[0]
        one = len(nodes) == 1 and node in tree.body
        if one and isinstance(node, ast.FunctionDef) and not node.decorator_list:
            defs[each] = node
    top = defs.get(name)
    if top is None:
        return None
    return top, frozenset(found), defs


def _escapes(
    func: _Function, param: str, defs: dict[str, ast.FunctionDef]
) -> list[tuple[_Function, list[int | str]]] | None:
    """The functions of ``defs`` that ``func`` hands ``param`` on to (``train(args)``,
    ``train(cfg=args)``: each with the positions and keywords given it); None where
    ``param`` may reach anything else but reads and stores of its attributes (``return
    param`` aside)."""
    parents = {id(c): n for n in ast.walk(func) for c in ast.iter_child_nodes(n)}
    handed: list[tuple[_Function, list[int | str]]] = []
    for node in ast.walk(func):
        if isinstance(node, ast.arg) and node.arg == param and parents.get(id(node)) is not None:
            holder = parents[id(node)]
            if parents.get(id(holder)) is not func:
                return None  # a nested function's or lambda's parameter of that name
        if not (isinstance(node, ast.Name) and node.id == param):
            continue
        if not isinstance(node.ctx, ast.Load):
            return None  # rebound, deleted
        above = parents.get(id(node))
        if isinstance(above, ast.Return):
            continue
        onward = _handed_on(node, above, parents, defs)
        if onward is not None:
            handed.append(onward)
            continue
        if not isinstance(above, ast.Attribute) or above.attr.startswith("__"):
            return None  # (`p.__dict__`, `p.__setattr__`), handed to anything else
        outer = parents.get(id(above))
        called = isinstance(outer, ast.Call) and outer.func is above
        if called or isinstance(above.ctx, ast.Del):
            return None  # `p.update(ws=t)`: a method of its own may store anything
    return handed


def _handed_on(
    node: ast.Name,
    above: ast.AST | None,
    parents: dict[int, ast.AST],
    defs: dict[str, ast.FunctionDef],
) -> tuple[_Function, list[int | str]] | None:
    """``g(p)`` or ``g(x=p)`` with ``g`` a function of ``defs`` (no ``*``/``**`` at the
    call): ``g`` and where it is given ``p`` (None: no such call)."""
    call = parents.get(id(above)) if isinstance(above, ast.keyword) else above
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        return None
    callee = defs.get(call.func.id)
    if callee is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if any(k.arg is None for k in call.keywords):
        return None
    places: list[int | str] = [i for i, a in enumerate(call.args) if a is node]
    places += [k.arg for k in call.keywords if k.value is node and k.arg is not None]
    return (callee, places) if places else None


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
