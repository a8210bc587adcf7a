"""Containers whose methods hand back what was put in them: ``memory.pop()`` may be a tensor.

``q = queue.Queue()``, ``buf = collections.deque(maxlen=n)``, ``cache = {}``,
``self.memory = []``: the value is no tensor itself (:attr:`Kind.OTHER`), but what
``q.get()``, ``buf.popleft()``, ``cache.pop(k)`` or ``self.memory.pop()`` return is
whatever the code put there, a CPU tensor among the possibilities. Such a result is
"not sure" (:attr:`Kind.UNKNOWN`), never a plain value. A string's or a number's
methods (``s.strip()``, ``name.split()``) stay plain, and so does the getter of a
literal filled with plain values where it is made (``config = {"lr": 0.1}``, then
``config.get("lr")``, as ``config["lr"]`` is), or of a value that is no container the
code fills (``os.environ.get(...)``, ``json.load(f).get(...)``).
Syntax and import names only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check._context import Context
from torchport.check.port._class_attributes import ClassAttributes
from torchport.check.port._facts import PortFacts
from torchport.check.port._reaching import Reaching
from torchport.check.port._value_kind import Kind

__all__ = ["ContainerItems"]

# Methods that return an item the container holds (or a copy holding them)
_ITEM_METHODS = frozenset(
    {"pop", "popleft", "popitem", "get", "get_nowait", "setdefault", "copy", "peek"}
)
# Methods that put their last argument in (`insert(0, v)`, `setdefault(k, v)` too)
_PUT_METHODS = frozenset(
    {"append", "appendleft", "put", "put_nowait", "add", "insert", "setdefault"}
)
# Methods that neither put in nor hand out an item
_QUIET_METHODS = frozenset(
    {"clear", "qsize", "empty", "full", "task_done", "join", "remove", "discard", "index",
     "count", "keys", "__len__", "sort", "reverse", "rotate"}
)  # fmt: skip
# Constructors of containers the code fills
_CONTAINER_CLASSES = frozenset(
    {"collections.deque", "collections.OrderedDict", "collections.defaultdict",
     "collections.ChainMap", "queue.Queue", "queue.LifoQueue", "queue.PriorityQueue",
     "queue.SimpleQueue", "multiprocessing.Queue", "multiprocessing.SimpleQueue",
     "asyncio.Queue"}
)  # fmt: skip
_CONTAINER_BUILTINS = frozenset({"list", "dict", "set"})


class ContainerItems:
    """What an item taken out of a container the code fills is (see the module docstring)."""

    def __init__(
        self,
        facts: PortFacts,
        reaching: Reaching,
        attributes: ClassAttributes,
        kind_of: Callable[[ast.expr], Kind],
    ) -> None:
        self.facts = facts
        self.ctx: Context = facts.ctx
        self.reaching = reaching
        self.attributes = attributes
        self.kind_of = kind_of
        self._uses: dict[str, list[ast.expr]] | None = None  # a name -> its reads, file-wide

    def item(self, func: ast.Attribute) -> Kind | None:
        """The kind of what ``func`` (``receiver.method``, called) takes out of a container
        the code fills: what the code puts in, where every use of the container is seen
        (UNKNOWN otherwise); None when it is no such call (a string's method, a getter of a
        literal of plain values)."""
        if func.attr not in _ITEM_METHODS:
            return None
        receiver = func.value
        values: list[ast.expr | None] = [receiver]
        if isinstance(receiver, ast.Name):
            values = [getattr(b, "value", None) for b in self.reaching.may_reach(receiver)]
        elif isinstance(receiver, ast.Attribute):
            cls = self._holder(receiver)
            values = [*self.attributes.stored(cls, receiver.attr)] if cls is not None else []
        if not any(v is not None and _filled(v, self.ctx) for v in values):
            return None
        put = self._put_in(receiver)
        if put is None:
            return Kind.UNKNOWN
        kinds = {self.kind_of(v) for v in put}
        return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN

    def _holder(self, receiver: ast.Attribute) -> ast.ClassDef | None:
        """The file's class whose object ``self.memory`` (in its methods) or ``m.memory``
        (of ``m = Memory()``) reads."""
        if _self_attribute(receiver):
            scope = self.facts.scope_of.get(id(receiver))
            return scope.cls if scope is not None else None
        return self.attributes.instance_class(receiver.value, self.reaching)

    def _put_in(self, receiver: ast.expr) -> list[ast.expr] | None:
        """What the code puts in the container ``receiver`` names: every read of the name,
        or of any attribute so named (``self.memory``, ``agent.memory``), file-wide; None
        where a use is neither a put nor a read."""
        if isinstance(receiver, ast.Name):
            uses = self._name_uses().get(receiver.id, [])
        elif isinstance(receiver, ast.Attribute):
            uses = self._name_uses().get("." + receiver.attr, [])
        else:
            return None
        parents = self.facts.parents
        put: list[ast.expr] = []
        for use in uses:
            parent = parents.get(id(use))
            above = parents.get(id(parent))
            if isinstance(parent, ast.Attribute) and isinstance(above, ast.Call):
                if above.func is not parent:
                    return None
                if parent.attr in _PUT_METHODS:
                    if not above.args or any(isinstance(a, ast.Starred) for a in above.args):
                        return None
                    put.append(above.args[-1])
                elif parent.attr not in _ITEM_METHODS and parent.attr not in _QUIET_METHODS:
                    return None
            elif isinstance(parent, ast.Subscript) and parent.value is use:
                if isinstance(parent.ctx, ast.Store):
                    if not (isinstance(above, ast.Assign) and above.targets == [parent]):
                        return None
                    put.append(above.value)
            elif not _read_only(parent, use):
                return None
        return put or None

    def _name_uses(self) -> dict[str, list[ast.expr]]:
        """Every read of each name (``x``) and attribute (``.x``) in the file (one walk)."""
        if self._uses is None:
            self._uses = {}
            for node in ast.walk(self.ctx.tree):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    self._uses.setdefault(node.id, []).append(node)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                    self._uses.setdefault("." + node.attr, []).append(node)
        return self._uses


def _self_attribute(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _read_only(parent: ast.AST | None, use: ast.expr) -> bool:
    """``len(memory)``, ``if memory:``, ``x in memory``: a use that hands nothing out."""
    if isinstance(parent, ast.Call) and use in parent.args:
        return getattr(parent.func, "id", None) == "len"
    if isinstance(parent, ast.Compare):
        return use in parent.comparators and all(
            isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops
        )
    return isinstance(parent, (ast.If, ast.While, ast.BoolOp, ast.UnaryOp))


def _filled(value: ast.expr, ctx: Context) -> bool:
    """An empty container made to be filled: ``[]``, ``{}``, ``dict()``, ``deque()``,
    ``Queue()``, ``defaultdict(list)``."""
    if isinstance(value, (ast.List, ast.Set, ast.Tuple)):
        return not value.elts
    if isinstance(value, ast.Dict):
        return not value.keys
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Name) and func.id in _CONTAINER_BUILTINS and not value.args:
        return ctx.qualname(func) is None  # the builtin, not an import of that name
    return ctx.qualname(func) in _CONTAINER_CLASSES
