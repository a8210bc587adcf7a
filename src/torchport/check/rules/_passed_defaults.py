"""A parameter default that never runs: every call of the function passes it.

``def _encode(tokens, device="cuda")`` called only as ``_encode(t, device=device)`` (or
``_encode(t, device)``) never uses its default: TP101 leaves it alone. For a function or
class whose name is private to the module (a leading underscore, not a dunder) or nested in
a function this is decided within the file, below. For a public module-level one (``load``,
``Renderer``) it is decided over the file's whole repository by ``rules/_project_calls.py``
(every call there passes it and it does not escape; no repository found: reported). A
method other than ``__init__`` is not followed: a framework may call it by name
(``forward``, a hook, duck typing), so its default is reported.

Left alone only when all of this holds (for a public one, the first and last points and
``_project_calls``'s own in place of the middle two); otherwise the default is reported:

* the function has no decorator (one may keep it, wrap it, register it) but those of
  :data:`SAME_CALL_DECORATORS`, whose wrapper calls the function with the arguments it was
  given and nothing else (below); for a class's ``__init__`` the class has none, no
  metaclass, and no base but ``object`` or ``torch.nn.Module`` (another base, HF's
  ``from_pretrained``, may build ``cls(...)``);
* the name is defined once in its scope (the module, or the enclosing function) and never
  imported, rebound, deleted, declared ``global``/``nonlocal``, read as an attribute
  (``mod._f``), spelled as a string (``__all__``, ``globals()["_f"]``), and the scope calls
  no ``eval``/``exec``/``locals``/``globals``/``vars``;
* every other mention of the name is the callee of a call that passes the parameter: by
  keyword (not a positional-only one), or by position with no ``*args`` at or before it (a
  ``**kwargs`` may or may not hold it: not passed). So ``functools.partial(_f, x)``, ``map(_f,
  xs)``, ``return _f`` and a call omitting it all keep the finding;
* for a class, nothing in it builds an instance without naming it (``cls``, ``type(...)``,
  ``__class__``, ``__init__`` called by hand). A private or nested class's constructions
  are followed further, through its subclasses in the file (``super().__init__(...)``, an
  inherited ``__init__``) and dicts of classes (``_MODELS[name](...)``):
  ``rules/_class_constructions.py``, which states its own points.

A function with no call at all has its default reported (nothing shows it is unused), unless
no code reads the parameter (``rules/_unread_parameters.py``: then no caller matters, and
neither do the decorator, class and name points above but its own); so is a default whose
evaluation needs CUDA (``device=torch.zeros(1).cuda().device``): Python
evaluates it when the ``def`` runs, used or not. Only a constant, ``a if t else b`` of such (a
test calling nothing but ``is_available()``) or ``torch.device(...)`` of constants qualifies.

The decorators known to call the function with its caller's arguments (sample Y, pos 88:
kimi-k3's ``@contextmanager def autocast_ctx(device="cuda")``, every call passing the
device, was reported for the decorator alone), each read in its library's source:
``contextlib.contextmanager``/``asynccontextmanager`` (``helper(*args, **kwds)`` builds
``_GeneratorContextManager(func, args, kwds)``, which calls ``func(*args, **kwds)``);
``functools.cache``/``lru_cache`` (``_lru_cache_wrapper`` calls ``user_function(*args,
**kwds)``, or not at all on a hit); torch's grad modes ``no_grad``, ``enable_grad``,
``inference_mode``, ``set_grad_enabled`` (``_DecoratorContextManager.__call__``:
``func(*args, **kwargs)`` inside the mode), bare or called. Not others: a user's decorator
(``functools.wraps`` or not: it may fill in or drop arguments), ``functools.wraps`` itself,
``staticmethod``/``property``, ``torch.jit.script`` (TorchScript compiles the signature),
``torch.compile`` and ``torch.autocast`` (no sample row needed them; not read).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.rules._unread_parameters import never_read

__all__ = ["SAME_CALL_DECORATORS", "default_never_runs", "parameter_defaulted"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_INTROSPECTION = frozenset({"eval", "exec", "locals", "globals", "vars"})
_BASES = frozenset({"object", "torch.nn.Module", "torch.nn.modules.module.Module"})
_GRAD_MODES = ("no_grad", "enable_grad", "inference_mode", "set_grad_enabled")
_BARE_ONLY = frozenset({"contextlib.contextmanager", "contextlib.asynccontextmanager"})
_BARE_ONLY |= {"functools.cache"}  # each takes the function itself
# decorators whose wrapper calls the function with exactly its caller's arguments (above)
SAME_CALL_DECORATORS = frozenset(
    {
        *("contextlib.contextmanager", "contextlib.asynccontextmanager"),
        *("functools.cache", "functools.lru_cache"),
        *(f"{where}.{mode}" for where in ("torch", "torch.autograd") for mode in _GRAD_MODES),
        *(f"torch.autograd.grad_mode.{mode}" for mode in _GRAD_MODES),
    }
)


def default_never_runs(param: str, ctx: Context) -> bool:
    """Whether the default of ``param`` (of the ``ast.arguments`` being checked, or holding
    the node being checked) never runs."""
    chain = ctx.ancestors[:-1] if isinstance(ctx.parent, ast.arguments) else ctx.ancestors
    if len(chain) < 2 or not isinstance(chain[-1], _FUNCTIONS):
        return False
    func, holder = chain[-1], chain[-2]
    default = dict(_defaults(func.args)).get(param)
    if default is None or not _made_anywhere(default, ctx):
        return False  # a default is evaluated when the `def` runs, used or not
    if never_read(param, func, holder, ctx, SAME_CALL_DECORATORS):
        return True  # no code reads it (`rules/_unread_parameters.py`)
    if not all(_same_call(d, ctx) for d in func.decorator_list):
        return False
    target: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef = func
    if isinstance(holder, ast.ClassDef):
        if func.name != "__init__" or len(chain) < 3:
            return False
        target, holder = holder, chain[-3]
    name = target.name
    nested = isinstance(holder, _FUNCTIONS)
    shift = 1 if target is not func else 0
    positional = [p.arg for p in (*func.args.posonlyargs, *func.args.args)][shift:]
    position = positional.index(param) if param in positional else None
    by_keyword = param not in {p.arg for p in func.args.posonlyargs}
    in_file = nested or (isinstance(holder, ast.Module) and _private(name))
    public = isinstance(holder, ast.Module) and not in_file and not name.startswith("__")
    if isinstance(target, ast.ClassDef) and (in_file or public):
        # subclasses and dicts of classes followed (`rules/_class_constructions.py`); a
        # public class there only where no other file names it, else as any public name
        from torchport.check.rules._class_constructions import every_construction_passes

        def passes(call: ast.Call) -> bool:
            return _passes(call, position, by_keyword, param)

        if every_construction_passes(target, holder, ctx, passes):
            return True
        if in_file:
            return False
    if isinstance(target, ast.ClassDef) and (
        not _plain_class(target, ctx) or _builds_itself(target)
    ):
        return False
    if not in_file:
        if not isinstance(holder, ast.Module) or name.startswith("__"):
            return False
        from torchport.check.rules._project_calls import every_call_passes

        return every_call_passes(
            ctx.path, name, param=param, position=position, by_keyword=by_keyword
        )
    calls = _calls_in(holder, name)
    if not calls:
        return False
    return all(_passes(c, position, by_keyword, param) for c in calls)


def _same_call(decorator: ast.expr, ctx: Context) -> bool:
    """``decorator`` is one of :data:`SAME_CALL_DECORATORS`, bare, or called with constants
    (``@torch.no_grad()``, ``@functools.lru_cache(maxsize=8)``; not ``@lru_cache(g)``
    or ``@torch.no_grad(g)``, which wrap ``g`` and call it with the function)."""
    if isinstance(decorator, ast.Call):
        if not all(
            isinstance(a, ast.Constant)
            for a in (*decorator.args, *(k.value for k in decorator.keywords))
        ):
            return False
        name = ctx.qualname(decorator.func)
        return name in SAME_CALL_DECORATORS and name not in _BARE_ONLY
    return ctx.qualname(decorator) in SAME_CALL_DECORATORS


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def _plain_class(cls: ast.ClassDef, ctx: Context) -> bool:
    """No decorator, no metaclass or keyword, bases only ``object``/``torch.nn.Module``, one
    ``__init__``."""
    if cls.decorator_list or cls.keywords:
        return False
    bases = [ctx.qualname(b) or getattr(b, "id", "") for b in cls.bases]
    if any(b not in _BASES for b in bases):
        return False
    inits = [s for s in cls.body if isinstance(s, _FUNCTIONS) and s.name == "__init__"]
    named = [s for s in cls.body if isinstance(s, (ast.Assign, ast.AnnAssign))]
    return len(inits) == 1 and not any(
        "__init__" in {t.id for t in ast.walk(s) if isinstance(t, ast.Name)} for s in named
    )


def _builds_itself(cls: ast.ClassDef) -> bool:
    """``cls(...)``, ``type(self)(...)``, ``self.__class__(...)`` or ``x.__init__(...)`` (not
    ``super().__init__(...)``)."""
    for node in ast.walk(cls):
        if isinstance(node, ast.Name) and node.id in ("cls", "type"):
            return True
        attr = getattr(node, "attr", None)
        if attr in ("__class__", "__init__") and not _super(node.value):  # type: ignore[attr-defined]
            return True  # `super().__init__()` runs the base's
    return False


def _super(value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and getattr(value.func, "id", None) == "super"


def _calls_in(scope: ast.AST, name: str) -> list[ast.Call] | None:
    """The calls of ``name`` in ``scope``; None when it is mentioned any other way."""
    defined = 0
    callees: dict[int, ast.Call] = {}
    mentions: list[ast.Name] = []
    for node in ast.walk(scope):
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)) and node.name == name:
            defined += 1
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == name:
                callees[id(node.func)] = node
            elif isinstance(node.func, ast.Name) and node.func.id in _INTROSPECTION:
                return None
        elif isinstance(node, ast.Name) and node.id == name:
            mentions.append(node)
        elif _named_otherwise(node, name):
            return None
    if defined != 1:
        return None
    calls = []
    for mention in mentions:
        call = callees.get(id(mention))
        if call is None or not isinstance(mention.ctx, ast.Load):
            return None  # a reference as a value, a rebinding, a `del`
        calls.append(call)
    return calls


def _named_otherwise(node: ast.AST, name: str) -> bool:
    """``global _f``, ``import m as _f``, ``m._f``, ``"_f"``, a parameter ``_f`` (hiding it)."""
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return name in node.names
    if isinstance(node, ast.alias):
        return name in (node.name, node.asname)
    if isinstance(node, ast.Attribute):
        return node.attr == name
    if isinstance(node, ast.Constant):
        return node.value == name
    return isinstance(node, ast.arg) and node.arg == name


def _passes(call: ast.Call, position: int | None, by_keyword: bool, param: str) -> bool:
    """Whether ``call`` surely passes the parameter (by keyword, or at ``position``)."""
    if by_keyword and any(kw.arg == param for kw in call.keywords):
        return True
    if position is None or len(call.args) <= position:
        return False
    return not any(isinstance(a, ast.Starred) for a in call.args[: position + 1])


def _defaults(args: ast.arguments) -> list[tuple[str, ast.expr]]:
    positional = [*args.posonlyargs, *args.args]
    pairs = [*zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)]
    pairs += [
        (p, d) for p, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None
    ]
    return [(p.arg, d) for p, d in pairs]


def parameter_defaulted(node: ast.AST, args: ast.arguments) -> str | None:
    """The parameter whose default ``node`` is (``def f(device=torch.device("cuda"))``)."""
    return next((name for name, default in _defaults(args) if default is node), None)


def _made_anywhere(default: ast.expr, ctx: Context) -> bool:
    """A default whose evaluation (at the ``def``) runs without CUDA: a constant, ``a if t else
    b`` of such, or ``torch.device(...)`` of constants (not ``torch.zeros(1).cuda()``)."""
    if isinstance(default, ast.Constant):
        return True
    if isinstance(default, ast.IfExp):  # its test calls nothing but `is_available()`
        calls = [c for c in ast.walk(default.test) if isinstance(c, ast.Call)]
        if any(getattr(c.func, "attr", None) != "is_available" for c in calls):
            return False
        return _made_anywhere(default.body, ctx) and _made_anywhere(default.orelse, ctx)
    return (
        isinstance(default, ast.Call)
        and ctx.qualname(default.func) == "torch.device"
        and all(
            isinstance(a, ast.Constant)
            for a in (*default.args, *(k.value for k in default.keywords))
        )
    )
