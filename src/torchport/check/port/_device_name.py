"""The one ``device`` name every fix of a port uses in a file, and where it may be written.

A port that moved the model to ``_device`` (the accelerator) and a tensor to the
user's ``device`` (a CUDA-or-CPU string, or a function's local) would split them
on any other accelerator, so a file gets one module-level binding, whatever the
node. It is, in this order: a module-level definition written with the port's own
line; the module's own ``device = <an accelerator choice>`` (what the code it has
already uses); the program's own device chosen on several paths; the program's own
accelerator choice under another name, bound once at module level (``DEVICE =
torch.device("cuda" if ... else "cpu")``); a new definition under the first free name.

Invariant: every device the port writes is the program's own where the program has
one. A program that chose a device it places things with (``.to(device)``, ``device=``,
handed to a call) where a module-level name cannot see it (``device = torch.device("cuda"
if torch.cuda.is_available() else "cpu")`` in ``main()``, a second module-level choice)
gets no new definition where that choice reaches (the function that makes it, what it
calls, the module-level values those read): that device is CUDA or the CPU, the port's
any accelerator, and on MPS or XPU a tensor made on the port's meets the model on the CPU.
There the findings stay, and their messages name the program's choice
(:meth:`DeviceName.kept_for`); code the choice does not reach is ported as before.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._rule import Edit
from torchport.check.semantic import Binding, BindingKind
from torchport.check.semantic._placement import (
    DEVICE_NAMES,
    device_at,
    device_expr,
    means_accelerator,
)

__all__ = ["DeviceName", "same_tree"]

# A device choice under a name of the program's own (``DEVICE``, ``dev``): what it is bound to.
_DEVICE_CALLS = ("torch.device", "torch.accelerator.current_accelerator")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class DeviceName:
    """The file's one device name (chosen on first use) and where fixes may use it."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._name: str | None = None
        self._chosen = False
        self._own = False  # the program's own name, bound on several paths
        self._fresh = False  # the chosen name is a new definition of the port's
        self._adopted: str | None = None  # the program's constant its model is moved to
        # The program's device attribute its model is moved to (`cfg.device`), and that move.
        self._read: tuple[ast.Attribute, ast.Call] | None = None
        self._anywhere = False  # that read is another module's constant (`config.DEVICE`)
        # The program's own device choices it places with, beside a new name of the port's.
        self._placing: list[Binding] = []
        self._reached: dict[int, set[int]] = {}  # id(function) -> ids of functions it reaches
        # (caller, callee) function nodes of the file's own calls: set by the port's facts.
        self.calls: list[tuple[ast.AST, ast.AST]] = []

    def at(self, node: ast.AST) -> tuple[str, tuple[Edit, ...]] | None:
        """The name usable at ``node`` and the edits defining it (None: no fix here).

        A node where the binding is not usable (code above the user's definition,
        a function with its own ``device``) gets no fix: its finding stays.
        """
        if not self._chosen:
            self._name, self._chosen = self._choose(), True
        if self._read is not None:
            return (ast.unparse(self._read[0]), ()) if self._same_read(node) else None
        name = self._name
        if name is None or self.kept_for(node) is not None:
            return None
        scopes = self.ctx.scopes
        if self._own:
            if scopes.resolve(name, node) is scopes.module and scopes.definitely_bound(name, node):
                return name, ()
            return None
        found = device_at(self.ctx, node, (name,))
        if found is None or scopes.resolve(name, node) is not scopes.module:
            return None  # a function's own `device` may mean something else
        return found

    def _choose(self) -> str | None:
        body = self.ctx.tree.body
        ours: ast.expr = ast.parse(device_expr(self.ctx.torch_name())).body[0].value  # type: ignore[attr-defined]
        defined: dict[str, ast.expr] = {}
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name) and target.id in DEVICE_NAMES:
                    defined.setdefault(target.id, stmt.value)
        for name in DEVICE_NAMES:
            if name in defined and same_tree(defined[name], ours):
                return name
        scopes = self.ctx.scopes
        for name in DEVICE_NAMES:
            if name in defined and means_accelerator(defined[name], self.ctx):
                found = scopes.module.bindings.get(name, [])
                if len(found) == 1:
                    return name  # the user's own choice, bound once at module level
        for name in DEVICE_NAMES:
            # The program's own device, chosen on several paths (`device = cpu` then
            # `if args.cuda: device = ...`, a gloo branch): the port's moves use it.
            found = scopes.module.bindings.get(name, [])
            if found and all(
                b.kind is BindingKind.ASSIGN and b.value is not None and self._device_value(b.value)
                for b in found
            ):
                self._own = True
                return name
        chosen = self._program_choices(ours)
        reused = [
            b
            for b in chosen
            if b.scope is scopes.module
            and len(scopes.module.bindings.get(b.name, ())) == 1
            and means_accelerator(b.value, self.ctx)  # type: ignore[arg-type]
        ]
        if len(reused) == 1 and len({b.name for b in chosen if b.scope is scopes.module}) == 1:
            self._own = True  # `DEVICE = torch.device("cuda" if ... else "cpu")`: used as is
            return reused[0].name
        # No second device where the program's own reaches (module docstring): kept_for.
        self._placing = [b for b in chosen if self._places(b)]
        for name in DEVICE_NAMES:
            if not scopes.module.bindings.get(name) and not scopes.module_reads(name):
                self._fresh = True
                return name  # free: a new module-level definition
        return None

    def chooses(self, name: str) -> bool:
        """Whether ``name`` is bound somewhere to a device choice this reads as the program's."""
        ours: ast.expr = ast.parse(device_expr(self.ctx.torch_name())).body[0].value  # type: ignore[attr-defined]
        return any(b.name == name for b in self._program_choices(ours))

    def adopt(self, name: str) -> bool:
        """Make ``name`` (a module-level name bound once to a device value that the program
        moves its model to: ``DEVICE = "cpu"``) the name the port's moves use, where the
        program has no other device choice and the port would otherwise define a new name.
        False: not sure which device the moves would need (the caller reports them)."""
        if not self._chosen:
            self._name, self._chosen = self._choose(), True
        if self._own:
            return self._name == name
        if not self._fresh or self._placing:
            return False
        ours: ast.expr = ast.parse(device_expr(self.ctx.torch_name())).body[0].value  # type: ignore[attr-defined]
        if any(b.name != name for b in self._program_choices(ours)):
            return False
        self._name, self._own, self._fresh, self._adopted = name, True, False, name
        return True

    def would_add(self) -> bool:
        """Whether the port's moves would use a new device definition of its own."""
        if not self._chosen:
            self._name, self._chosen = self._choose(), True
        return self._fresh or self._read is not None or self._adopted is not None

    def adopt_read(self, read: ast.Attribute, move: ast.Call, *, anywhere: bool = False) -> bool:
        """Make ``read`` (``cfg.device``, ``self.device``: a device attribute the program
        moves its model to, at ``move``) what the port's moves write where it is the same
        value (:meth:`_same_read`), where the program has no other device choice. Elsewhere
        the findings stay, naming it. False: not sure (the caller reports every move).
        ``anywhere``: ``read`` is a constant another module of the project binds once
        (``config.DEVICE``, ``_imported_devices``), the same value wherever its module's
        import is bound."""
        if not self._chosen:
            self._name, self._chosen = self._choose(), True
        if self._read is not None:
            return ast.unparse(self._read[0]) == ast.unparse(read)
        if not self._fresh or self._placing or self._program_choices(self._ours()):
            return False
        self._read, self._anywhere = (read, move), anywhere
        return True

    def _same_read(self, node: ast.AST) -> bool:
        """Whether the adopted read means the model's device at ``node``: ``cfg.device`` in
        the function that moved the model, ``cfg`` bound once there and never handed to a
        call, ``cfg.device`` stored only before ``node``; ``self.device`` in a method of the
        class (``self`` its first parameter), stored only in ``__init__``."""
        assert self._read is not None
        read, move = self._read
        base, attr = read.value.id, read.attr  # type: ignore[attr-defined]
        scopes = self.ctx.scopes
        if self._anywhere:
            return scopes.resolve(base, node) is scopes.module and scopes.definitely_bound(
                base, node
            )
        home, here = scopes.scope_of(move), scopes.scope_of(node)
        if base == "self":
            cls = scopes.parent(home.node)
            method = here.node
            if not isinstance(cls, ast.ClassDef) or scopes.parent(method) is not cls:
                return False
            params = getattr(getattr(method, "args", None), "args", [])
            if not params or params[0].arg != "self" or scopes.resolve("self", node) is not here:
                return False
            inits = {id(m) for m in cls.body if isinstance(m, _FUNCTIONS) and m.name == "__init__"}
            stores = [s for s in ast.walk(cls) if _stores(s, base, attr)]
            owners = {id(self._function_of(s)) for s in stores}
            if not owners <= inits:
                return False
            return id(method) not in inits or all(_line(s) < _line(node) for s in stores)
        if here is not home or scopes.resolve(base, node) is not home:
            return False
        if len(home.bindings.get(base, ())) != 1 or not scopes.definitely_bound(base, node):
            return False
        for sub in ast.walk(home.node):
            if isinstance(sub, ast.Call) and any(
                isinstance(a, ast.Name) and a.id == base
                for a in [*sub.args, *(k.value for k in sub.keywords)]
            ):
                return False  # handed on: a callee may set it
            if _stores(sub, base, attr) and _line(sub) >= _line(node):
                return False
        return True

    def _ours(self) -> ast.expr:
        stmt = ast.parse(device_expr(self.ctx.torch_name())).body[0]
        assert isinstance(stmt, ast.Expr)
        return stmt.value

    def adopted(self, expr: ast.expr) -> bool:
        """Whether ``expr`` reads the program's device that :meth:`adopt` took (the model's:
        where it names the CPU, what is moved there meets the model there)."""
        if self._read is not None and isinstance(expr, ast.Attribute):
            return ast.unparse(expr) == ast.unparse(self._read[0])
        return isinstance(expr, ast.Name) and expr.id == self._adopted

    def _program_choices(self, ours: ast.expr) -> list[Binding]:
        """The program's own device choices, in source order: names bound to a device (a
        device name to any device value, another name to ``torch.device(...)`` or the
        accelerator, not to the CPU alone: ``CPU = torch.device("cpu")`` is where host copies
        go), in any scope, other than the port's own line."""
        found: list[Binding] = []
        for scope in self.ctx.scopes.scopes.values():
            for name, bound in scope.bindings.items():
                for b in bound:
                    value = b.value
                    if b.kind is not BindingKind.ASSIGN or value is None or same_tree(value, ours):
                        continue
                    if name in DEVICE_NAMES:
                        if self._device_value(value):
                            found.append(b)
                    elif self._names_a_device(value):
                        found.append(b)
        found.sort(key=lambda b: (getattr(b.node, "lineno", 0), getattr(b.node, "col_offset", 0)))
        return found

    def kept_for(self, node: ast.AST) -> Binding | None:
        """The program's own device choice that code at ``node`` runs under, where the port's
        name would be a new one (None: none). A choice made in function ``F`` governs what
        ``F`` reaches through the file's own calls, and a module-level value bound at
        ``node`` that such a function reads (``MEAN`` read in ``norm``, called from ``main``)."""
        if not self._chosen:
            self._name, self._chosen = self._choose(), True
        if not self._placing or self._own:
            return None
        scopes = self.ctx.scopes
        inner: ast.AST | None = node
        while inner is not None and not isinstance(inner, _FUNCTIONS):
            inner = scopes.parent(inner)
        if inner is not None:
            used = {id(inner)}
        else:  # module level: where the names it binds are read
            top = scopes.top_statement(node)
            targets = getattr(top, "targets", None) or [getattr(top, "target", None)]
            names = [t.id for t in targets if isinstance(t, ast.Name)]  # (`X: T = ...` too)
            used = {id(f) for n in names for r in scopes.reads_of(n, scopes.module)
                    if (f := self._function_of(r)) is not None}  # fmt: skip
        for kept in self._placing:
            if used & self._reach(kept.scope.node):
                return kept
        return None

    def kept_message(self, node: ast.AST) -> str | None:
        """A finding's message at ``node`` naming the program's own choice (:meth:`kept_for`)."""
        if self._read is not None:
            read, move = self._read
            text = ast.unparse(read)
            return (
                f"the program moves its model to `{text}` (line {move.lineno}), which is not "
                f"sure to be the same value here; the port adds no second device beside it: "
                f"make or move this on the model's device (`.to(x.device)` where it meets "
                f"the model's output `x`)"
            )
        kept = self.kept_for(node)
        return None if kept is None else _kept_words(kept)

    def _function_of(self, node: ast.AST) -> ast.AST | None:
        """The innermost function holding ``node`` (None: module level)."""
        inner = self.ctx.scopes.parent(node)
        while inner is not None and not isinstance(inner, _FUNCTIONS):
            inner = self.ctx.scopes.parent(inner)
        return inner

    def _reach(self, function: ast.AST) -> set[int]:
        """``function`` and every function of the file it calls, through its callees too."""
        found = self._reached.get(id(function))
        if found is None:
            found = {id(function)}
            todo = [function]
            while todo:
                caller = todo.pop()
                for source, callee in self.calls:
                    if source is caller and id(callee) not in found:
                        found.add(id(callee))
                        todo.append(callee)
            self._reached[id(function)] = found
        return found

    def _places(self, binding: Binding) -> bool:
        """Whether the program places something with this choice: a read of it handed to a
        call (``.to(device)``, ``device=device``, ``train(model, loader, device)``), not only
        printed or returned."""
        scopes = self.ctx.scopes
        for read in scopes.reads_of(binding.name, binding.scope):
            up = scopes.parent(read)
            if isinstance(up, ast.keyword):
                up = scopes.parent(up)
            if isinstance(up, ast.Call) and up.func is not read and not _printed(up):
                return True
        return False

    def _names_a_device(self, value: ast.expr) -> bool:
        """``torch.device(..)`` (not of ``"cpu"`` alone), the accelerator, an accelerator choice."""
        if isinstance(value, ast.Call) and self.ctx.qualname(value.func) in _DEVICE_CALLS:
            first = value.args[0] if value.args else None
            return not (isinstance(first, ast.Constant) and first.value == "cpu")
        return isinstance(value, ast.IfExp) and means_accelerator(value, self.ctx)

    def _device_value(self, value: ast.expr) -> bool:
        """A value a device name is bound to: ``torch.device(..)``, the accelerator, a choice."""
        if isinstance(value, ast.IfExp):
            return self._device_value(value.body) and self._device_value(value.orelse)
        if isinstance(value, ast.Constant):
            return isinstance(value.value, str)
        return (
            isinstance(value, ast.Call)
            and self.ctx.qualname(value.func)
            in ("torch.device", "torch.accelerator.current_accelerator")
        ) or means_accelerator(value, self.ctx)


def same_tree(a: object, b: object) -> bool:
    """Whether two trees are the same code: ``ast.dump(a) == ast.dump(b)``, positions aside.

    Written out because ``ast.dump`` formats through a closure that calls itself: each
    call leaves a reference cycle for the collector, and a file's analysis leaves none.
    Leaf values compare by type and ``repr`` as ``dump`` shows them (``1`` is not ``True``).
    """
    if isinstance(a, ast.AST):
        if type(a) is not type(b):
            return False
        return all(same_tree(getattr(a, name, None), getattr(b, name, None)) for name in a._fields)
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(same_tree(x, y) for x, y in zip(a, b, strict=True))
        )
    return type(a) is type(b) and repr(a) == repr(b)


def _stores(node: ast.AST, base: str, attr: str) -> bool:
    """``base.attr = ...`` (any assignment target, ``setattr(base, "attr", ...)``)."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
        return node.attr == attr and isinstance(node.value, ast.Name) and node.value.id == base
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setattr":
        first = node.args[0] if node.args else None
        return isinstance(first, ast.Name) and first.id == base
    return False


def _line(node: ast.AST) -> int:
    return getattr(node, "lineno", 0)


def _printed(call: ast.Call) -> bool:
    """``print(device)``, ``logger.info(...)``, ``str(device)``: a read that places nothing."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("print", "str", "repr", "format", "info", "debug", "warning", "log")


def _kept_words(kept: Binding) -> str:
    """A finding's message where the port adds no device beside the program's own ``kept``."""
    where = kept.scope.node
    owner = f", in `{where.name}`" if isinstance(where, _FUNCTIONS) else ""
    line = getattr(kept.node, "lineno", 0)
    return (
        f"the program chose its own device (`{kept.name}`, line {line}{owner}); the port adds "
        f"no second one beside it: make or move this where `{kept.name}` is chosen "
        f"(`device={kept.name}`, `.to({kept.name})`), or move it with `.to(x.device)` where "
        "it meets a tensor `x`"
    )
