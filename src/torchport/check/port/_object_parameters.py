"""Parameters that hold an object, not a tensor: a replay buffer, a config, an optimizer.

A function's parameter of unknown kind that reaches its model is reported by the batch
plan (:mod:`torchport.check.port._batches`), unless every read of it shows an object:
an attribute no tensor has, a method no tensor has (``memory.sample(batch_size)``),
handed to a call the port follows into, or the receiver of a method of the file's own
class. What such a call returns is followed from where it meets the model
(:mod:`~torchport.check.port._origins` reports the call), so the parameter is not.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.port._call_sites import method_of_receiver
from torchport.check.port._facts import PortFacts
from torchport.check.port._tensor_attributes import handed_to_object, read_as_object

__all__ = ["ObjectParameters"]


class ObjectParameters:
    """Which parameters of one file's functions hold objects (see the module's text)."""

    def __init__(self, facts: PortFacts) -> None:
        self.facts = facts
        self.ctx: Context = facts.ctx
        self._methods: set[str] | None = None

    def holds_object(self, param: ast.arg, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether every read of a parameter shows an object, not a tensor, or hands it to a
        method no tensor has (``memory.sample(batch_size)``): a replay buffer, a config, an
        optimizer, a size. What such a call returns is followed from where it meets the model
        (:mod:`~torchport.check.port._origins` reports the call), so the parameter is not."""
        scopes = self.ctx.scopes
        reads = self.parameter_reads(param, func)
        if not reads:
            return False
        return all(
            read_as_object(r, scopes.parent)
            or handed_to_object(r, scopes.parent, self._followed)
            or self._receiver_of_own_method(r)
            for r in reads
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
