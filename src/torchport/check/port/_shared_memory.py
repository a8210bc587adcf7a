"""A tensor that shares its memory with an array the program writes or reads again: said, not moved.

``torch.from_numpy(a)`` (``torch.as_tensor``, ``torch.asarray``, ``torch.frombuffer`` of an
array) makes a tensor over ``a``'s memory: on the CPU a write to ``a`` after it
(``a[0, 0] = 5.0``, ``a += 1``, ``a.fill(2)``, ``np.random.shuffle(a)``) is seen through the
tensor, and a write to the tensor (``t[0] = 4``, ``t.add_(1)``) through ``a``. Moved to the
device, the tensor is a copy: the ported program computes on the values from before the write,
and says nothing (issue 31, k31ah's strict xfail). A dtype cast chained to the maker
(``.float()``) returns the same tensor where the dtype already matches, so it shares too.

The invariant (:func:`shared_memory`, asked by TP503 and by ``_placed.placed_by_the_port``, so
that the value kinds agree): the port moves such a tensor only where no write can be seen
through the sharing: the array's name is rebound by the statement that makes the tensor (``a =
torch.from_numpy(a)``, ``s = torch.unsqueeze(torch.from_numpy(s), 0)``: the array has no other
name there), or every other use of the array's name after it (and, for a module-level array, in
any function that does not bind the name) is a read that makes a new value (an attribute,
arithmetic, a comparison, ``len``, ``print``, a copying method such as
``.copy()``/``.astype()``/``.sum()``, a library function known to read only: ``np.mean(a)``,
``plt.plot(a)``, ``json.dumps``; never ``np.copyto(a, v)``, ``out=a`` or an ``out`` in its
place (``np.exp(a, a)``), ``overwrite_input=``, ``copy=``, nor a call of unknown code, which
may write; another sharing tensor of it that no name writes in place, as this one),
and no name bound to the tensor, or to a view of it (``u = t.view(-1)``, ``for row in t``;
b31al), is written in place, nor handed where a write is out of this walk's sight: the file's
own function that writes or hands on that parameter, a function reading the name as a free
name, a torch function that writes (``torch.nn.init``, a trailing ``_``, ``out=``), a
container, a tuple unpacked, an attribute (``_handed_on``; an unnamed tensor,
``bump(torch.from_numpy(a))``, is followed to where it goes). Otherwise TP503 reports it, with
no fix. A call of the file's own
function that returns such a tensor of its parameter (``def to_tensor(arr): return
torch.from_numpy(arr)``) shares the argument it is handed: asked as the maker is, of that
argument (issue 31). Syntax only: an array another module holds, or a parameter's caller
writes, is not followed.
"""

from __future__ import annotations

import ast

from torchport.check.port._device_flow import names_of
from torchport.check.port._sharing_tables import (
    ARRAY_VIEWS,
    COPYING,
    HOLDERS,
    HOLDING_METHODS,
    ITEM_ITERATORS,
    NUMPY_OUT_AT,
    NUMPY_READERS,
    READERS,
    SHARING,
    TENSOR_VIEWS,
    WRITING_KEYWORDS,
    own_attribute,
    own_callees,
    view_root,
)

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._device_flow import PortScope
    from torchport.check.port._facts import PortFacts

__all__ = ["SHARING", "shared_memory"]


def shared_memory(node: ast.Call, facts: PortFacts) -> str:
    """Why the tensor ``node`` makes must stay where its memory is (TP503's message), or ""
    where the port may move it (see the module docstring)."""
    if facts.ctx.qualname(node.func) in SHARING and node.args:
        source: ast.expr | None = node.args[0]
    else:  # `to_tensor(a)` of `def to_tensor(arr): return torch.from_numpy(arr)` (issue 31)
        source = _handed_array(node, facts)
    if source is None:
        return ""
    shown = source
    while isinstance(source, ast.Subscript) and isinstance(source.ctx, ast.Load):
        source = source.value  # `xy[:, :-1]`, a view: shares `xy`'s memory (k31ak: said)
    if not isinstance(source, ast.Name):
        # made in the call (`np.ones(3)`, a list): nothing else holds it; an attribute or an
        # item (`self.buf`, `arrays[0]`) is held elsewhere: said
        fresh = isinstance(source, ast.Call | ast.Constant | ast.List | ast.Tuple | ast.BinOp)
        return "" if fresh and source is shown else _message(shown)
    scope = facts.scope_of.get(id(node)) or facts.module
    bound = _bound(node, facts)
    statement: ast.AST | None = node
    while statement is not None and not isinstance(statement, ast.stmt):
        statement = facts.parents.get(id(statement))
    if isinstance(statement, ast.Assign) and any(
        source.id in names_of(t) for t in statement.targets
    ):  # `a = torch.from_numpy(a)`, `s = torch.unsqueeze(torch.from_numpy(s), 0)`
        return ""  # the array has no other name here after it
    after = getattr(statement, "end_lineno", None) or node.lineno
    written: bool | None = None  # asked once, of the first later use that only reads
    for use in _uses(source.id, scope, facts):
        if use is source or not (use.lineno > after or facts.scope_of.get(id(use)) is not scope):
            continue
        if not _reads(use, facts):
            return _message(shown)
        if written is None:
            written = (
                _written(bound, scope, facts, after)
                if bound
                else _unbound_written(node, scope, facts)
            )
        if written:
            return _message(shown)
    return ""


def _message(source: ast.expr) -> str:
    text = ast.unparse(source)[:40]
    return (
        f"this tensor shares its memory with `{text}`, which the program writes or reads "
        "again: moved to the device it would be a copy, and a write to one would not reach "
        f"the other; move it yourself where the values are final (`.to(device)` after the "
        f"last write), or copy it on purpose (`torch.tensor({text})`)"
    )


def _bound(node: ast.Call, facts: PortFacts) -> set[str]:
    """The names an assignment binds the tensor (``node`` with its casts) to, where it is
    the whole value (``t = torch.from_numpy(a).float()``)."""
    from torchport.check.port._chains import cast_end

    tensor = cast_end(node, facts.parents) or node
    up = facts.parents.get(id(tensor))
    if isinstance(up, ast.Assign) and up.value is tensor:
        return {n for t in up.targets for n in names_of(t)}
    if isinstance(up, ast.AnnAssign | ast.NamedExpr) and up.value is tensor:
        return set(names_of(up.target))
    return set()


def _uses(name: str, scope: PortScope, facts: PortFacts) -> list[ast.Name]:
    """The ``name`` nodes that read or write the array: in ``scope``, and for a module-level
    name in every function that does not bind it."""
    scopes = [scope]
    if scope is facts.module:
        scopes += [s for s in facts.scopes[1:] if name not in s.local]
    return [
        n
        for s in scopes
        for n in s.nodes
        if isinstance(n, ast.Name)
        and n.id == name
        # (`a = ...` binds a new array; `a += 1` writes this one)
        and (
            not isinstance(n.ctx, ast.Store) or isinstance(facts.parents.get(id(n)), ast.AugAssign)
        )
    ]


def _reads(use: ast.expr, facts: PortFacts) -> bool:
    """Whether ``use`` only reads the array into a new value (see ``COPYING``, ``READERS``);
    an item or a view (``a[0]``, ``a.T``) is followed to what reads it."""
    up = facts.parents.get(id(use))
    if isinstance(up, ast.Subscript) and up.value is use:
        return isinstance(up.ctx, ast.Load) and _reads(up, facts)
    if isinstance(up, ast.Attribute):
        call = facts.parents.get(id(up))
        if isinstance(call, ast.Call) and call.func is up:
            return up.attr in COPYING and not any(k.arg in WRITING_KEYWORDS for k in call.keywords)
        return up.attr not in ARRAY_VIEWS or _reads(up, facts)
    if isinstance(up, ast.BinOp | ast.Compare | ast.UnaryOp | ast.FormattedValue):
        return True
    if isinstance(up, ast.Call) and use in up.args:
        if use is up.args[0] and facts.ctx.qualname(up.func) in SHARING and not up.keywords:
            scope = facts.scope_of.get(id(up)) or facts.module  # another tensor over it:
            names = _bound(up, facts)  # unwritten, by its names or where it goes (q31am)
            if not names:
                return not _unbound_written(up, scope, facts)
            return not _written(names, scope, facts, up.lineno - 1)
        return _reader(up, facts)
    return False


def _reader(call: ast.Call, facts: PortFacts) -> bool:
    """Whether ``call`` only reads the arrays it is handed: a builtin or a library function
    known not to write them (``READERS``, numpy's ``NUMPY_READERS`` with no ``out=``,
    matplotlib's pyplot, which never writes its data); a call of unknown code may write."""
    name = facts.ctx.qualname(call.func) or (
        call.func.id if isinstance(call.func, ast.Name) else ""
    )
    if any(k.arg in WRITING_KEYWORDS for k in call.keywords):
        return False  # `np.clip(a, 0, 1, out=a)`, `np.array(a, copy=False)`, `**k`
    if name.startswith("numpy."):
        out_at = NUMPY_OUT_AT.get(name[6:], len(call.args))
        starred = any(isinstance(a, ast.Starred) for a in call.args)  # `np.exp(*arrays)`
        return name[6:] in NUMPY_READERS and len(call.args) <= out_at and not starred
    return name in READERS or name.startswith("matplotlib.pyplot.")


def _with_views(names: set[str], scope: PortScope, facts: PortFacts, after: int) -> set[str]:
    """``names`` and the names bound after line ``after`` to a view of one of them
    (``u = t.view(-1)``, ``row = t[0]``, ``for row in t``), to a fixed point."""
    names = set(names)
    while True:
        grown = set(names)
        for node in scope.nodes:
            line = getattr(node, "lineno", 0) or getattr(facts.parents.get(id(node)), "lineno", 0)
            if line <= after:  # (a comprehension's line: its expression's)
                continue
            if isinstance(node, ast.Assign):
                value, targets = node.value, node.targets
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                value, targets = node.value, [node.target]
            elif isinstance(node, ast.For | ast.comprehension):
                value, targets = node.iter, [node.target]  # (its items are views)
            else:
                continue
            roots = [view_root(value, facts)]
            if isinstance(value, ast.List | ast.Tuple):  # `for x in [t, u]` (b31an)
                roots = [view_root(v, facts) for v in value.elts]
            func = value.func if isinstance(value, ast.Call) else None
            if isinstance(func, ast.Name) and func.id in ITEM_ITERATORS:  # enumerate(t): b31an
                roots = [view_root(v, facts) for v in getattr(value, "args", [])]
            if any(isinstance(r, ast.Name) and r.id in names for r in roots):
                grown.update(n for t in targets for n in names_of(t))
        if grown == names:
            return names
        names = grown


def _written(
    names: set[str], scope: PortScope, facts: PortFacts, after: int, depth: int = 0
) -> bool:
    """Whether a name bound to the tensor, or to a view of it, is written in place after line
    ``after`` (``t[0] = 4``, ``t += 1``, ``t.add_(1)``, ``u = t.view(-1); u[0] = 4``), or
    handed where it may be written and this walk does not look (:func:`_handed_on`): in a
    function that reads the name from this scope (``def bump(): t[0] = 9``), a callee, a
    container, a tuple unpacked."""
    names = _with_views(names, scope, facts, after) if names else names
    if not names:
        return False
    if scope is facts.module and any(  # `class C: x = t` (in no scope of the walk; b31an)
        isinstance(n, ast.Name) and n.id in names
        for c in facts.structure.classdefs
        for stmt in c.body
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(stmt)
    ):
        return True
    for inner in _inner_scopes(scope, facts):
        free = names - inner.local
        if free and _written(free, inner, facts, 0, depth):
            return True
    for node in scope.nodes:
        if getattr(node, "lineno", 0) <= after:
            continue
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
            if _handed_on(node, facts, depth):
                return True
            continue
        target: ast.expr
        if isinstance(node, ast.AugAssign):
            target = node.target
        elif isinstance(node, ast.Subscript | ast.Attribute) and (
            isinstance(node.ctx, ast.Store | ast.Del) or getattr(node, "attr", "").endswith("_")
        ):
            target = node  # `t[0] = 4`, `t.add_(1)`
        else:
            continue
        while isinstance(target, ast.Subscript | ast.Attribute | ast.NamedExpr):
            target = target.target if isinstance(target, ast.NamedExpr) else target.value
        if isinstance(target, ast.Name) and target.id in names:  # (`(u := t)[0] = 4`)
            return True
    return False


def _inner_scopes(scope: PortScope, facts: PortFacts) -> list[PortScope]:
    """The functions that may read ``scope``'s names as their own free names: every function
    for the module (a method's enclosing scope is a class body), the nested ones for a
    function."""
    if scope is facts.module:
        return facts.scopes[1:]
    found = []
    for inner in facts.scopes[1:]:
        outer = inner.outer
        while outer is not None and outer is not scope:
            outer = outer.outer
        if outer is scope:
            found.append(inner)
    return found


def _handed_on(value: ast.expr, facts: PortFacts, depth: int = 0) -> bool:
    """Whether the tensor ``value`` (a name of it, or the maker's call) is handed where it may
    be written and the syntax-only walk does not follow it: into a container or a tuple
    (``holder = [t]``, ``u, w = t, 1``; not a torch function's list: ``torch.cat([t, u])``),
    stored in an attribute or an item, handed to a torch function that writes (every
    ``torch.nn.init`` function, a name ending in ``_``, an ``out=``), or to the file's own
    function that writes or hands on that parameter (``bump(t)``). A call of other code
    (``model(t)``, ``print(t)``) reads it, as before (n31al's near form)."""
    up = facts.parents.get(id(value))
    handed: ast.expr | ast.keyword = value
    if isinstance(up, ast.keyword):
        handed, up = up, facts.parents.get(id(up))
    if isinstance(up, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        return True  # `[t for _ in r]`: a container (b31an)
    if isinstance(up, ast.List | ast.Tuple | ast.Set | ast.Dict | ast.Starred):
        outer = facts.parents.get(id(up))
        if isinstance(outer, ast.Call) and up in outer.args:  # `model([t, u])`: as `model(t)`
            return _handed_on(up, facts, depth) if isinstance(up, ast.List | ast.Tuple) else True
        iterated = isinstance(outer, ast.For | ast.comprehension) and outer.iter is up
        return not (iterated and isinstance(value, ast.Name))  # (`for x in [t, u]`: followed)
    if isinstance(up, ast.Assign | ast.AnnAssign) and up.value is value:
        targets = up.targets if isinstance(up, ast.Assign) else [up.target]
        if isinstance(facts.parents.get(id(up)), ast.ClassDef):
            return True  # `class C: x = t` (an attribute, b31an)
        if len(targets) == 1 and (held := own_attribute(targets[0], up, facts)):
            return _attribute_written(*held, facts, depth + 1)  # `self.x = x` (b31an)
        return not all(isinstance(t, ast.Name) for t in targets)  # `self.t = t`, `d[k] = t`
    if not isinstance(up, ast.Call) or value is up.func:
        return False
    name = facts.ctx.qualname(up.func) or (up.func.id if isinstance(up.func, ast.Name) else "")
    method = up.func.attr if isinstance(up.func, ast.Attribute) else ""
    if name in HOLDERS or name.startswith("operator.") or method in HOLDING_METHODS:
        return True  # kept where a write is out of sight (b31an)
    if name.startswith("torch."):
        return not _torch_reader(up, facts)
    if handed is not value or not isinstance(value, ast.List | ast.Tuple):
        return _own_function_writes(up, handed, facts, depth)
    flows = isinstance(up.func, ast.Name) and up.func.id in ITEM_ITERATORS | {"map", "filter"}
    calls_back = any(  # `pool.map(bump, [t])`: the file's code runs on the items
        isinstance(v, ast.Lambda) or (isinstance(v, ast.Name) and v.id in facts.functions)
        for v in (*up.args, *(k.value for k in up.keywords))
    )
    # a list to the file's own code, or on to other items (`zip([t], r)`): unfollowed
    return flows or calls_back or own_callees(up, facts)[0] is not None


def _torch_reader(call: ast.Call, facts: PortFacts) -> bool:
    """Whether ``call`` is a torch function that does not write what it is handed."""
    name = facts.ctx.qualname(call.func) or ""
    writes = name.startswith("torch.nn.init.") or name.endswith("_")
    return name.startswith("torch.") and not writes and all(k.arg != "out" for k in call.keywords)


def _own_function_writes(
    call: ast.Call, value: ast.expr | ast.keyword, facts: PortFacts, depth: int
) -> bool:
    """Whether the file's own function ``call`` calls may write the tensor ``value`` (an
    argument of it, or a keyword): its parameter written, or handed on, in its body; a star
    (``*args``, ``**kwargs``) on either side, or a chain deeper than three calls, may."""
    funcs, skip = own_callees(call, facts)
    if funcs is None:
        return False  # not the file's own code: other code, read as before
    if not funcs or depth >= 3 or any(isinstance(a, ast.Starred) for a in call.args):
        return True  # (a lambda, a class without `__init__`: out of sight)
    return any(_parameter_written(call, value, f, skip, facts, depth) for f in funcs)


def _parameter_written(
    call: ast.Call,
    value: ast.expr | ast.keyword,
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    skip: int,
    facts: PortFacts,
    depth: int,
) -> bool:
    """Whether ``func``'s parameter that ``call`` hands ``value`` to (after the first
    ``skip``: a method's ``self``) is written or handed on, or returned to ``call``'s value,
    followed there (``def ident(x): return x``; b31an)."""
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)][skip:]
    if isinstance(value, ast.keyword):
        if value.arg is None:
            return True  # `f(**k)`
        parameter = value.arg
    else:
        index = call.args.index(value)
        if index >= len(positional):
            return True  # into `*args`
        parameter = positional[index]
    if _written({parameter}, facts.scope_of_function(func), facts, 0, depth + 1):
        return True
    returned = [n.value for n in ast.walk(func) if isinstance(n, ast.Return | ast.Yield)]
    if not any(
        isinstance(root := view_root(r, facts), ast.Name) and root.id == parameter
        for r in returned
        if r is not None
    ):
        return False
    scope = facts.scope_of.get(id(call)) or facts.module
    return _unbound_written(call, scope, facts, depth + 1)


def _attribute_written(cls: ast.ClassDef, attr: str, facts: PortFacts, depth: int) -> bool:
    """Whether ``self.attr`` may be written in a method of ``cls`` (``self.buf.mul_(2)``,
    ``self.buf[0] = 4``, ``self.buf += 1``), or handed on, as an unnamed tensor is followed."""
    if depth >= 3:
        return True
    for scope in facts.scopes[1:]:
        if scope.cls is not cls:
            continue
        for node in scope.nodes:
            if not (isinstance(node, ast.Attribute) and node.attr == attr):
                continue
            if not isinstance(node.value, ast.Name):
                continue
            if isinstance(node.ctx, ast.Store | ast.Del):
                if isinstance(facts.parents.get(id(node)), ast.AugAssign):
                    return True
                continue
            if _unbound_written(node, scope, facts, depth):
                return True
    return False


def _unbound_written(made: ast.expr, scope: PortScope, facts: PortFacts, depth: int = 0) -> bool:
    """Whether the tensor ``made`` makes, bound to no name, may be written where it goes: a
    view or cast of it followed to the name it is bound to (``v = torch.from_numpy(a).numpy();
    v[0] = 5``) or to where it is handed (:func:`_handed_on`); an in-place method of it."""
    value: ast.expr = made
    while True:
        up = facts.parents.get(id(value))
        if isinstance(up, ast.Attribute) and up.value is value:
            call = facts.parents.get(id(up))
            is_call = isinstance(call, ast.Call) and call.func is up
            if up.attr.endswith("_") and is_call:
                return True  # `torch.from_numpy(a).mul_(2.0)`
            if up.attr not in TENSOR_VIEWS:
                return False  # a new value (`.sum()`), or an attribute read
            value = call if isinstance(call, ast.Call) and is_call else up
        elif isinstance(up, ast.Subscript) and up.value is value:
            if not isinstance(up.ctx, ast.Load):
                return True
            value = up
        elif isinstance(up, ast.Assign | ast.AnnAssign | ast.NamedExpr) and up.value is value:
            targets = up.targets if isinstance(up, ast.Assign) else [up.target]
            if not all(isinstance(t, ast.Name) for t in targets):
                return True
            names = {n for t in targets for n in names_of(t)}
            return _written(names, scope, facts, getattr(up, "lineno", made.lineno) - 1, depth)
        else:
            return _handed_on(value, facts, depth)


def _handed_array(call: ast.Call, facts: PortFacts) -> ast.expr | None:
    """The argument ``call`` hands a parameter that the file's own function it calls returns
    a sharing tensor of (``to_tensor(a)``: ``a``), or None."""
    from torchport.check.port._chains import cast_end

    func = facts.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
    if (
        func is None
        or facts.ctx.scopes.resolve(func.name, call.func) is not facts.ctx.scopes.module
    ):
        return None
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    returned = [n.value for n in ast.walk(func) if isinstance(n, ast.Return) and n.value]
    for value in returned:
        for made in (n for n in ast.walk(value) if isinstance(n, ast.Call)):
            held = made.args[0] if made.args else None
            if facts.ctx.qualname(made.func) not in SHARING or not isinstance(held, ast.Name):
                continue
            if (cast_end(made, facts.parents) or made) is not value:
                continue  # (not the whole value returned: `return a, torch.from_numpy(a)`)
            given = next((k.value for k in call.keywords if k.arg == held.id), None)
            index = positional.index(held.id) if held.id in positional else None
            if given is None and index is not None and index < len(call.args):
                given = call.args[index]
            if given is not None and not isinstance(given, ast.Starred):
                return given
    return None
