"""Device methods a module gives a class or an object at run time: a fix's doubt.

A class may get ``.cuda()`` or ``.to()`` after its definition: ``Box.cuda = move``,
``setattr(Box, "to", move)``, or ``Box = type("Box", (), {"cuda": move})``. A receiver of that
class is not torch's for that method, whatever its bases say. :func:`dynamic_methods` reads
them from a module's tree (anywhere in it, in functions too):

* ``by_name``: the method names stored on each plain name (``Box.cuda = f``,
  ``setattr(Box, "cuda", f)``), and the names bound to ``type(name, bases, {...})`` (or
  ``dict(cuda=f)``) with the device methods of that namespace;
* ``anywhere``: every device method so given, also on any other expression
  (``self.to = f``, ``type(x).cuda = f``, ``setattr(obj.cls, "cuda", f)``): a receiver not
  known to be torch's may have it;
* ``unowned``: those given to what is not a name the module binds at its top (a parameter
  ``cls.cuda = f`` in a decorator, ``torch.Tensor.cuda = f``): any receiver may have them,
  torch's too.

A ``setattr`` whose name is not a constant string is not read (it is mostly a configuration
namespace's: ``setattr(args, key, value)``).
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass

from torchport.check._nodes import nodes_among
from torchport.check._patterns import may_give_methods

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context

__all__ = ["DYNAMIC_METHODS", "Dynamic", "dynamic_methods", "given_to"]

# The device methods a fix rewrites or follows (as `port/_project_owners.DEVICE_METHODS`).
DYNAMIC_METHODS = frozenset(
    {"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "to_empty", "xpu",
     "mps", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "pin_memory",
     "share_memory_", "long", "int", "bool", "detach", "clone", "contiguous"}
)  # fmt: skip

# Stored as attributes, these are mostly data (`self.type = kind`, `self.int = 3`).
_DATA_NAMES = frozenset({"type", "float", "double", "long", "int", "bool", "clone", "detach"})


@dataclass(frozen=True)
class Dynamic:
    by_name: dict[str, frozenset[str]]
    anywhere: frozenset[str]
    unowned: frozenset[str]


_EMPTY = Dynamic({}, frozenset(), frozenset())
_KEPT: weakref.WeakKeyDictionary[ast.Module, Dynamic] = weakref.WeakKeyDictionary()


def dynamic_methods(tree: ast.Module, source: str | None = None) -> Dynamic:
    """The device methods ``tree`` gives at run time (module docstring), once per tree.
    ``source``: its text, to skip the walk where no such method name is in it."""
    found = _KEPT.get(tree)
    if found is not None:
        return found
    skip = source is not None and not may_give_methods(source)
    found = _EMPTY if skip else _read(tree)
    _KEPT[tree] = found
    return found


def given_to(
    ctx: Context, receiver: ast.expr | str | None, method: str, *, unknown: bool = False
) -> bool:
    """Whether ``method`` of ``receiver`` (a name, or an expression: its name if it is one;
    an instance of the class ``receiver``, or the name itself) may be one given at run time:
    to that name, or to what is not named; ``unknown``: a receiver of unknown owner, which
    may be anything given one anywhere (``.cuda()`` also where ``.to()`` is given: it becomes
    ``.to()``)."""
    dynamic = dynamic_methods(ctx.tree, ctx.source)
    if not dynamic.anywhere:
        return False
    if isinstance(receiver, ast.expr):
        receiver = receiver.id if isinstance(receiver, ast.Name) else None
    given = dynamic.unowned | dynamic.by_name.get(receiver or "", frozenset())
    if unknown:
        given |= dynamic.anywhere
    return method in given or (method == "cuda" and "to" in given)


def _read(tree: ast.Module) -> Dynamic:
    by_name: dict[str, set[str]] = {}
    anywhere: set[str] = set()
    unowned: set[str] = set()
    top = _top_names(tree)

    def given(target: ast.expr, method: str) -> None:
        if method in DYNAMIC_METHODS:
            anywhere.add(method)
            if isinstance(target, ast.Name) and target.id in top:
                by_name.setdefault(target.id, set()).add(method)
            else:
                unowned.add(method)

    own = _instance_stores(tree, top)
    for node in nodes_among(tree, _READ):  # (sets: the order does not matter)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if node.attr in _DATA_NAMES:  # (`self.type = kind` is data)
                continue
            if id(node) in own:  # `self.cuda = f` in a method: that class's instances
                anywhere.add(node.attr)
                by_name.setdefault(own[id(node)], set()).add(node.attr)
            else:
                given(node.value, node.attr)  # `Box.cuda = f`, `(Box.cuda, x) = ...`
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "setattr" and len(node.args) >= 2:
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    given(node.args[0], name.value)
            elif node.func.id == "type" and len(node.args) == 3:
                for method in _namespace_names(node.args[2]):
                    anywhere.add(method)
        elif isinstance(node, ast.Assign) and _made_by_type(node.value):
            assert isinstance(node.value, ast.Call)
            methods = _namespace_names(node.value.args[2])
            for target in node.targets:
                if isinstance(target, ast.Name) and methods:
                    by_name.setdefault(target.id, set()).update(methods)
    if not anywhere:
        return _EMPTY
    return Dynamic(
        {k: frozenset(v) for k, v in by_name.items()}, frozenset(anywhere), frozenset(unowned)
    )


def _instance_stores(tree: ast.Module, top: frozenset[str]) -> dict[int, str]:
    """The attribute stores on ``self`` (a method's first parameter) in the methods of the
    module's top classes, by ``id``, with their class's name: ``self.cuda = use_gpu`` in
    fairseq's ``Trainer`` gives (or sets) ``cuda`` on a ``Trainer``, not on every object."""
    found: dict[int, str] = {}
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name in top):
            continue
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = [*method.args.posonlyargs, *method.args.args]
            if not params or method.decorator_list:
                continue  # a static or class method (or any decorated one): not `self`
            first = params[0].arg
            stack: list[ast.AST] = [*method.body]
            while stack:  # not into a nested function or class: its `self` may be another's
                node = stack.pop()
                if isinstance(node, _SCOPES):
                    continue
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == first
                ):
                    found[id(node)] = cls.name
                stack.extend(ast.iter_child_nodes(node))
    return found


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_READ = frozenset({ast.Attribute, ast.Call, ast.Assign})  # the nodes `_read` looks at


def _top_names(tree: ast.Module) -> frozenset[str]:
    """Names the module's top statements bind to a class or by assignment (not in a
    function: there a name may be a parameter holding any class)."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return frozenset(names)


def _made_by_type(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "type"
        and len(value.args) == 3
    )


def _namespace_names(namespace: ast.expr) -> frozenset[str]:
    """The device methods a ``type(...)`` namespace names: ``{"cuda": f}``, ``dict(cuda=f)``;
    one that is not a literal may hold any."""
    if isinstance(namespace, ast.Dict):
        keys = [k.value for k in namespace.keys if isinstance(k, ast.Constant)]
        if all(isinstance(k, ast.Constant) for k in namespace.keys):
            return frozenset(k for k in keys if k in DYNAMIC_METHODS)
        return DYNAMIC_METHODS  # `{**other}`: any
    if (
        isinstance(namespace, ast.Call)
        and isinstance(namespace.func, ast.Name)
        and namespace.func.id == "dict"
        and not namespace.args
        and all(kw.arg is not None for kw in namespace.keywords)
    ):
        return frozenset(str(kw.arg) for kw in namespace.keywords) & DYNAMIC_METHODS
    return DYNAMIC_METHODS
