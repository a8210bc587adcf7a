"""Who calls each function of the file, what its parameters hold, what it returns.

The flow half of the port's value kinds that crosses function boundaries: a
parameter holds what every call site in the file passes (a function called
from nowhere, or used another way, has parameters of unknown kind; one its whole
repository calls nowhere holds nothing: :meth:`CallerKinds.never_called`), and a call
of a function of the file gives what its ``return`` statements give (of a project
module's function, the CPU tensors its tuples hold: :meth:`CallerKinds.returned_items`).
:class:`~torchport.check.port._kinds.ValueKinds` makes one and gives it the
kind of an expression (``kind_of``: its
:meth:`~torchport.check.port._kinds.ValueKinds.of`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from torchport.check._context import Context
from torchport.check.port._call_arguments import parameter_default
from torchport.check.port._call_sites import (
    method_of_receiver,
    overrides,
    partial_target,
    shows_items,
)
from torchport.check.port._device_flow import names_of
from torchport.check.port._facts import PortFacts, PortScope
from torchport.check.port._handed_on import rest_items, rest_of
from torchport.check.port._value_kind import Elements, Kind, flat, join, memoized
from torchport.check.semantic import BindingKind, ScopeMap

__all__ = ["CallerKinds", "hands_back"]

_TENSOR_ANNOTATIONS = frozenset({"Tensor", "FloatTensor", "LongTensor"})
_PLAIN_ANNOTATIONS = frozenset({"int", "float", "str", "bool", "bytes", "None"})
_NONE = ast.Constant(None)  # what a bare `return` gives


class CallerKinds:
    """Parameters, call sites and returns of one file's functions.

    ``kind_of`` is what an expression evaluates to where it stands (asked of
    the arguments a call site passes and the values a function returns).
    """

    def __init__(self, facts: PortFacts, kind_of: Callable[[ast.expr], Kind]) -> None:
        self.facts = facts
        self.ctx: Context = facts.ctx
        self.scopes: ScopeMap = facts.ctx.scopes
        self.kind_of = kind_of
        self._memo: dict[int, object] = {}  # parameter and return kinds, by node id
        self._returns_of: dict[int, list[ast.expr] | None] = {}
        self._sites: dict[int, list[tuple[ast.Call, PortScope]] | None] | None = None
        self._given: dict[int, frozenset[Kind]] = {}  # parameter -> the kinds its calls pass
        self._never: dict[int, bool] = {}  # function -> called nowhere in its repository
        # What iterating a value yields (`_elements.ElementKinds.elements`, which sets it)
        self.elements: Callable[[], Callable[[ast.expr], Elements] | None] | None = None

    def returned_items(self, func: ast.Name) -> Elements | None:
        """Per position, what a function of the file returns when it returns tuples only; of a
        project module's function imported by name, the CPU tensors it returns at known
        positions (``_module_functions.tensor_positions``; the other positions unknown)."""
        found = self.scopes.bindings(func.id, func)
        node = found[0].node if len(found) == 1 else None
        if len(found) == 1 and found[0].kind is BindingKind.IMPORT:
            items = self.facts.project.tensor_items.get(func.id)
            if items is None:
                return None
            size, tensors = items
            return tuple(Kind.TENSOR if i in tensors else Kind.UNKNOWN for i in range(size))
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        values = self.return_values(node)
        if not values or not all(isinstance(v, ast.Tuple) for v in values):
            return None
        sizes = {len(v.elts) for v in values if isinstance(v, ast.Tuple)}
        if len(sizes) != 1:
            return None
        tuples = [v for v in values if isinstance(v, ast.Tuple)]
        return tuple(join(self.kind_of(t.elts[i]) for t in tuples) for i in range(sizes.pop()))

    def return_values(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr] | None:
        """The expressions a function returns (a bare ``return`` gives ``None``).

        None for a generator (what it yields is not what a call gives); empty for
        a function that never returns a value. Found once per function.
        """
        cache = self._returns_of
        if id(func) in cache:
            return cache[id(func)]
        values: list[ast.expr] = []
        generator = False
        stack: list[ast.AST] = list(func.body)
        while stack and not generator:
            node = stack.pop()
            generator = isinstance(node, (ast.Yield, ast.YieldFrom))
            if isinstance(node, ast.Return):
                values.append(node.value if node.value is not None else _NONE)
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.extend(ast.iter_child_nodes(node))
        found = None if generator else values
        cache[id(func)] = found
        return found

    def returns(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> Kind:
        """What calling a function of the file returns (the join of its ``return`` values)."""
        return memoized(self._memo, id(func.body), self._returns, func)

    def _returns(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> Kind:
        values = self.return_values(func)
        if values is None:
            return Kind.UNKNOWN  # a generator
        return join(self.kind_of(v) for v in values) if values else Kind.OTHER  # None

    def parameter(self, arg: ast.arg) -> Kind:
        """What a function's parameter holds: its annotation, or what every call site passes."""
        return memoized(self._memo, id(arg), self._parameter, arg)

    def _parameter(self, arg: ast.arg) -> Kind:
        annotated = self._annotation(arg.annotation)
        if annotated is not None:
            return annotated
        args = self.scopes.parent(arg)
        func = self.scopes.parent(args) if args is not None else None
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            return Kind.UNKNOWN  # a lambda's
        assert isinstance(args, ast.arguments)
        inner = self.facts.scope_of_function(func)
        if arg.arg in inner.models:
            return Kind.MODEL
        if arg is args.vararg or arg is args.kwarg:
            return Kind.UNKNOWN
        positional = [*args.posonlyargs, *args.args]
        method = self.method_of(func)
        if method is not None and positional and positional[0] is arg:
            return Kind.OTHER  # self / cls
        sites = self.call_sites(func)
        if not sites:
            default = parameter_default(args, arg)
            if isinstance(default, ast.Constant) and isinstance(
                default.value, int | float | str | bytes
            ):
                # `batch_size=256`, `gamma=0.99`, `mode="train"`: the author declared a
                # number or a string; a caller elsewhere handing a tensor is not assumed
                return Kind.OTHER
            return Kind.UNKNOWN  # called from elsewhere (or nowhere): cannot be told
        if method is not None:
            positional = positional[1:]
        index = next((i for i, p in enumerate(positional) if p is arg), None)
        default = parameter_default(args, arg)
        kinds: list[Kind] = []
        # the calls that hand it the function's own result (`forward(forward(X).detach())`)
        # last: their kind asks this one's back, and gets what the others gave so far
        for call, _ in sorted(sites, key=lambda site: _calls_itself(site[0], func.name)):
            star = next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), None)
            if star is not None and index is not None and index >= star:
                kinds.extend(self._items_kind(a) for a in call.args[star:])  # `f(*outs)`: any
                kinds += [self.kind_of(default)] if default is not None else []  # of its items,
                self._given[id(arg)] = frozenset(kinds)  # or an argument after it (issue 31)
                continue
            unpacked = self._unpacked(call)  # `f(**d)` of a dict literal: its keys
            if unpacked is None:
                return Kind.UNKNOWN
            given = next((k.value for k in call.keywords if k.arg == arg.arg), None)
            if given is None and len(unpacked.get(arg.arg, ())) == 1:
                given = unpacked[arg.arg][0]
            elif given is None and arg.arg in unpacked:
                return Kind.UNKNOWN
            if given is None and index is not None and index < len(call.args):
                given = call.args[index]
            if given is not None:
                kinds.append(self.kind_of(given))
            elif default is not None:
                kinds.append(self.kind_of(default))
            self._given[id(arg)] = frozenset(kinds)
        return join(kinds)

    def _items_kind(self, arg: ast.expr) -> Kind:
        """What ``arg`` hands a parameter: an item of ``*outs`` (``_elements``), else itself."""
        if not isinstance(arg, ast.Starred):
            return self.kind_of(arg)
        elements = self.elements() if self.elements is not None else None
        handed = self._rest(arg.value, "vararg")  # `g(*args)` of the caller's own
        if handed is not None:
            return join(self.kind_of(v) for vs in handed.values() for v in vs)
        if elements is None or not shows_items(arg.value, self.scopes):
            return Kind.UNKNOWN  # (a batch's fields, a call's result: not told, as before)
        return flat(elements(arg.value))

    def _rest(self, held: ast.expr, which: str) -> dict[str | None, list[ast.expr]] | None:
        """What the callers of the function whose own ``*args`` (``**kwargs``) ``held`` is hand
        it (``_handed_on``); None where it is not one, or they are not all known."""
        func = rest_of(held, self.scopes, which)
        if func is None:
            return None
        items = self._starred_items
        return rest_items(func, which, self.call_sites(func), items)

    def _starred_items(self, arg: ast.expr) -> list[ast.expr] | None:
        """The items of a starred argument where the code shows them as a display."""
        held = arg.value if isinstance(arg, ast.Starred) else arg
        return list(held.elts) if isinstance(held, ast.List | ast.Tuple) else None

    def _unpacked(self, call: ast.Call) -> dict[str, list[ast.expr]] | None:
        """Key -> the items the call's ``**d`` hand (``LiteralItems.unpacked``), {} with none;
        None where one is no dict literal the port reads."""
        found: dict[str, list[ast.expr]] = {}
        for k in call.keywords:
            if k.arg is None:
                items = self.facts.flow.items.unpacked(k.value)
                if items is None:  # `g(**kwargs)` of the caller's own: what its callers hand
                    items = self._rest(k.value, "kwarg")  # type: ignore[assignment]
                if items is None or None in items:
                    return None
                for key, values in items.items():
                    found.setdefault(key, []).extend(values)
        return found

    def never_called(self, func: ast.AST) -> bool:
        """Whether ``func``, a module-level function of the file, is called nowhere: no call
        site in the file and none across its repository, and no use that may reach one
        (``rules/_project_calls.never_called``: any doubt, False). Its parameters never hold
        anything: nothing to move. Asked once per function."""
        found = self._never.get(id(func))
        if found is None:
            found = self._never[id(func)] = self._never_called(func)
        return found

    def _never_called(self, func: ast.AST) -> bool:
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        if func not in self.ctx.tree.body or self.call_sites(func) != []:
            return False
        path = self.ctx.path
        if not path or path.startswith("<"):
            return False
        from torchport.check.rules._project_calls import never_called  # on first use

        return never_called(path, func.name)

    def unknown(self, func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> str:
        """TP520's message for the argument ``name`` of ``func`` of unknown kind: what its
        callers in the file pass is not known, or the file has no caller to tell."""
        if self.call_sites(func) == []:
            return (
                f"cannot tell whether the argument `{name}` is a tensor: `{func.name}` is "
                f"called nowhere in this file, so the port sees nothing it is given; where "
                f"code elsewhere calls it with a tensor, move `{name}` to `device` yourself"
            )
        return (
            f"cannot tell whether the argument `{name}` is a tensor (the port moves only "
            f"what it knows is one, and `{func.name}`'s callers are not all in this file, "
            f"or pass other things): move it to `device` yourself"
        )

    def number_or_device(self, bindings: Sequence[object]) -> bool:
        """Whether a name with these ``bindings`` reads a parameter every call site seen so
        far hands a number or a tensor on the device, a device tensor among them
        (``forward(2)``, ``forward(X)``): beside a device tensor, it gives one."""
        found = False
        for b in bindings:
            node = getattr(b, "node", None)
            if not isinstance(node, ast.arg):
                return False
            self.parameter(node)  # (while it is worked out: what the calls gave so far)
            given = self._given.get(id(node), frozenset())
            if Kind.DEVICE not in given or not given <= {Kind.DEVICE, Kind.OTHER}:
                return False
            found = True
        return found

    def given(self, arg: ast.arg) -> frozenset[Kind]:
        """The kinds the file's call sites pass for ``arg`` (empty: its kind is not told by
        them: an annotation, no call site, a ``*args`` call)."""
        self.parameter(arg)
        return self._given.get(id(arg), frozenset())

    def _annotation(self, annotation: ast.expr | None) -> Kind | None:
        if annotation is None:
            return None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            text = annotation.value.rsplit(".", 1)[-1]
        elif isinstance(annotation, (ast.Name, ast.Attribute)):
            qualified = self.ctx.qualname(annotation) or ""
            text = annotation.attr if isinstance(annotation, ast.Attribute) else annotation.id
            if qualified and not qualified.startswith("torch.") and text in _TENSOR_ANNOTATIONS:
                return None
        else:
            return None
        if text in _TENSOR_ANNOTATIONS:
            return Kind.TENSOR
        return Kind.OTHER if text in _PLAIN_ANNOTATIONS else None

    def method_of(self, func: ast.AST) -> ast.ClassDef | None:
        """The class ``func`` is a method of, if it is one."""
        holder = self.scopes.parent(func)
        return holder if isinstance(holder, ast.ClassDef) else None

    def call_sites(self, func: ast.AST) -> list[tuple[ast.Call, PortScope]] | None:
        """Every call of ``func`` in the file, or None when it is also used another way.

        A module-level function called by name, or a method called as
        ``self.name(...)`` from its class; a decorator other than torch's, or any
        other use (passed as a callback, looked up on another object), and the
        call sites seen are not all of them.
        """
        if self._sites is None:
            self._sites = self._find_sites()
        return self._sites.get(id(func))

    def _find_sites(self) -> dict[int, list[tuple[ast.Call, PortScope]] | None]:
        facts, scopes = self.facts, self.scopes
        sites: dict[int, list[tuple[ast.Call, PortScope]] | None] = {}
        # (id of the scope that binds the name, name) -> the function: a module-level one,
        # one defined under an `if` or `try`, or one nested in another function (a call
        # resolves to the scope that binds it; a local of the same name is another one).
        functions: dict[tuple[int, str], ast.AST] = {}
        names: set[str] = set()
        methods: dict[str, list[tuple[ast.ClassDef, ast.AST]]] = {}
        for func in self._plain_functions():
            bound = scopes.scope_of(func)
            if len(bound.bindings.get(func.name, ())) == 1 and self._plain_decorators(func):
                functions[(id(bound), func.name)] = func
                names.add(func.name)
                sites[id(func)] = []
            else:
                sites[id(func)] = None
        for cls in facts.classdefs:
            for stmt in cls.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                    if self._plain_decorators(stmt) and not stmt.name.startswith("__"):
                        methods.setdefault(stmt.name, []).append((cls, stmt))
                        sites[id(stmt)] = []
                    else:
                        sites[id(stmt)] = None
        # Only a name of one of those functions, or an attribute of a method's name, is a
        # site (``_site`` does nothing with any other node): the rest are passed over here.
        name_class, attribute_class = ast.Name, ast.Attribute
        for scope in facts.scopes:
            for node in scope.nodes:
                if (isinstance(node, name_class) and node.id in names) or (
                    isinstance(node, attribute_class) and node.attr in methods
                ):
                    self._site(node, scope, functions, names, methods, sites)
        return sites

    def _plain_functions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """Every function of the file that is not a method (its scope is no class body).

        Read from the scope map's scopes (every ``def`` opens one), in no promised
        order: the callers key what they find by node. A search of the node index
        instead cost a whole-tree walk on most files that asked nothing else of it.
        """
        found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for scope in self.scopes.scopes.values():
            node = scope.node
            if node.__class__ is ast.FunctionDef or node.__class__ is ast.AsyncFunctionDef:
                assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                if not isinstance(self.scopes.scope_of(node).node, ast.ClassDef):
                    found.append(node)
        return found

    def _site(
        self,
        node: ast.AST,
        scope: PortScope,
        functions: dict[tuple[int, str], ast.AST],
        names: set[str],
        methods: dict[str, list[tuple[ast.ClassDef, ast.AST]]],
        sites: dict[int, list[tuple[ast.Call, PortScope]] | None],
    ) -> None:
        parent = self.facts.parents.get(id(node))
        called = isinstance(parent, ast.Call) and parent.func is node
        if isinstance(node, ast.Name) and node.id in names:
            func = functions.get((id(self.scopes.resolve(node.id, node)), node.id))
            if func is None:
                return  # a local of the same name, of another kind
            if not isinstance(node.ctx, ast.Load):
                return
            found = sites.get(id(func))
            if found is None:
                return
            if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
                partial = self._partial_sites(parent, func)
                if partial is not None:  # `f = functools.partial(step, model)`, `f(x)`
                    found.extend(partial)
                    return
            if called:
                assert isinstance(parent, ast.Call)
                found.append((parent, scope))
            else:
                sites[id(func)] = None  # passed around: its callers are not all here
        elif isinstance(node, ast.Attribute) and node.attr in methods:
            # `self.step(x)`, `agent.step(x)` with `agent = Agent()`, `self.agent.step(x)`,
            # `buf.add(x)` with `buf: Buffer`: a call of the method the receiver's class runs.
            # Where that class is not told, any method of the name may run here.
            run = method_of_receiver(self.facts, node, scope)
            runs = [] if run is None else [run, *overrides(self.facts, run, self._class(run))]
            for _, method in methods[node.attr]:
                found = sites.get(id(method))
                if found is None or (run is not None and method not in runs):
                    continue
                if called and method in runs:
                    assert isinstance(parent, ast.Call)
                    found.append((parent, scope))
                else:
                    sites[id(method)] = None

    def _partial_sites(
        self, made: ast.Call, func: ast.AST
    ) -> list[tuple[ast.Call, PortScope]] | None:
        """The calls of ``f = functools.partial(func, ...)``, each as the call of ``func`` it
        makes (the partial's arguments first); None when ``f`` is also used another way."""
        if partial_target(self.facts, made) != (func, -1):
            return None
        stmt = self.scopes.parent(made)
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            return None
        name = stmt.targets[0]
        bound = self.scopes.resolve(name.id, name)
        found: list[tuple[ast.Call, PortScope]] = []
        for read in self.scopes.loads_of(name.id):
            if self.scopes.resolve(name.id, read) is not bound:
                continue
            call = self.scopes.parent(read)
            if not (isinstance(call, ast.Call) and call.func is read):
                return None  # handed on: its callers are not all here
            made_call = ast.Call(
                func=read,
                args=[*made.args[1:], *call.args],
                keywords=[*made.keywords, *call.keywords],
            )
            found.append((made_call, self.facts.scope_of.get(id(call)) or self.facts.module))
        return found

    def _class(self, method: ast.AST) -> ast.ClassDef:
        holder = self.scopes.parent(method)
        assert isinstance(holder, ast.ClassDef), "a method is defined in a class body"
        return holder

    def _plain_decorators(self, func: ast.AST) -> bool:
        """No decorator, or only torch's (``@torch.no_grad()``): calls go straight to it."""
        for d in getattr(func, "decorator_list", ()):
            target = d.func if isinstance(d, ast.Call) else d
            if not (self.ctx.qualname(target) or "").startswith("torch."):
                return False
        return True


def _calls_itself(call: ast.Call, name: str) -> bool:
    """Whether an argument of ``call`` calls the function ``name`` (by that name)."""
    return any(
        isinstance(n, ast.Call) and getattr(n.func, "id", None) == name
        for a in [*call.args, *(k.value for k in call.keywords)]
        for n in ast.walk(a)
    )


def hands_back(func: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> bool:
    """Whether ``func`` returns ``param`` or what it unpacks from it (``return x, y``)."""
    names = {param}
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id == param
        ):
            names.update(n for t in node.targets for n in names_of(t))

    def handed(expr: ast.expr) -> bool:
        if isinstance(expr, (ast.Tuple, ast.List)):
            return any(handed(e) for e in expr.elts)
        while isinstance(expr, (ast.Subscript, ast.Starred)):
            expr = expr.value
        return isinstance(expr, ast.Name) and expr.id in names

    return any(
        isinstance(node, ast.Return) and node.value is not None and handed(node.value)
        for node in ast.walk(func)
    )
