"""Parameters that hold an object, not a tensor: a replay buffer, a config, an optimizer.

A function's parameter of unknown kind that reaches its model is reported by the batch
plan (:mod:`torchport.check.port._batches`), unless every read of it shows an object:
an attribute no tensor has, a method no tensor has (``memory.sample(batch_size)``),
handed to a call the port follows into, the receiver of a method of the file's own
class, or handed on to a function of the file whose parameter holds an object by the same
test (ACER's ``_train(args, T, ..., optimiser)`` calling ``_update_networks(args, T, ...)``).
A read of a tensor attribute that tells only metadata (``args.name``: a tensor's is a
string) carries nothing to a model: it counts when another read shows an object. What
such a call returns is followed from where it meets the model
(:mod:`~torchport.check.port._origins` reports the call), so the parameter is not.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.port._call_sites import method_of_receiver
from torchport.check.port._facts import PortFacts
from torchport.check.port._tensor_attributes import handed_to_object, read_as_object

__all__ = ["ObjectParameters"]

# Tensor attributes whose value is never a tensor: a settings object's `args.name` read
# this way shows nothing about its kind, but carries nothing to a model either.
_METADATA = frozenset(
    {
        "name",
        "names",
        "ndim",
        "shape",
        "dtype",
        "layout",
        "is_leaf",
        "is_sparse",
        "is_quantized",
        "requires_grad",
    }
)


class ObjectParameters:
    """Which parameters of one file's functions hold objects (see the module's text)."""

    def __init__(self, facts: PortFacts) -> None:
        self.facts = facts
        self.ctx: Context = facts.ctx
        self._methods: set[str] | None = None
        self._answers: dict[int, bool] = {}  # id(parameter) -> holds an object

    def holds_object(self, param: ast.arg, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether every read of a parameter shows an object, not a tensor, or hands it to a
        method no tensor has (``memory.sample(batch_size)``): a replay buffer, a config, an
        optimizer, a size. What such a call returns is followed from where it meets the model
        (:mod:`~torchport.check.port._origins` reports the call), so the parameter is not."""
        return self._holds_object(param, func, set())

    def _holds_object(
        self, param: ast.arg, func: ast.FunctionDef | ast.AsyncFunctionDef, seen: set[int]
    ) -> bool:
        known = self._answers.get(id(param))
        if known is not None:
            return known
        seen.add(id(param))  # a cycle of calls answers "not known": the read is not one
        answer = self._every_read_shows_object(param, func, seen)
        seen.discard(id(param))
        self._answers[id(param)] = answer
        return answer

    def _every_read_shows_object(
        self, param: ast.arg, func: ast.FunctionDef | ast.AsyncFunctionDef, seen: set[int]
    ) -> bool:
        scopes = self.ctx.scopes
        reads = self.parameter_reads(param, func)
        shown = False
        for r in reads:
            if (
                read_as_object(r, scopes.parent)
                or handed_to_object(r, scopes.parent, self._followed)
                or self._receiver_of_own_method(r)
                or self._handed_to_own_function(r, seen)
            ):
                shown = True
            elif not self._metadata(r):
                return False
        return shown

    def _metadata(self, read: ast.Name) -> bool:
        """``args.name``: a tensor attribute whose value is never a tensor."""
        above = self.ctx.scopes.parent(read)
        return isinstance(above, ast.Attribute) and above.attr in _METADATA

    def _handed_to_own_function(self, read: ast.Name, seen: set[int]) -> bool:
        """``_update_networks(args, T, ...)``: an argument of a module-level function of the
        file whose parameter in that place holds an object by :meth:`holds_object`'s test."""
        scopes = self.ctx.scopes
        above = scopes.parent(read)
        keyword = above if isinstance(above, ast.keyword) else None
        call = scopes.parent(keyword) if keyword is not None else above
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            return False
        callee = self.facts.functions.get(call.func.id)
        if callee is None or scopes.resolve(call.func.id, call) is not scopes.module:
            return False
        a = callee.args
        if keyword is not None:
            named = [p for p in (*a.args, *a.kwonlyargs) if p.arg == keyword.arg]
            target = named[0] if keyword.arg is not None and named else None
        else:
            place = next((i for i, x in enumerate(call.args) if x is read), None)
            if place is None or any(isinstance(x, ast.Starred) for x in call.args[:place]):
                return False
            positional = (*a.posonlyargs, *a.args)
            target = positional[place] if place < len(positional) else None
        return (
            target is not None
            and id(target) not in seen
            and self._holds_object(target, callee, seen)
        )

    def parameter_reads(
        self, param: ast.arg, func: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> list[ast.Name]:
        """Every read of a parameter in its function (nested functions' reads of it too).

        The scope map's ``reads_of``, in no promised order: taken from the structure
        walk's names, not from the scope map's node index (a whole-tree walk of its own).
        """
        scopes = self.ctx.scopes
        inner = scopes.scopes.get(id(func))
        if inner is None:
            return []
        name = param.arg
        return [r for r in self.facts.loads_of(name) if scopes.resolve(name, r) is inner]

    def _receiver_of_own_method(self, read: ast.Name) -> bool:
        """``buf.add(x)`` with ``buf: Buffer`` (or bound to ``Buffer()``): the receiver of a
        method of the file's class it is an instance of, an object (what the method does
        with the data is followed into the method)."""
        above = self.ctx.scopes.parent(read)
        call = self.ctx.scopes.parent(above) if above is not None else None
        return (
            isinstance(above, ast.Attribute)
            and isinstance(call, ast.Call)
            and call.func is above
            and method_of_receiver(self.facts, above, self.facts.scope_of.get(id(read))) is not None
        )

    def _followed(self, call: ast.Call) -> bool:
        """A call the port follows its arguments into: torch's, a forward, a file's method."""
        scope = self.facts.scope_of.get(id(call)) or self.facts.module
        func = call.func
        return (
            (self.ctx.qualname(func) or "").startswith("torch.")
            or self.facts.forward(call, scope)
            or (isinstance(func, ast.Attribute) and func.attr in self._file_methods())
        )

    def _file_methods(self) -> set[str]:
        if self._methods is None:
            self._methods = {
                s.name
                for cls in self.facts.classdefs
                for s in cls.body
                if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
            }
        return self._methods
