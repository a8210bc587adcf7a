"""Whether everything a device choice is used with follows it: may a fix move the device?

A fix that changes the device a choice picks (``"cuda" if
torch.cuda.is_available() else "cpu"`` becomes ``torch.accelerator``'s pick)
changes where every value placed through it lives, on the machines where the
old choice said "cpu" and the new one names another accelerator (a Mac's MPS).
The program keeps working there only if whatever meets those values moves with
them. The invariant such a fix keeps:

    After the fix, on any machine, every tensor and module that meets a value
    placed through the device is placed through it too.

:func:`why_not_followed` proves it for one file, or says what it cannot prove:

* the choice is bound to one plain name (or used once, in place), never to an
  attribute (``self.device``), which code this file does not show may read;
* every use of that name, of names it is copied to and of the parameters of
  this file's functions it is passed to, places something (``.to(device)``,
  ``device=device`` of torch's calls, ``map_location=device``), is shown
  (``print``, logging, f-strings), or is compared with ``"cuda"`` (an answer
  that is the same on the CPU and on any other accelerator);
* nothing in the file reaches CUDA another way: no ``.cuda()``, no ``"cuda"``
  string, no other ``torch.cuda`` test, no CUDA tensor type;
* every module the file builds (not counting the layers built inside a class
  or inside another module's constructor) is moved through the device;
* every call that gets a placed value calls torch, another library, a builtin,
  one of this file's functions (whose own calls are then held to the same
  test), a method of a value, or a module that is moved through the device
  (a parameter qualifies when every caller in the file hands in a moved
  module); never a module held by an object (``self.model``);
* no tensor is made on the CPU (``torch.ones(2)``) in a function where placed
  values are used, unless it is moved through the device itself.

The answer is syntactic and errs on "cannot prove": the rule then reports the
choice without a fix.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Iterator

from torchport.check.semantic._binding import Binding, BindingKind, Scope, ScopeKind
from torchport.check.semantic._cuda_mentions import cuda_mentions, snippet
from torchport.check.semantic._residence import CPU_FACTORIES

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context
    from torchport.check.semantic._scope import ScopeMap

__all__ = ["why_not_followed"]

ModelTest = Callable[[ast.Call], bool]
_Def = ast.FunctionDef | ast.AsyncFunctionDef

_PLACING_KEYWORDS = frozenset({"device", "map_location"})
_SHOWN = frozenset(
    {"print", "info", "debug", "warning", "warn", "log", "write", "echo", "secho",
     "set_postfix", "add_text"}
)  # fmt: skip
# Calls whose result is the device again, in words: `str(device) == "cuda"` is a use of it.
_SPELLED = frozenset({"str", "repr", "format"})
# Module methods that return the module itself: `Net().eval().to(device)` moves `Net()`.
_SAME_MODULE = frozenset(
    {"to", "eval", "train", "float", "half", "double", "bfloat16", "requires_grad_"}
)  # fmt: skip
_OBJECTS = frozenset({"self", "cls"})
_DEPTH = 3
_HOPS = 4


def _shown(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in _SHOWN


class _Follow:
    """One proof attempt: the device's uses, what they place, and the rest of the file."""

    def __init__(self, ctx: Context, choice: ast.expr, makes_model: ModelTest) -> None:
        self.ctx = ctx
        self.scopes = ctx.scopes
        self.choice = choice
        self.makes_model = makes_model
        self.placed: set[int] = set()  # ids of `x.to(device)`, `torch.zeros(2, device=device)`
        self.receivers: set[int] = set()  # ids of the `x` of each placing `x.to(device)`
        self.moved: set[tuple[int, str]] = set()  # (scope node id, name) of `name.to(device)`
        self.params: set[tuple[int, str]] = set()  # parameters handed placed values
        self.where: set[int] = set()  # ids of the scope nodes where placed values are used
        self.calls: list[ast.Call] = ctx.scopes.nodes_of(ast.Call)  # type: ignore[assignment]

    # ------------------------------------------------------------ the device's uses

    def uses(self, expr: ast.expr, depth: int = 0) -> str | None:
        """Why the device value ``expr`` (a read of it, or the choice itself) is used unsafely."""
        parent = self.scopes.parent(expr)
        self.where.add(id(self.scopes.scope_of(expr).node))
        if isinstance(parent, ast.keyword):
            call = self.scopes.parent(parent)
            assert isinstance(call, ast.Call)
            if parent.arg in _PLACING_KEYWORDS and self._takes_device(call):
                self._place(call)
                return None
            return self._into_function(call, parent.arg, depth)
        if isinstance(parent, ast.Call) and expr is not parent.func:
            func = parent.func
            if isinstance(func, ast.Attribute) and func.attr == "to" and parent.args[0] is expr:
                self._place(parent)
                return None
            if self.ctx.qualname(func) == "torch.device" and len(parent.args) == 1:
                return self.uses(parent, depth)  # `torch.device(device)`: the same device
            if _shown(parent):
                return None
            if isinstance(func, ast.Name) and func.id in _SPELLED and len(parent.args) == 1:
                return self.uses(parent, depth)  # `str(device)`: the device, spelled out
            position = next(i for i, a in enumerate(parent.args) if a is expr)
            return self._into_function(parent, position, depth)
        if isinstance(parent, ast.FormattedValue):
            return None
        if isinstance(parent, ast.Attribute) and parent.attr == "type":
            return self._compared(parent, shown_too=True)
        if isinstance(parent, ast.Compare):
            return self._compared(expr)
        if isinstance(parent, ast.Assign) and parent.value is expr:
            return self._copied(parent, depth)
        if isinstance(parent, ast.Dict) and expr in parent.values:
            key = parent.keys[parent.values.index(expr)]
            where = f"under `{self._show(key)}`" if key is not None else "unpacked"
            return f"the device is stored in a dict {where}"
        return f"the device is used in `{self._show(parent or expr)}`"

    def _place(self, call: ast.Call) -> None:
        self.placed.add(id(call))
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "to":
            self.receivers.add(id(func.value))
            if isinstance(func.value, ast.Name):
                self.moved.add((id(self.scopes.scope_of(call).node), func.value.id))

    def _takes_device(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and (func.attr == "to" or func.attr.startswith("new_")):
            return True
        return self.scopes.is_torch_call(call)

    def _compared(self, expr: ast.expr, *, shown_too: bool = False) -> str | None:
        """``device == "cuda"`` (False on the CPU and any other accelerator alike), ``is None``."""
        parent = self.scopes.parent(expr)
        if isinstance(parent, ast.Compare) and len(parent.ops) == 1:
            other = parent.comparators[0] if parent.left is expr else parent.left
            cuda = isinstance(other, ast.Constant) and other.value == "cuda"
            if cuda and isinstance(parent.ops[0], (ast.Eq, ast.NotEq)):
                return None
            none = isinstance(other, ast.Constant) and other.value is None
            if none and isinstance(parent.ops[0], (ast.Is, ast.IsNot)):
                return None  # no choice is None, before or after
        if shown_too and (
            isinstance(parent, ast.FormattedValue)
            or (isinstance(parent, ast.Call) and _shown(parent))
        ):
            return None
        return f"the device decides `{self._show(parent or expr)}`, which may change"

    def _copied(self, assign: ast.Assign, depth: int) -> str | None:
        """``dev = device``: the uses of ``dev`` are the device's uses."""
        target = assign.targets[0] if len(assign.targets) == 1 else None
        if not isinstance(target, ast.Name):
            return f"the device is stored in `{self._show(assign.targets[0])}`"
        binding = self.only_binding(target)
        if binding is None:
            return f"`{target.id}` is bound more than once"
        return self.reads(binding, depth + 1)

    def _into_function(self, call: ast.Call, slot: int | str | None, depth: int) -> str | None:
        """The device passed to a function of this file: its parameter's uses are the device's."""
        func = self._own_function(call.func)
        shown = self._show(call.func)
        if func is None or depth >= _DEPTH or slot is None:
            return f"the device is passed to `{shown}`, which this file cannot follow"
        node, scope = func
        if isinstance(slot, int):
            params = [*node.args.posonlyargs, *node.args.args]
            if slot >= len(params):
                return f"the device is passed to `{shown}`, which this file cannot follow"
            slot = params[slot].arg
        found = scope.bindings.get(slot, [])
        if len(found) != 1 or found[0].kind is not BindingKind.PARAMETER:
            return f"the device is passed to `{shown}`, which this file cannot follow"
        return self.reads(found[0], depth + 1)

    def reads(self, binding: Binding, depth: int) -> str | None:
        """Check every read of the name ``binding`` binds (its only binding)."""
        for read in self._reads_of(binding):
            why = self.uses(read, depth)
            if why is not None:
                return why
        return None

    def _reads_of(self, binding: Binding) -> Iterator[ast.Name]:
        yield from self.scopes.reads_of(binding.name, binding.scope)  # indexed once per file

    def only_binding(self, target: ast.Name) -> Binding | None:
        """The one assignment that binds ``target``'s name in a module or function, if it is one.

        A parameter of the same name may bind it too (``if device is None: device
        = ...``): what a caller passes is the caller's choice, which no fix changes.
        """
        found = self.scopes.bindings(target.id, target)
        assigned = [b for b in found if b.kind is not BindingKind.PARAMETER]
        if len(assigned) != 1 or assigned[0].kind is not BindingKind.ASSIGN:
            return None
        if target.id in _declared_global_anywhere(self.scopes):
            return None
        kinds = (ScopeKind.MODULE, ScopeKind.FUNCTION)
        return assigned[0] if assigned[0].scope.kind in kinds else None

    # ------------------------------------------------------------ the rest of the file

    def other_ways_to_cuda(self) -> str | None:
        """A ``.cuda()``, a ``"cuda"`` device, a CUDA test or type that the fix does not change."""
        inside = {id(n) for n in ast.walk(self.choice)}
        for node, why in cuda_mentions(self.ctx):
            if id(node) not in inside:
                return why
        return None

    def models_follow(self) -> str | None:
        """Every module the file builds is moved through the device."""
        for call in self.calls:
            if not self.makes_model(call) or self._part_of_another(call):
                continue
            if not self._moved_here(call):
                return f"`{self._show(call)}` is built here and not moved to the device"
        return None

    def callees_follow(self) -> str | None:
        """Placed values meet only torch, libraries, this file's functions and moved modules."""
        seen: set[int] = set()
        while True:
            grown = False
            for call in self.calls:
                if id(call) in seen or id(self.scopes.scope_of(call).node) not in self.where:
                    continue
                args = [*call.args, *(k.value for k in call.keywords)]
                if not any(self._is_placed(a) for a in args):
                    continue
                seen.add(id(call))
                why = self._callee_follows(call)
                if why is not None:
                    return why
                grown = True
            if not grown:
                return None

    def no_cpu_tensors(self) -> str | None:
        """No tensor is made on the CPU where values placed through the device are used."""
        for call in self.calls:
            if self.ctx.qualname(call.func) not in CPU_FACTORIES or id(call) in self.placed:
                continue
            if id(self.scopes.scope_of(call).node) not in self.where or self._moved_here(call):
                continue
            return f"`{self._show(call)}` is made on the CPU beside values on the device"
        return None

    # ------------------------------------------------------------ helpers

    def _callee_follows(self, call: ast.Call) -> str | None:
        func = call.func
        if self.ctx.qualname(func) is not None:
            return None  # torch's own, or a library that takes tensors where they are
        if isinstance(func, ast.Attribute):
            root: ast.expr = func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in _OBJECTS:
                return f"`{self._show(func)}` gets values on the device and may not be on it"
            return None  # a method of a value: `out.eq(y)`, `OUT.append(x)`
        if not isinstance(func, ast.Name):
            return f"`{self._show(func)}` gets values on the device and may not be on it"
        found = self.scopes.bindings(func.id, func)
        if not found or all(b.kind in (BindingKind.CLASS, BindingKind.IMPORT) for b in found):
            return None  # a builtin, a class, an import
        own = self._own_function(func)
        if own is not None:
            self._hand_in(call, own)
            return None
        if self._moved_model(func):
            return None
        value = self.scopes.value_of(func)
        if isinstance(value, ast.Call) and not self.makes_model(value):
            made_by = self.ctx.qualname(value.func) or ""
            if made_by.startswith("torch.nn."):
                return None  # `criterion = nn.CrossEntropyLoss()`: a module holding no tensors
        if len(found) == 1 and found[0].kind is BindingKind.PARAMETER:
            return self._every_caller_moves(found[0])
        return f"`{func.id}` gets values on the device and may not be on it"

    def _hand_in(self, call: ast.Call, func: tuple[_Def, Scope]) -> None:
        """Placed values passed to this file's function: its body is checked too."""
        node, _ = func
        self.where.add(id(node))
        params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
        for i, arg in enumerate(call.args):
            if i < len(params) and self._is_placed(arg):
                self.params.add((id(node), params[i]))
        for kw in call.keywords:
            if kw.arg is not None and self._is_placed(kw.value):
                self.params.add((id(node), kw.arg))

    def _every_caller_moves(self, param: Binding) -> str | None:
        """A parameter called with placed values: every caller hands in a module moved here."""
        node = param.scope.node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return f"`{param.name}` gets values on the device and may not be on it"
        params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
        index = params.index(param.name) if param.name in params else -1
        callers = [c for c in self.calls if getattr(c.func, "id", None) == node.name]
        if not callers:
            return f"`{param.name}` of `{node.name}` comes from callers this file does not show"
        for call in callers:
            given = next((k.value for k in call.keywords if k.arg == param.name), None)
            if given is None and 0 <= index < len(call.args):
                given = call.args[index]
            if given is None or not self._moved_model(given):
                return f"`{param.name}` of `{node.name}` may get a module that is not on the device"
        return None

    def _moved_model(self, expr: ast.expr) -> bool:
        """A module moved through the device: ``Net().to(device)``, or a name bound to one."""
        for _ in range(_HOPS):
            if isinstance(expr, ast.Name):
                if self._every_binding_moved(expr):
                    return True
                value = self.scopes.value_of(expr)
                if value is None:
                    return False
                expr = value
                continue
            if isinstance(expr, ast.Call):
                return id(expr) in self.placed or (
                    self.makes_model(expr) and self._moved_here(expr)
                )
            return False
        return False

    def _every_binding_moved(self, name: ast.Name) -> bool:
        """A module name moved through the device in its scope: ``net.to(device)``.

        Modules move in place, so whichever binding a call of the name sees
        (``net = Net()``, ``net = net.to(device)``, ``net = DataParallel(net)``)
        holds the moved module, as long as each binding is made by a call (not
        a parameter or a loop, whose values come from elsewhere).
        """
        found = self.scopes.bindings(name.id, name)
        if not found or (id(found[0].scope.node), name.id) not in self.moved:
            return False
        return all(isinstance(b.value, ast.Call) for b in found)

    def _is_placed(self, expr: ast.expr) -> bool:
        """``x.to(device)``, a name bound to one, a parameter given one, a moved model's output."""
        for _ in range(_HOPS):
            if id(expr) in self.placed:
                return True
            if isinstance(expr, ast.Name):
                # A parameter given placed values by a caller; not `x` of a later `x.to(device)`.
                if (id(self.scopes.scope_of(expr).node), expr.id) in self.params:
                    return True
                value = self.scopes.value_of(expr)
                if value is None:
                    return False
                expr = value
                continue
            # `net(x)` where `net` is on the device
            return isinstance(expr, ast.Call) and self._moved_model(expr.func)
        return False

    def _moved_here(self, node: ast.AST) -> bool:
        """``node`` is moved through the device: directly, through module methods, or by name."""
        cur: ast.AST = node
        for _ in range(6):
            if id(cur) in self.receivers or id(cur) in self.placed:
                return True
            up = self.scopes.parent(cur)
            if isinstance(up, ast.Attribute) and up.attr in _SAME_MODULE:
                above = self.scopes.parent(up)
                if above is None:
                    return False
                cur = above  # the call `cur.eval()`
                continue
            if isinstance(up, ast.Assign) and up.value is cur and len(up.targets) == 1:
                target = up.targets[0]
                scope = id(self.scopes.scope_of(node).node)
                return isinstance(target, ast.Name) and (scope, target.id) in self.moved
            return False
        return False

    def _part_of_another(self, call: ast.Call) -> bool:
        """A layer built inside a class or handed to another module's constructor."""
        if self.scopes.scope_of(call).kind is ScopeKind.CLASS or any(
            isinstance(s.node, ast.ClassDef) for s in self._enclosing(call)
        ):
            return True
        cur: ast.AST | None = self.scopes.parent(call)
        while isinstance(cur, (ast.List, ast.Tuple, ast.Starred, ast.keyword, ast.Dict)):
            cur = self.scopes.parent(cur)
        return isinstance(cur, ast.Call) and cur is not call and self.makes_model(cur)

    def _enclosing(self, node: ast.AST) -> Iterator[Scope]:
        scope: Scope | None = self.scopes.scope_of(node)
        while scope is not None:
            yield scope
            scope = scope.parent

    def _own_function(self, func: ast.expr) -> tuple[_Def, Scope] | None:
        if not isinstance(func, ast.Name):
            return None
        found = self.scopes.bindings(func.id, func)
        if len(found) != 1 or found[0].kind is not BindingKind.DEF:
            return None
        node = found[0].node
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        return node, self.scopes.scopes[id(node)]

    def _show(self, node: ast.AST) -> str:
        return snippet(node, self.ctx)


def _defaulted(arguments: ast.arguments, default: ast.expr) -> str | None:
    """The parameter whose default ``default`` is."""
    positional = [*arguments.posonlyargs, *arguments.args]
    for param, value in zip(
        positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True
    ):
        if value is default:
            return param.arg
    for param, kw_value in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        if kw_value is default:
            return param.arg
    return None


def why_not_followed(choice: ast.expr, ctx: Context, makes_model: ModelTest) -> str | None:
    """Why a fix that moves the device ``choice`` picks could leave something behind; None if not.

    ``choice`` is the whole choice expression (``"cuda" if ... else "cpu"``, or
    the ``torch.device(...)`` around it). ``makes_model`` says whether a call
    builds an ``nn.Module`` (the port's model knowledge). See the module
    docstring for what is proved.
    """
    follow = _Follow(ctx, choice, makes_model)
    scopes = ctx.scopes
    parent = scopes.parent(choice)
    if isinstance(parent, ast.arguments):  # `def f(device="cuda" if ... else "cpu")`
        param = _defaulted(parent, choice)
        function = scopes.parent(parent)
        inner = scopes.scopes.get(id(function)) if function is not None else None
        found = inner.bindings.get(param, []) if inner is not None and param else []
        if len(found) != 1:
            return "the default's parameter is bound again in its function"
        why = follow.reads(found[0], 0)
    elif isinstance(parent, ast.Assign) and parent.value is choice:
        target = parent.targets[0] if len(parent.targets) == 1 else None
        if not isinstance(target, ast.Name):
            shown = follow._show(parent.targets[0])
            return f"the device is kept in `{shown}`, which code this file does not show may read"
        binding = follow.only_binding(target)
        if binding is None:
            return f"`{target.id}` is bound more than once or outside one function"
        why = follow.reads(binding, 0)
    else:
        why = follow.uses(choice)
    return (
        why
        or follow.other_ways_to_cuda()
        or follow.models_follow()
        or follow.callees_follow()
        or follow.no_cpu_tensors()
    )


def _declared_global_anywhere(scopes: ScopeMap) -> frozenset[str]:
    """The names some function of the file declares ``global``, gathered once per file.

    Asked for every device choice: a scan of every scope each time was quadratic in
    the file's functions.
    """
    found = _GLOBALS.get(scopes)
    if found is None:
        found = _GLOBALS[scopes] = frozenset(
            name for scope in scopes.scopes.values() for name in scope.declared_global
        )
    return found


_GLOBALS: weakref.WeakKeyDictionary[ScopeMap, frozenset[str]] = weakref.WeakKeyDictionary()
