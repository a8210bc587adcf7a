"""What the checkpoint-loading rules (TP301-TP309) share: which calls load, how, and where to.

``torch.load`` is also reachable as ``torch.serialization.load``; the hub's
``load_state_dict_from_url`` also as ``torch.utils.model_zoo.load_url``.
"""

from __future__ import annotations

import ast
import re
import weakref

from torchport.check._context import Context
from torchport.check._match import called, keyword
from torchport.check.semantic._binding import Scope

__all__ = [
    "HUB_LOADS",
    "LOADS",
    "LOAD_ATTRS",
    "explicit_weights_only",
    "is_load",
    "loaded_elsewhere",
    "only_safe_dicts",
    "parameter_defaulting_to_true",
    "saved_by_this_run",
    "stands_for_plain_object",
    "unpacks",
    "whole_module",
    "written_by_this_run",
]

LOADS = frozenset({"torch.load", "torch.serialization.load"})
HUB_LOADS = frozenset({"torch.hub.load_state_dict_from_url", "torch.utils.model_zoo.load_url"})
# The method names any of those calls ends in (`torch.load`, `hub.load_state_dict_from_url`).
LOAD_ATTRS = frozenset({"load", "load_state_dict_from_url", "load_url"})


def is_load(call: ast.Call, ctx: Context, names: frozenset[str] = LOADS) -> bool:
    """Whether ``call`` calls one of ``names`` (``torch.load`` and its alias by default)."""
    return called(call, ctx, LOAD_ATTRS) in names


def explicit_weights_only(call: ast.Call) -> bool | None:
    """The truth of a constant ``weights_only=`` (``0`` is False); else None."""
    flag = keyword(call, "weights_only")
    if flag is None or not isinstance(flag.value, ast.Constant):
        return None
    return bool(flag.value.value) if flag.value.value is not None else None


def unpacks(call: ast.Call) -> bool:
    """Whether ``call`` passes ``*args`` or ``**kwargs`` (which may hold anything)."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(
        kw.arg is None for kw in call.keywords
    )


# Names that hold a whole module (`model`, `net2`, `teacher_model`), not its weights.
_MODULE = re.compile(
    r"^(?:\w+_)?(model|net|network|module|encoder|decoder|backbone|classifier|generator"
    r"|discriminator|policy|critic|actor)s?\d*$",
    re.IGNORECASE,
)
_WEIGHTS = re.compile(r"state|dict|sd$|ckpt|checkpoint|weight|param|tensor|path|file|url|name")


def _identifier(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def whole_module(expr: ast.expr, ctx: Context) -> bool:
    """A careful guess that ``expr`` is a whole ``nn.Module`` (not its ``state_dict()``).

    By name (``model``, ``teacher_net``, ``self.encoder``; never ``model_state``)
    or by binding (``model = Net()``, ``torch.nn.Linear(...)``).
    """
    name = _identifier(expr)
    if name is None or _WEIGHTS.search(name.lower()):
        return False
    if isinstance(expr, ast.Name) and _used_as_mapping(expr, ctx):
        return False  # `save_file(model, ...)`, `model.items()`: a state dict named `model`
    if _MODULE.match(name):
        return True
    bound = ctx.value_of(expr) if isinstance(expr, ast.Name) else None
    if isinstance(bound, ast.Call):
        qualified = ctx.qualname(bound.func)
        if qualified is not None:
            return qualified.startswith("torch.nn.") and qualified[9:10].isupper()
        callee = _identifier(bound.func) or ""
        return bool(_MODULE.match(callee)) or callee.endswith(("Net", "Model", "Module"))
    return False


def _used_as_mapping(name: ast.Name, ctx: Context) -> bool:
    """Whether the function holding ``name`` treats it as a dict of tensors."""
    scope = ctx.scopes.scope_of(name).node
    return name.id in _per_scope(ctx).mappings.get(id(scope), ())


class _FileUses:
    """Per file, by scope (a scope's entry covers the scopes nested in it): the names used
    as mappings (``x.items()``, ``x[k]``, ``save_file(x, ...)``) and the ``save`` calls.

    Asked for every load of a file: a walk of the scope for each was quadratic.
    """

    def __init__(self, ctx: Context) -> None:
        self.mappings: dict[int, set[str]] = {}
        self.saves: dict[int, list[ast.Call]] = {}
        scopes = ctx.scopes
        for kind in (ast.Attribute, ast.Subscript, ast.Call):
            for node in scopes.nodes_of(kind):
                used: str | None = None
                if isinstance(node, ast.Attribute):
                    if node.attr in ("items", "keys", "values") and isinstance(
                        node.value, ast.Name
                    ):
                        used = node.value.id
                elif isinstance(node, ast.Subscript):
                    used = getattr(node.value, "id", None)
                elif isinstance(node, ast.Call):
                    func = node.func
                    tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                    if isinstance(func, ast.Name):  # `from torch import save as keep`
                        tail = ctx.import_tails.get(tail) or tail
                    if tail == "save_file" and isinstance(func, ast.Name) and node.args:
                        used = getattr(node.args[0], "id", None)
                    if tail == "save":
                        for scope in self._enclosing(node, ctx):
                            self.saves.setdefault(scope, []).append(node)
                if used is not None:
                    for scope in self._enclosing(node, ctx):
                        self.mappings.setdefault(scope, set()).add(used)

    @staticmethod
    def _enclosing(node: ast.AST, ctx: Context) -> list[int]:
        found = []
        scope: Scope | None = ctx.scopes.scope_of(node)
        while scope is not None:
            found.append(id(scope.node))
            scope = scope.parent
        return found


_USES: weakref.WeakKeyDictionary[Context, _FileUses] = weakref.WeakKeyDictionary()


def _per_scope(ctx: Context) -> _FileUses:
    found = _USES.get(ctx)
    if found is None:
        found = _USES[ctx] = _FileUses(ctx)
    return found


def loaded_elsewhere(load: ast.Call, ctx: Context) -> str | None:
    """Why moving what ``load`` returns could leave it beside tensors elsewhere; None if not.

    Safe uses end in ``x.load_state_dict(...)``, which copies each tensor to
    where the module's or optimizer's own tensors are, or in a read to the host
    (``print(ckpt["step"])``, ``.item()``, ``.tolist()``, ``int(...)``, ``"k" in
    ckpt``), which gives the same on any device: the load itself, a key of it
    (``ckpt["model"]``), or a name bound once to either and used only so.
    """
    scopes = ctx.scopes
    todo: list[ast.expr] = [load]
    for _ in range(16):
        if not todo:
            return None
        value = todo.pop()
        parent = scopes.parent(value)
        if isinstance(parent, ast.Subscript) and parent.value is value:
            todo.append(parent)  # `ckpt["model"]`
        elif (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Attribute)
            and parent.func.attr == "load_state_dict"
            and parent.args[:1] == [value]
        ) or _read_on_host(value, parent):
            continue
        elif isinstance(parent, ast.Assign) and parent.value is value and len(parent.targets) == 1:
            target = parent.targets[0]
            found = scopes.bindings(target.id, target) if isinstance(target, ast.Name) else []
            if len(found) != 1:
                return "what it loads is kept where this check cannot follow it"
            todo += scopes.reads_of(found[0].name, found[0].scope)
        else:
            shown = ctx.segment(parent).split("\n")[0] if parent is not None else ""
            return f"what it loads is used in `{shown[:60]}`, not only by `load_state_dict`"
    return "what it loads is used in too many places to follow"


_HOST_CALLS = frozenset({"print", "int", "float", "bool", "str", "len", "repr"})
_HOST_METHODS = frozenset({"item", "tolist", "keys"})


def _read_on_host(value: ast.expr, parent: ast.AST | None) -> bool:
    """``print(value)``, ``value.item()``, ``"key" in value``: the same answer on any device."""
    if isinstance(parent, ast.Call):
        func = parent.func
        return isinstance(func, ast.Name) and func.id in _HOST_CALLS and value in parent.args
    if isinstance(parent, ast.Attribute) and parent.attr in _HOST_METHODS:
        return True
    if isinstance(parent, ast.Compare):
        return all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    return isinstance(parent, ast.FormattedValue)


_TEMPORARY = re.compile(r"tmp|temp|cache", re.IGNORECASE)


def written_by_this_run(node: ast.Call, ctx: Context) -> bool:
    """Whether this program wrote the file itself: a temporary or cache path, or a save to it.

    ``with open(f"{tmpdir}/a.pt", "rb") as f: torch.load(f)`` in a test, a file
    object opened as a temporary file (``with tempfile.TemporaryFile("r+b") as f:``,
    ClassyVision's broadcast of a pickled object: sample N), or
    ``torch.save(sd, path)`` then ``torch.load(path)`` in one function, or a
    cache (``if exists(path): torch.load(path)`` with ``torch.save(..., path)``
    in the ``else``): the file comes from this machine, and loads where it
    was saved.
    """
    source = node.args[0] if node.args else getattr(keyword(node, "f"), "value", None)
    if source is None:
        return False
    if isinstance(source, ast.Name):  # `with open(path) as f: torch.load(f)`
        name = source.id
        for outer in ctx.ancestors:
            for item in getattr(outer, "items", ()):
                target = item.optional_vars
                if isinstance(target, ast.Name) and target.id == name:
                    opened = item.context_expr
                    if isinstance(opened, ast.Call) and _TEMPORARY.search(ctx.segment(opened.func)):
                        return True  # `with tempfile.TemporaryFile() as f:`: no one else's
                    source = (
                        opened.args[0] if isinstance(opened, ast.Call) and opened.args else source
                    )
    text = ctx.segment(source)
    if _TEMPORARY.search(text):
        return True
    value = ctx.value_of(source) if isinstance(source, ast.Name) else None
    if value is not None and _TEMPORARY.search(ctx.segment(value)):
        return True  # `fn = os.path.join(datadir, "cache.pt")`
    return _saved_here(node, text, ctx)


def saved_by_this_run(node: ast.Call, ctx: Context) -> bool:
    """Whether the same program saves the file it loads: a save to the same path earlier in
    the function, or a cache (``if exists(path): torch.load(path)`` with ``torch.save(...,
    path)`` in the ``else``). Unlike :func:`written_by_this_run`, names alone prove nothing.
    """
    source = node.args[0] if node.args else getattr(keyword(node, "f"), "value", None)
    return source is not None and _saved_here(node, ctx.segment(source), ctx)


def _saved_here(node: ast.Call, text: str, ctx: Context) -> bool:
    scope = ctx.scopes.scope_of(node).node
    if any(
        _saves_to(call, text, ctx) and call.lineno < node.lineno
        for call in _per_scope(ctx).saves.get(id(scope), ())
    ):
        return True
    # A cache: `if os.path.exists(path): x = torch.load(path) else: ...; torch.save(x, path)`.
    child: ast.AST = node
    for outer in reversed(ctx.ancestors):
        if (
            isinstance(outer, ast.If)
            and any(s is child for s in outer.body)
            and text in ctx.segment(outer.test)
        ):
            return any(_saves_to(c, text, ctx) for s in outer.orelse for c in ast.walk(s))
        if outer is scope:
            break
        child = outer
    return False


_SAVES = frozenset({"torch.save", "torch.jit.save"})


def _saves_to(call: ast.AST, path: str, ctx: Context) -> bool:
    """Whether ``call`` is ``torch.save(obj, <path>)`` (or ``torch.jit.save``, whose archive
    ``torch.jit.load`` reads), the path spelled as ``path``."""
    return (
        isinstance(call, ast.Call)
        and len(call.args) >= 2
        and ctx.qualname(call.func) in _SAVES
        and ctx.segment(call.args[1]) == path
    )


def only_safe_dicts(name: ast.Name, ctx: Context) -> bool:
    """Whether every binding of ``name`` is a safe dict literal; once per name and scope."""
    known = _SAFE.setdefault(ctx, {})
    key = (id(ctx.scopes.resolve(name.id, name)), name.id)
    if key not in known:  # asked per load: a loop over the bindings each time was quadratic
        found = ctx.scopes.bindings(name.id, name)
        known[key] = bool(found) and all(b.value is not None and _safe_dict(b.value) for b in found)
    return known[key]


_SAFE: weakref.WeakKeyDictionary[Context, dict[tuple[int, str], bool]] = weakref.WeakKeyDictionary()


def _safe_dict(expr: ast.expr) -> bool:
    if isinstance(expr, ast.IfExp):
        return _safe_dict(expr.body) and _safe_dict(expr.orelse)
    if not isinstance(expr, ast.Dict):
        return False
    for key, value in zip(expr.keys, expr.values, strict=True):
        if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
            return False  # `**other` inside the literal, or a computed key
        if key.value == "pickle_module":
            return False
        if key.value == "weights_only" and not (
            isinstance(value, ast.Constant) and value.value is True
        ):
            return False
    return True


def stands_for_plain_object(load: ast.Call, ctx: Context) -> bool:
    """:func:`torchport.check.rules._plain_objects.stands_for_plain_object`, imported on first
    call (it reads project modules; a plain ``check`` of a file without loads needs none of it).
    """
    from torchport.check.rules._plain_objects import stands_for_plain_object as found

    return found(load, ctx)


def parameter_defaulting_to_true(expr: ast.expr, ctx: Context) -> bool:
    """``def load(path, weights_only=True): torch.load(path, weights_only=weights_only)``.

    The name is a parameter of the innermost function around the load, its default is a
    true constant, and the function never rebinds it: called as written, the load is
    safe. A caller that passes ``False`` chooses so at its own call, which names no
    ``torch.load`` (not reported there either: TP302 reads one call at a time).
    """
    if not isinstance(expr, ast.Name):
        return False
    function = next(
        (
            outer
            for outer in reversed(ctx.ancestors)
            if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        ),
        None,
    )
    if function is None:
        return False
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[tuple[ast.arg, ast.expr | None]] = [
        *zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]
    default = next((d for a, d in defaults if a.arg == expr.id), None)
    if not (isinstance(default, ast.Constant) and default.value is True):
        return False
    return not any(
        isinstance(n, ast.Name) and n.id == expr.id and not isinstance(n.ctx, ast.Load)
        for n in ast.walk(function)
    )
