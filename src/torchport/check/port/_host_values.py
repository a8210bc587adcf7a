"""Whether a value read at one place is host data by every binding that may reach that read.

The device flow is flow-insensitive (:mod:`~torchport.check.port._every_binding`): a name is a
device value wherever one of its bindings makes it one. A tutorial reuses its names: ``P =
np.array([0.7, 0.2, 0.1])`` given to its numpy ``cross_entropy(actual, predicted)``, then ``P =
torch.tensor(...)`` given to the model. The flow marks ``P``, and through the call the
parameter ``predicted``, as device values, and TP522 advised ``.detach().cpu()`` on a numpy
array inside the numpy function: advice that breaks the program where it ran.

:func:`surely_host` answers the narrower question for the read itself: every binding that may
reach it (:class:`~torchport.check.port._reaching.Reaching`) is host data: a numpy or host
library's result, a constant, a ``.numpy()``/``.item()`` read, a method of such (not a move),
arithmetic or a tuple of such (never a list or a dict: what goes in later decides); for a
parameter, what each call site in the file passes (where the call sites are all known), asked
again where the call stands. Anything else (a loop's target, an unknown call, a parameter of a
function used another way) is not sure: the flow's word stands.
"""

from __future__ import annotations

import ast
from collections.abc import Set

from torchport.check._match import dotted_parts
from torchport.check.port._call_arguments import argument_for, parameter_default
from torchport.check.port._calls import HOST_READS, MOVING_METHODS, host_library
from torchport.check.port._facts import PortFacts
from torchport.check.port._host_functions import host_functions, shape_host
from torchport.check.port._kinds import value_kinds
from torchport.check.port._project import ProjectImports
from torchport.check.semantic import Binding, BindingKind

__all__ = ["surely_host"]

_DEPTH = 6  # bindings and call sites followed at most this deep; past it, not sure
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_MEMO = "port.host_functions"  # this file's own (ctx.memo)


def surely_host(expr: ast.expr, facts: PortFacts) -> bool:
    """Whether ``expr`` is host data where it stands, by every binding that may reach it."""
    return _Asker(facts).host(expr, 0)


class _Asker:
    def __init__(self, facts: PortFacts) -> None:
        self.facts = facts
        self.scopes = facts.ctx.scopes
        kinds = value_kinds(facts)
        self.reaching, self.callers = kinds.reaching, kinds.callers
        self.asking: set[int] = set()  # bindings being asked: a cycle is not sure

    def host(self, expr: ast.expr, depth: int) -> bool:
        if depth > _DEPTH:
            return False
        deeper = depth + 1
        shaped = shape_host(expr, lambda e: self.host(e, deeper))
        if shaped is not None:
            return shaped
        if isinstance(expr, ast.Name):
            return self._name(expr, deeper)
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in HOST_READS - {"cpu"}:
                return True  # `.numpy()`, `.item()`, `.tolist()`, `.size()`
            name = self.facts.ctx.qualname(func) or ""
            if name.startswith("numpy.") or host_library(name):
                return True
            if self._host_function(func):
                return True  # `load_mnist(...)`: every return of it is host data
            # `np.concatenate(xs).astype(np.float32)`: a method of host data stays on the host
            return (
                isinstance(func, ast.Attribute)
                and func.attr not in MOVING_METHODS
                and self.host(func.value, deeper)
            )
        return False

    def _name(self, name: ast.Name, depth: int) -> bool:
        found = self.reaching.may_reach(name)
        return bool(found) and all(self._binding(b, depth) for b in found)

    def _binding(self, binding: Binding, depth: int) -> bool:
        if id(binding) in self.asking:
            return False
        self.asking.add(id(binding))
        try:
            if binding.kind is BindingKind.ASSIGN and binding.value is not None:
                return self.host(binding.value, depth)
            if binding.kind is BindingKind.ASSIGN and isinstance(binding.node, ast.Name):
                return self._unpacked(binding.node, depth)
            if binding.kind is BindingKind.PARAMETER and isinstance(binding.node, ast.arg):
                return self._parameter(binding.node, depth)
            return False
        finally:
            self.asking.discard(id(binding))

    def _unpacked(self, name: ast.Name, depth: int) -> bool:
        """``a, (b, c) = value``: the item of a tuple written there, else the whole value
        is host data (an item of host data is host data: a row of an array, a number)."""
        levels: list[tuple[ast.Tuple | ast.List, int]] = []  # innermost first
        child: ast.AST = name
        holder = self.scopes.parent(name)
        while isinstance(holder, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in holder.elts):
                return False
            levels.append((holder, next(i for i, e in enumerate(holder.elts) if e is child)))
            child, holder = holder, self.scopes.parent(holder)
        if not isinstance(holder, ast.Assign) or not levels:
            return False
        value = holder.value
        for target, index in reversed(levels):
            if isinstance(value, ast.Call) and self._host_function(value.func, index):
                return True  # `t, arr = load(t)` of `return t, np.ones(3)`: `arr`
            if not isinstance(value, (ast.Tuple, ast.List)) or any(
                isinstance(e, ast.Starred) for e in value.elts
            ):
                break  # the whole value
            if len(value.elts) != len(target.elts):
                return False  # (raises where it runs)
            value = value.elts[index]
        return self.host(value, depth)

    def _host_function(self, func: ast.expr, index: int | None = None) -> bool:
        """A function of the project (another module's, or this file's at module level)
        whose every return is host data by its own code (``_host_functions``); with
        ``index``: or whose every return is a tuple with host data there."""
        if _project_host(self.facts.project, func, index):
            return True
        if not isinstance(func, ast.Name):
            return False
        bound = self.scopes.bindings(func.id, func)
        if len(bound) != 1 or bound[0].kind is not BindingKind.DEF:
            return False
        if bound[0].scope is not self.scopes.module:
            return False
        ctx = self.facts.ctx
        own = ctx.memo.get(_MEMO)
        if own is None:
            own = ctx.memo[_MEMO] = host_functions(ctx, ctx.tree)
        assert isinstance(own, tuple)  # (HostFunctions)
        whole, items = own
        return func.id in whole or (index is not None and index in dict(items).get(func.id, ()))

    def _parameter(self, param: ast.arg, depth: int) -> bool:
        """Every call site in the file passes host data for ``param`` (or leaves a host
        default); a function called from nowhere, or used another way: not sure."""
        args = self.scopes.parent(param)
        func = self.scopes.parent(args) if args is not None else None
        if not isinstance(func, _FUNCTIONS) or not isinstance(args, ast.arguments):
            return False
        if param is args.vararg or param is args.kwarg:
            return False
        callers = self.callers
        sites = callers.call_sites(func)
        if not sites:
            return False
        positional = [*args.posonlyargs, *args.args]
        if callers.method_of(func) is not None:
            if positional and positional[0] is param:
                return False  # self
            positional = positional[1:]
        default = parameter_default(args, param)
        for call, _ in sites:
            given = argument_for(call, positional, param, default)
            if given is None or not self.host(given, depth):
                return False
        return True


def _project_host(project: ProjectImports, func: ast.expr, index: int | None) -> bool:
    """Whether ``func`` (``load``, ``utils.load``) is another project module's function
    whose every return is host data by its own code (``_host_functions``); with ``index``:
    or whose every return is a tuple with host data there."""
    whole: Set[str]
    if isinstance(func, ast.Name):
        name, whole, items = func.id, project.host_functions, project.host_items
    elif isinstance(func, ast.Attribute) and project.modules:
        parts = dotted_parts(func.value)
        facts = project.modules.get(".".join(parts)) if parts is not None else None
        if facts is None:
            return False
        name, whole, items = func.attr, facts.host_functions, dict(facts.host_items)
    else:
        return False
    return name in whole or (index is not None and index in items.get(name, ()))
