"""Settings a file stores on its command-line namespace itself: ``args.world_size = 1``.

argparse makes numbers, strings and bools (:mod:`~torchport.check.port._command_line`),
and scripts add their own settings to the same namespace: ``args.world_size = 1``,
``args.prefetcher = not args.no_prefetcher``, ``args.grad_accum_steps = max(1,
args.grad_accum_steps)``. Such an attribute is a Python number, string or bool when every
store of that attribute name in the file (on any object: an alias of the namespace is not
followed) gives a value that is one by what the syntax shows (:func:`plain_value`): a
literal, ``not``/``in``/``is`` tests, a builtin that makes a number or string
(``int(t)``, ``len(x)``), arithmetic, ``min``/``max``/``abs``/``round``/``sum`` of plain
values, ``t.item()``, another such setting, or a local name bound only to such. A setting
read before any store sees what argparse or its caller put there; the attributes argparse
does not declare are told only where nothing else could have put anything there: the
namespace is handed to no function the file does not define (a library's may store a tensor
there; ``setattr``, ``vars`` and ``__dict__`` too) but another project module's whose stores
are read (``init_distributed_device(args)``: ``_namespace_callees.py``), and
``parser.set_defaults`` gives only literals. Syntax only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence

from torchport.check._context import Context

__all__ = [
    "freely_set",
    "handed_out",
    "keep_plain",
    "namespace_holders",
    "parsed_namespace",
    "plain_value",
    "store_values",
    "undeclared_defaults",
]

# Builtins whose result is a number, a string or a bool whatever they are given (or raise).
_MAKE_PLAIN = frozenset(
    {"int", "float", "str", "bool", "len", "repr", "format", "hash", "isinstance", "hasattr",
     "callable", "id", "ord", "chr", "bin", "hex", "oct"}
)  # fmt: skip
# Builtins whose result is made of what they are given: plain of plain.
_OF_GIVEN = frozenset({"min", "max", "abs", "round", "sum", "pow", "divmod"})
# Builtins handed the namespace that only read it (never store on it nor hand it on).
_READERS = frozenset({"print", "str", "repr", "format", "isinstance", "hasattr", "getattr", "id"})
_DICT_READS = frozenset({"items", "keys", "values", "copy", "get", "__contains__"})
_TESTS = (ast.In, ast.NotIn, ast.Is, ast.IsNot)


def store_values(ctx: Context) -> dict[str, list[ast.expr | None]]:
    """For each attribute name the file stores on an object other than ``self``, the values
    stored (None: a store whose value the syntax does not pair with it: ``for args.x in``,
    a starred unpacking). ``del args.x`` and an annotation without a value store nothing."""
    scopes = ctx.scopes
    out: dict[str, list[ast.expr | None]] = {}
    for node in scopes.nodes_of(ast.Attribute):
        assert isinstance(node, ast.Attribute)
        if not isinstance(node.ctx, ast.Store):
            continue
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            continue
        out.setdefault(node.attr, []).append(_paired(node, scopes.parent))
    for call in scopes.nodes_of(ast.Call):  # `setattr(args, "ws", 1)`: a store of `ws`
        assert isinstance(call, ast.Call)
        name = _set_name(call)
        if isinstance(name, str) and len(call.args) == 3:
            out.setdefault(name, []).append(call.args[2])
    return out


def _set_name(call: ast.Call) -> str | bool:
    """The attribute name ``setattr(x, "name", v)`` sets; True where it is not written out;
    False: no ``setattr`` call."""
    func = call.func
    if not (isinstance(func, ast.Name) and func.id == "setattr"):
        return False
    name = call.args[1] if len(call.args) == 3 else None
    if isinstance(name, ast.Constant) and isinstance(name.value, str) and not call.keywords:
        return name.value
    return True


def freely_set(ctx: Context, holds: Callable[[ast.Name], bool]) -> bool:
    """Whether the file may store any name on the namespace (``holds``): ``setattr`` with a
    name not written out, a change through ``vars(args)`` or ``args.__dict__`` (not a read:
    ``vars(args).items()``, ``yaml.safe_dump(args.__dict__)``)."""
    scopes = ctx.scopes
    for call in scopes.nodes_of(ast.Call):
        assert isinstance(call, ast.Call)
        first = call.args[0] if call.args else None
        if _set_name(call) is True and isinstance(first, ast.Name) and holds(first):
            return True
        func = call.func
        vars_of = isinstance(func, ast.Name) and func.id == "vars"
        given = vars_of and isinstance(first, ast.Name) and holds(first)
        if given and _changed(call, scopes.parent):
            return True
    for node in scopes.nodes_of(ast.Attribute):
        assert isinstance(node, ast.Attribute)
        value = node.value
        held = node.attr == "__dict__" and isinstance(value, ast.Name) and holds(value)
        if held and _changed(node, scopes.parent):
            return True
    return False


def _changed(mapping: ast.expr, parent: Callable[[ast.AST], ast.AST | None]) -> bool:
    """Whether the namespace's dict ``mapping`` is changed where it stands: an item stored or
    deleted, or a method called on it other than a read."""
    above = parent(mapping)
    if isinstance(above, ast.Subscript):
        return not isinstance(above.ctx, ast.Load)
    if isinstance(above, ast.Attribute):
        return above.attr not in _DICT_READS
    return False


def _paired(target: ast.expr, parent: Callable[[ast.AST], ast.AST | None]) -> ast.expr | None:
    """The value stored into ``target`` (None: not told)."""
    holder = parent(target)
    if isinstance(holder, ast.AnnAssign) and holder.value is None:
        return ast.Constant(None)  # an annotation alone stores nothing
    if isinstance(holder, ast.Assign | ast.AugAssign | ast.AnnAssign):
        return holder.value  # (`args.x += v`: `args.x` op `v`, the setting itself a candidate)
    if isinstance(holder, ast.Tuple | ast.List):
        above = parent(holder)
        if not isinstance(above, ast.Assign) or holder not in above.targets:
            return None
        value = above.value
        if not isinstance(value, ast.Tuple | ast.List) or len(value.elts) != len(holder.elts):
            return None
        if any(isinstance(e, ast.Starred) for e in (*holder.elts, *value.elts)):
            return None
        return value.elts[holder.elts.index(target)]
    return None


def keep_plain(
    names: set[str],
    values: Mapping[str, Sequence[ast.expr | None]],
    plain: Callable[[ast.expr], bool],
) -> None:
    """Drop from ``names`` each setting one of whose stored ``values`` is not ``plain``, until
    none drops: a value may read another setting, which a drop makes no longer plain."""
    changed = True
    while changed:
        changed = False
        for attr in sorted(names):
            if not all(v is not None and plain(v) for v in values.get(attr, ())):
                names.discard(attr)
                changed = True


def plain_value(
    expr: ast.expr,
    setting: Callable[[ast.Attribute], bool],
    no_tensor: Callable[[ast.Name], bool],
    builtin: Callable[[ast.Name], bool],
) -> bool:
    """Whether ``expr`` is a Python number, string or bool by what its syntax shows (see the
    module docstring); ``setting`` answers for a read of the namespace, ``no_tensor`` for a
    name, ``builtin`` whether a called name is the builtin (not rebound in the file)."""

    def plain(e: ast.expr) -> bool:
        if isinstance(e, ast.Constant | ast.JoinedStr):
            return True
        if isinstance(e, ast.UnaryOp):
            return isinstance(e.op, ast.Not) or plain(e.operand)  # `not t` is a bool
        if isinstance(e, ast.BinOp):
            return plain(e.left) and plain(e.right)
        if isinstance(e, ast.BoolOp):  # (gives one of its operands)
            return all(plain(v) for v in e.values)
        if isinstance(e, ast.IfExp):
            return plain(e.body) and plain(e.orelse)
        if isinstance(e, ast.Compare):  # `a in b` is a bool; `a < b` of tensors a tensor
            return all(isinstance(op, _TESTS) for op in e.ops) or all(
                plain(v) for v in (e.left, *e.comparators)
            )
        if isinstance(e, ast.Attribute):
            return setting(e)
        if isinstance(e, ast.Name):
            return no_tensor(e)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute):
            return e.func.attr == "item" and not e.args  # `loss.item()`: a Python number
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and builtin(e.func):
            if e.func.id in _MAKE_PLAIN:
                return True
            given = [*e.args, *(k.value for k in e.keywords)]
            return (
                e.func.id in _OF_GIVEN
                and not any(isinstance(a, ast.Starred) for a in e.args)
                and all(k.arg is not None for k in e.keywords)
                and all(plain(a) for a in given)
            )
        return False

    return plain(expr)


def handed_out(
    ctx: Context,
    holds: Callable[[ast.Name], bool],
    own: frozenset[str],
    told: frozenset[int] = frozenset(),
) -> bool:
    """Whether a name that may hold the namespace (``holds``) is handed to a call of anything
    but a function or class the file defines (``own``, by name), a builtin that only reads
    it, or a call whose stores are told (``told``, by id: another project module's function
    read), or its ``__dict__`` is read: something the port does not read may store there."""
    for node in ctx.scopes.nodes_of(ast.Call):
        assert isinstance(node, ast.Call)
        if id(node) in told:
            continue
        func = node.func
        if _set_name(node) is not False:
            continue  # `setattr(args, "ws", 1)`: a store (:func:`store_values`, :func:`freely_set`)
        if isinstance(func, ast.Name) and (func.id in own or func.id in _READERS):
            continue
        given = [*node.args, *(k.value for k in node.keywords)]
        for arg in given:
            inner = arg.value if isinstance(arg, ast.Starred) else arg
            if isinstance(inner, ast.Name) and holds(inner):
                return True
    for node in ctx.scopes.nodes_of(ast.Attribute):
        assert isinstance(node, ast.Attribute)
        if node.attr == "__dict__" and isinstance(node.value, ast.Name) and holds(node.value):
            return True
    return False


def undeclared_defaults(ctx: Context) -> frozenset[str] | None:
    """The settings ``parser.set_defaults(...)`` gives a value other than a literal (None:
    one ``**options``, any name may be given)."""
    out: set[str] = set()
    for node in ctx.scopes.nodes_of(ast.Call):
        assert isinstance(node, ast.Call)
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "set_defaults":
            continue
        for k in node.keywords:
            if k.arg is None:
                return None
            if not isinstance(k.value, ast.Constant):
                out.add(k.arg)
    return frozenset(out)


def namespace_holders(ctx: Context) -> frozenset[str]:
    """The names that may hold the parsed namespace, by name in any scope (more, never
    fewer): bound to ``parser.parse_args()``, to such a name, to what a function of the file
    may return it from, or parameters at a position (or keyword) some call of the file's
    function hands such a name."""
    names: set[str] = set()
    scopes = ctx.scopes
    defined = {
        n.name: n
        for n in scopes.nodes_of(ast.FunctionDef) + scopes.nodes_of(ast.AsyncFunctionDef)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    assigns = [n for n in scopes.nodes_of(ast.Assign) if isinstance(n, ast.Assign)]
    calls = [n for n in scopes.nodes_of(ast.Call) if isinstance(n, ast.Call)]
    size = -1
    while size != len(names):
        size = len(names)
        for a in assigns:
            if (
                parsed_namespace(a.value)
                or _holds_any(a.value, names)
                or _returned(a, defined, names)
            ):
                names |= {t.id for t in _target_names(a.targets)}
        for call in calls:
            func = defined.get(call.func.id) if isinstance(call.func, ast.Name) else None
            if func is not None:
                names |= _given_parameters(call, func, names)
    return frozenset(names)


def _holds_any(value: ast.expr | None, names: set[str]) -> bool:
    """``ns = args`` or ``ns = args if a else b``: a name in ``names`` may be what is bound."""
    if isinstance(value, ast.IfExp):
        return _holds_any(value.body, names) or _holds_any(value.orelse, names)
    if isinstance(value, ast.BoolOp):
        return any(_holds_any(v, names) for v in value.values)
    if isinstance(value, ast.NamedExpr):
        return _holds_any(value.value, names)
    return isinstance(value, ast.Name) and value.id in names


def _returned(
    assign: ast.Assign, defined: dict[str, ast.FunctionDef | ast.AsyncFunctionDef], names: set[str]
) -> bool:
    """``args = parse()`` of a function of the file some ``return`` of which may give the
    namespace (any position of a tuple: the whole target is taken)."""
    call = assign.value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        return False
    func = defined.get(call.func.id)
    if func is None:
        return False
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            items = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            if any(parsed_namespace(i) or _holds_any(i, names) for i in items):
                return True
    return False


def _target_names(targets: list[ast.expr]) -> list[ast.Name]:
    return [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _given_parameters(call: ast.Call, func: ast.AST, names: set[str]) -> set[str]:
    """The parameters of ``func`` that ``call`` hands a name in ``names`` (a ``*args`` or
    ``**kwargs`` one: every parameter)."""
    assert isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
    a = func.args
    every = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    every |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    out: set[str] = set()
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            if _holds_any(arg.value, names):
                return every
            continue
        if _holds_any(arg, names):
            out |= {positional[i]} if i < len(positional) else every  # (`self` too: more)
    for k in call.keywords:
        if _holds_any(k.value, names):
            out |= {k.arg} if k.arg is not None else every
    return out


def parsed_namespace(value: ast.expr | None) -> bool:
    """``parser.parse_args(...)`` or ``parser.parse_known_args(...)[0]``."""
    if isinstance(value, ast.Subscript):
        index = value.slice
        if not (isinstance(index, ast.Constant) and index.value == 0):
            return False
        value = value.value
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "parse_known_args"
        )
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "parse_args"
    )
