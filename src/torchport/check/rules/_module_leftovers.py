"""What a module's methods use that ``model.to(device)`` does not move, made elsewhere.

TP504's other findings (its rule file finds the tensors a method makes itself):

* a function of the file a method calls that makes a tensor on the CPU
  (``def INF(n): return -torch.diag(torch.tensor(float("inf")).repeat(n), 0)``, then
  ``self.fc(x) + INF(4)``): moved at the call (``INF(4).to(x.device)``) when every
  ``return`` of the function is such a tensor and the method has a device at hand,
  else reported;
* modules kept in a plain ``list`` or ``dict`` attribute (``self.layers = [nn.Linear(4,
  4) for _ in range(2)]``, ``self.blocks.append(Block())`` with ``self.blocks = []``): no
  children of the module, so ``.to(device)`` leaves their weights on the CPU. Reported:
  ``nn.ModuleList`` would register them, which changes the ``state_dict``'s keys and what
  an optimizer built from ``model.parameters()`` trains;
* a submodule whose class keeps its tensors on its own device (``x.to(self.device)``,
  ``torch.zeros(..., device=self.device)``), built where that device is left to the CPU
  (``self.enc = Enc()`` with ``Enc(device="cpu")``): reported
  (:mod:`~torchport.check.port._class_devices`);
* a module's own CUDA-or-CPU device (``self.device = torch.device("cuda" if
  torch.cuda.is_available() else "cpu")``) read in the class: on an accelerator that is
  not CUDA (MPS, XPU) it is the CPU while the port puts the model on ``device``.
  Reported: which of the class's uses follow it the port cannot tell.

Imported by TP504 on first use (the port's analysis is loaded only by a port).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import move_after
from torchport.check._rule import Edit
from torchport.check.rules._made_where_handed import registered_otherwise
from torchport.check.rules._module_tensors import (
    builds_the_module,
    class_assignments,
    device_of_the_inputs,
    method_of_a_module,
    moved_or_kept_on_the_cpu,
)
from torchport.check.rules._port import PortFacts, port_facts

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortScope

__all__ = ["module_leftovers"]

_CONTAINERS = (ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.DictComp, ast.Starred)
_ADDS = frozenset({"append", "extend", "insert"})
_CHOICE = "torch.cuda.is_available"
_SELF_BINDINGS = "port.self_bindings"  # Context.memo's key: id(ClassDef) -> _self_bindings

HELPER = (
    "`{name}` (a function of this file) makes a tensor on the CPU (`{made}`, line {line}) "
    "and this module method uses what it returns: `model.to(device)` does not move it; make "
    "it on the input's device (pass the device to `{name}`)"
)
PLAIN_LIST = (
    "`model.to(device)` does not move the modules kept in the plain {kind} `self.{name}`: they "
    "are not the module's children; hold them in `nn.Module{Kind}` (which registers their "
    "weights: the state_dict's keys and what the optimizer trains change) or move them yourself"
)
OWN_DEVICE = (
    "this module picks its own device, CUDA or the CPU: on an accelerator that is not CUDA "
    "(MPS, XPU) `self.{name}` is the CPU while the port puts the model on `device`; make "
    "tensors on the input's device (`x.device`) or set `self.{name}` to the port's `device`"
)


def module_leftovers(
    node: ast.Call, ctx: Context
) -> Iterator[tuple[ast.AST, str, tuple[Edit, ...] | None]]:
    """``(where, message, edits or None)`` for each thing ``node`` leaves behind."""
    facts = port_facts(ctx)
    scope = facts.scope_of.get(id(node))
    method = method_of_a_module(scope)
    if scope is None or method is None:
        return
    called = node.func if isinstance(node.func, ast.Name) else _held_function(node, scope, ctx)
    if called is not None:
        found = _helper(node, called, method, scope, facts, ctx)
        if found is not None:
            yield found
            return
    if ctx.qualname(node.func) == _CHOICE:
        own = _own_choice(node, scope, facts)
        if own is not None:
            yield own, OWN_DEVICE.format(name=own.attr), None
        return
    if facts.known.builds(node, lambda _: False):
        from torchport.check.port._class_devices import submodule_device_left

        left = submodule_device_left(node, facts, scope)  # `self.enc = Enc()`, its own CPU
        if left is not None:
            yield node, left, None
            return
        held = _plain_container(node, scope, facts)
        if held is not None:
            kind = "dict" if held[1] else "list"
            message = PLAIN_LIST.format(kind=kind, name=held[0], Kind=kind.capitalize())
            yield node, message, None


def _held_function(node: ast.Call, scope: PortScope, ctx: Context) -> ast.Name | None:
    """``self.X(...)`` where the class binds ``self.X`` once, to a plain name
    (``self.INF = INF`` in ``__init__``): that name, where the class reads it."""
    attr = _self_attribute(node.func)
    if attr is None or scope.cls is None:
        return None
    values = _self_bindings(scope.cls, ctx).get(attr, ())
    if len(values) == 1 and isinstance(values[0], ast.Name):
        return values[0]
    return None


def _self_bindings(cls: ast.ClassDef, ctx: Context) -> dict[str, list[ast.expr | None]]:
    """The values the class binds to each ``self.X`` (an assignment anywhere in it, once per
    statement), by ``X``: one walk of the class per file, not one per ``self.X(...)`` call
    of its methods (that was the largest part of a port's rule time)."""
    memo = ctx.memo.get(_SELF_BINDINGS)
    if memo is None:
        memo = ctx.memo[_SELF_BINDINGS] = {}
    assert isinstance(memo, dict)
    found: dict[str, list[ast.expr | None]] | None = memo.get(id(cls))
    if found is None:
        found = memo[id(cls)] = {}
        for n in class_assignments(cls):
            for attr in dict.fromkeys(_self_attribute(t) for t in _targets(n)):
                if attr is not None:
                    found.setdefault(attr, []).append(n.value)
    return found


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def _helper(
    node: ast.Call,
    called: ast.Name,
    method: ast.FunctionDef,
    scope: PortScope,
    facts: PortFacts,
    ctx: Context,
) -> tuple[ast.AST, str, tuple[Edit, ...] | None] | None:
    """A call of a module-level function of the file that makes a CPU tensor, by its
    name or through an attribute the class bound to it (``self.INF = INF``)."""
    from torchport.check.port._module_functions import own_tensor_functions, takes_device

    name = called.id
    bound = ctx.scopes.bindings(name, called)
    func = bound[0].node if len(bound) == 1 else None
    if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef) or takes_device(func):
        return None
    if isinstance(facts.parents.get(id(func)), ast.ClassDef):
        return None  # a name a class body binds is no function the method sees
    # The function's own creators first (a walk of its body): most a method calls make
    # none, and then whether the method builds the module (which may index the whole
    # file's attributes) need not be asked; either answer alone ends it, in any order.
    made = _cpu_tensor_made(func, ctx)
    if made is None:
        return None
    if builds_the_module(method, scope.cls, ctx):
        return None  # `__init__`: kept in a parameter or buffer, or TP504's plain attribute
    if moved_or_kept_on_the_cpu(node, scope.nodes, facts, ctx):
        return None
    message = HELPER.format(name=name, made=ctx.qualname(made.func), line=made.lineno)
    device = device_of_the_inputs(method, scope.nodes, facts, scope.cls)
    own = facts.functions.get(name) is func and name in own_tensor_functions(ctx)
    if device is None or not own:  # not every return a CPU tensor: the port cannot tell
        return node, message, None
    return node, message, move_after(node, device, ctx)


def _cpu_tensor_made(func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context) -> ast.Call | None:
    """The first torch creator in ``func``'s own body with no ``device`` and not moved where
    it is made (``torch.arange(n).to(d)``)."""
    from torchport.check.port._module_functions import host_factory, own_nodes

    calls = [n for n in own_nodes(func) if isinstance(n, ast.Call)]
    moved = set()
    for call in calls:
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cuda"):
            moved.add(id(call.func.value))
    return next((call for call in calls if host_factory(ctx, call, moved)), None)


def _plain_container(node: ast.Call, scope: PortScope, facts: PortFacts) -> tuple[str, bool] | None:
    """``(attribute, is a dict)`` when the module ``node`` builds is kept in ``self.X``, a
    plain list or dict: ``self.X = [node, ...]`` or ``self.X.append(node)`` where the class
    binds ``self.X`` to a plain list."""
    parents = facts.parents
    child: ast.AST = node
    parent = parents.get(id(node))
    is_dict = False
    while isinstance(parent, _CONTAINERS):  # a comprehension's `for` part ends it: no Assign
        if isinstance(parent, ast.Dict) and child not in parent.values:
            return None  # a key: not what is kept
        if isinstance(parent, ast.DictComp) and child is not parent.value:
            return None
        is_dict = is_dict or isinstance(parent, ast.Dict | ast.DictComp)
        child, parent = parent, parents.get(id(parent))
    if isinstance(parent, ast.Assign) and child is parent.value and child is not node:
        for target in parent.targets:
            attr = _self_attribute(target)
            if attr is not None:  # unless the class registers them (`nn.ModuleList(self.X)`)
                kept = scope.cls is None or not registered_otherwise(scope.cls, attr)
                return (attr, is_dict) if kept else None
        return None
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr in _ADDS
        and child in parent.args
    ):
        attr = _self_attribute(parent.func.value)
        if attr is not None and scope.cls is not None and _plain_list(scope.cls, attr):
            return None if registered_otherwise(scope.cls, attr) else (attr, False)
    return None


def _self_attribute(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        return expr.attr if expr.value.id == "self" else None
    return None


def _plain_list(cls: ast.ClassDef, attr: str) -> bool:
    """Whether the class binds ``self.<attr>`` only to plain lists (``[]``, ``list()``)."""
    values = [
        n.value
        for n in ast.walk(cls)
        if isinstance(n, ast.Assign) and any(_self_attribute(t) == attr for t in n.targets)
    ]
    return bool(values) and all(
        isinstance(v, ast.List)
        or (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "list")
        for v in values
    )


def _own_choice(node: ast.Call, scope: PortScope, facts: PortFacts) -> ast.Attribute | None:
    """``self.X`` bound to ``[torch.device(]"cuda..." if node else "cpu"[)]`` in a module
    class that reads ``self.X`` elsewhere."""
    parents = facts.parents
    choice = parents.get(id(node))
    if not (
        isinstance(choice, ast.IfExp)
        and choice.test is node
        and isinstance(choice.body, ast.Constant)
        and str(choice.body.value).startswith("cuda")
        and isinstance(choice.orelse, ast.Constant)
        and choice.orelse.value == "cpu"
    ):
        return None
    held = parents.get(id(choice))
    if isinstance(held, ast.Call) and choice in held.args:
        held = parents.get(id(held))  # `torch.device(...)`
    if not isinstance(held, ast.Assign) or len(held.targets) != 1 or scope.cls is None:
        return None
    target = held.targets[0]
    attr = _self_attribute(target)
    if attr is None or not isinstance(target, ast.Attribute):
        return None
    read = any(
        isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Load)
        and n.attr == attr
        and _self_attribute(n) == attr
        for n in ast.walk(scope.cls)
    )
    return target if read else None
