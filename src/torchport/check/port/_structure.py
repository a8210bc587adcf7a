"""The port's one walk of a file: parents, scopes and the places the port looks up.

:class:`FileStructure` walks the syntax tree once and records what every later
question of the port (:class:`~torchport.check.port._facts.PortFacts`) needs
about the file's shape:

* each node's parent, and the scope (:class:`~torchport.check.port._device_flow.PortScope`:
  the module body or a function, nested ones too) each node runs in; a class body is
  no scope of the port's, the methods in it are;
* per scope: its nodes in walk order, its assignments, the names it binds and those
  a ``for``/``with`` binds, its ``for`` loops and comprehensions;
* the file's classes and module-level functions;
* every name's places, every attribute (``X.<name>``) by its name, the imports and the
  ``.to``/``.cuda`` calls, so that the port needs no second whole-tree walk (the scope
  map's node index) for them;
* the block (``body``, ``orelse``, ``finalbody``) of each statement, on first ask.

Nodes outside every scope (annotations, type parameters) are noted for their names
and calls as every other node is.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Sequence

from torchport._device_types import CPU
from torchport.check.port._device_flow import PortScope, names_of

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context

__all__ = ["NO_CHILD_FIELDS", "FileStructure", "attribute_table", "classes_by_name"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Fields that hold no node, or only a context or an operator (``Load``, ``Add``, which
# no question of the port's is about): the port's walks do not look into them.
NO_CHILD_FIELDS = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "name", "module", "level", "kind",
     "type_comment", "conversion", "simple", "is_async"}
)  # fmt: skip
_LOOPS = frozenset({ast.For, ast.AsyncFor, ast.With, ast.AsyncWith})
_IMPORTS = frozenset({ast.Import, ast.ImportFrom})
# What the walk records of a node of each class in a scope (one lookup per node).
_ASSIGN, _ANNOTATED, _LOOP, _IMPORT = "assign", "annotated", "loop", "import"
_STATEMENT_KIND: dict[type, str] = {
    ast.Assign: _ASSIGN,
    ast.AnnAssign: _ANNOTATED,
    ast.NamedExpr: _ANNOTATED,
    **dict.fromkeys(_LOOPS, _LOOP),
    ast.comprehension: _LOOP,
    **dict.fromkeys(_IMPORTS, _IMPORT),
}
# Children that open a scope of their own (functions) or none (a class body).
_OPENS = frozenset({*_FUNCTIONS, ast.ClassDef})


def _passed_through(node: ast.AST) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) of each ``with contextlib.nullcontext(value) as target``: the value
    itself is what the target binds (``nullcontext(enter_result)`` enters as it)."""
    if not isinstance(node, ast.With | ast.AsyncWith):
        return []
    found = []
    for item in node.items:
        call, target = item.context_expr, item.optional_vars
        if target is None or not isinstance(call, ast.Call) or len(call.args) != 1:
            continue
        func = call.func
        if (isinstance(func, ast.Name) and func.id == "nullcontext") or (
            isinstance(func, ast.Attribute)
            and func.attr == "nullcontext"
            and isinstance(func.value, ast.Name)
            and func.value.id == "contextlib"
        ):
            found.append((target, call.args[0]))
    return found


def _with_targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [node.target]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in node.items if i.optional_vars is not None]
    return []


class FileStructure:
    """One file's shape as the port walks it (see the module docstring)."""

    def __init__(self, tree: ast.Module, module: PortScope, *, walk: bool = True) -> None:
        """Walk ``tree`` (``module`` is the scope of its body); ``walk=False``: record nothing."""
        self.tree = tree
        self.module = module
        self.scopes: list[PortScope] = [module]
        self.parents: dict[int, ast.AST] = {}
        self.scope_of: dict[int, PortScope] = {}
        self.classdefs: list[ast.ClassDef] = []
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.names: dict[str, list[ast.Name]] = {}  # name -> its Name nodes, walk order
        # attribute name -> its Attribute nodes (``X.<name>``), in no promised order
        self.attributes: dict[str, list[ast.Attribute]] = {}
        self.imports: list[ast.AST] = []
        self.moves: list[ast.Call] = []  # `.to(...)`/`.cuda(...)` calls, in walk order
        self.cpu_calls: list[ast.Call] = []  # `.cpu(...)` calls, in walk order
        self.lambdas: list[ast.Lambda] = []  # every lambda of the file (in no set order)
        self._blocks: dict[int, tuple[list[ast.stmt], int]] | None = None
        self._spots: dict[str, list[tuple[int, int]]] | None = None
        self._loads: dict[str, list[ast.Name]] = {}
        self.walked = walk
        if walk:
            self._collect(tree)

    def block_of(self, stmt: ast.AST) -> tuple[list[ast.stmt], int] | None:
        """The block (``body``, ``orelse``, ``finalbody``) holding ``stmt``, and its index there."""
        if self._blocks is None:
            self._blocks = {}
            # Statements only: no expression holds a block, so they need not be walked.
            stack: list[ast.AST] = [self.tree]
            while stack:
                node = stack.pop()
                for field_name in ("body", "orelse", "finalbody", "handlers", "cases"):
                    block = getattr(node, field_name, None)
                    if not isinstance(block, list):
                        continue
                    for i, s in enumerate(block):
                        if field_name in ("body", "orelse", "finalbody"):
                            self._blocks[id(s)] = (block, i)
                        stack.append(s)
        return self._blocks.get(id(stmt))

    def definitions(self) -> dict[str, int]:
        """How many ``def``s and ``class``es of the file define each name (the walk met
        every one: each function is a scope, each class a classdef)."""
        found: dict[str, int] = {}
        for node in (*(s.node for s in self.scopes[1:]), *self.classdefs):
            name = node.name  # type: ignore[attr-defined]
            found[name] = found.get(name, 0) + 1
        return found

    def mentions_between(self, name: str, first: ast.AST, last: ast.AST) -> bool:
        """Whether ``name`` appears after ``first`` ends and before ``last`` starts.

        Every name's places are sorted once per file (this is asked per loop).
        """
        if self._spots is None:
            self._spots = {k: sorted(v) for k, v in self.name_spots.items()}
        spots = self._spots.get(name, [])
        after = (first.end_lineno or 0, first.end_col_offset or 0)  # type: ignore[attr-defined]
        before = (last.lineno, last.col_offset)  # type: ignore[attr-defined]
        return bisect.bisect_left(spots, before) > bisect.bisect_right(spots, after)

    @property
    def name_spots(self) -> dict[str, list[tuple[int, int]]]:
        """Every name's places ``(line, col)``, in walk order."""
        return {k: [(n.lineno, n.col_offset) for n in nodes] for k, nodes in self.names.items()}

    def loads_of(self, name: str) -> list[ast.Name]:
        """Every read (``Load``) of ``name`` in the file, in no promised order.

        The same nodes as the scope map's ``loads_of`` (which comes in ``ast.walk``
        order), with no walk of its own: for questions whose answer no order changes
        ("every read is ..."). Only for a walked structure (``walk=True``).
        """
        found = self._loads.get(name)
        if found is None:
            load = ast.Load
            found = self._loads[name] = [
                n for n in self.names.get(name, ()) if n.ctx.__class__ is load
            ]
        return found

    def _collect(self, tree: ast.Module) -> None:
        """One walk: parents, scopes, the nodes of each, assignments and local names."""
        # (node, its scope or None inside a class body); a class body is no scope of
        # ours, but the methods in it are.
        stack: list[tuple[ast.AST, PortScope | None]] = [(tree, self.module)]
        pop, push = stack.pop, stack.append
        parents, scope_of, names = self.parents, self.scope_of, self.names
        attributes = self.attributes
        moves, imports, classdefs = self.moves, self.imports, self.classdefs
        cpu_calls, lambdas = self.cpu_calls, self.lambdas
        enter_function = self._enter_function
        fields_of: dict[type, tuple[str, ...]] = {}
        node_class, name_class, call_class, store_class = ast.AST, ast.Name, ast.Call, ast.Store
        constant_class, attribute_class, classdef_class = ast.Constant, ast.Attribute, ast.ClassDef
        statement_kind, opens, lambda_class = _STATEMENT_KIND, _OPENS, ast.Lambda
        while stack:
            node, scope = pop()
            cls = node.__class__
            if cls is name_class:  # a leaf: its place, and its scope's local names
                found = names.get(node.id)  # type: ignore[attr-defined]
                if found is None:
                    names[node.id] = [node]  # type: ignore[attr-defined,list-item]
                else:
                    found.append(node)  # type: ignore[arg-type]
                if scope is not None:
                    scope.nodes.append(node)
                    scope_of[id(node)] = scope
                    if node.ctx.__class__ is store_class:  # type: ignore[attr-defined]
                        scope.local.add(node.id)  # type: ignore[attr-defined]
                continue
            if cls is constant_class:  # a leaf
                if scope is not None:
                    scope.nodes.append(node)
                    scope_of[id(node)] = scope
                continue
            kind = statement_kind.get(cls)
            if cls is call_class:
                func = node.func  # type: ignore[attr-defined]
                if func.__class__ is attribute_class:
                    if func.attr in ("to", "cuda"):
                        moves.append(node)  # type: ignore[arg-type]
                    elif func.attr == CPU:
                        cpu_calls.append(node)  # type: ignore[arg-type]
            elif cls is attribute_class:
                held = attributes.get(node.attr)  # type: ignore[attr-defined]
                if held is None:
                    attributes[node.attr] = [node]  # type: ignore[attr-defined,list-item]
                else:
                    held.append(node)  # type: ignore[arg-type]
            elif kind is _IMPORT:
                imports.append(node)
            elif cls is lambda_class:
                lambdas.append(node)  # type: ignore[arg-type]
            if scope is not None:
                scope.nodes.append(node)
                scope_of[id(node)] = scope
                if kind is None:
                    pass
                elif kind is _ASSIGN:
                    scope.assigns.extend(_pairs(node))  # type: ignore[arg-type]
                elif kind is _ANNOTATED:
                    if node.value is not None:  # type: ignore[attr-defined]
                        scope.assigns.append(([node.target], node.value))  # type: ignore[attr-defined]
                elif kind is _LOOP:
                    for target in _with_targets(node):
                        scope.loop_bound.update(names_of(target))
                    for bound, given in _passed_through(node):  # `nullcontext(v) as t`: v
                        scope.assigns.extend(_pairs(_assigned(bound, given)))
                    if cls is not ast.With and cls is not ast.AsyncWith:
                        scope.loops.append(node)  # (a for loop or a comprehension)
                else:  # an import
                    for alias in node.names:  # type: ignore[attr-defined]
                        scope.local.add((alias.asname or alias.name).partition(".")[0])
            fields = fields_of.get(cls)
            if fields is None:
                fields = fields_of[cls] = tuple(f for f in cls._fields if f not in NO_CHILD_FIELDS)
            for field_name in fields:
                value = getattr(node, field_name, None)
                if value.__class__ is list:
                    for child in value:
                        if not isinstance(child, node_class):
                            continue
                        parents[id(child)] = node
                        if child.__class__ in opens:
                            if child.__class__ is classdef_class:
                                classdefs.append(child)
                                if scope is not None:
                                    scope.local.add(child.name)
                                push((child, None))
                            else:
                                enter_function(child, node, scope, stack)  # type: ignore[arg-type]
                        else:
                            push((child, scope))
                elif isinstance(value, node_class):
                    # (a single child: no function or class, those are statements in lists)
                    parents[id(value)] = node
                    push((value, scope))

    def _note(self, node: ast.AST) -> None:
        """Record a name's place, an import, or a move, for a node in no scope of ours."""
        cls = node.__class__
        if cls is ast.Name:
            self.names.setdefault(node.id, []).append(node)  # type: ignore[attr-defined,arg-type]
        elif cls is ast.Attribute:
            self.attributes.setdefault(node.attr, []).append(node)  # type: ignore[attr-defined,arg-type]
        elif cls is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if func.__class__ is ast.Attribute and func.attr in ("to", "cuda"):
                self.moves.append(node)  # type: ignore[arg-type]
            elif func.__class__ is ast.Attribute and func.attr == CPU:
                self.cpu_calls.append(node)  # type: ignore[arg-type]
        elif cls in _IMPORTS:
            self.imports.append(node)
        elif cls is ast.Lambda:
            self.lambdas.append(node)  # type: ignore[arg-type]

    def _enter_function(
        self,
        func: ast.FunctionDef | ast.AsyncFunctionDef,
        node: ast.AST,
        scope: PortScope | None,
        stack: list[tuple[ast.AST, PortScope | None]],
    ) -> None:
        inner = PortScope(func, cls=node if isinstance(node, ast.ClassDef) else None, outer=scope)
        if isinstance(node, ast.Module):
            self.functions[func.name] = func
        self.scopes.append(inner)
        if scope is not None:
            scope.nodes.append(func)
            scope.local.add(func.name)
            self.scope_of[id(func)] = scope
        defaults = [d for d in func.args.kw_defaults if d is not None]
        for part in (*func.decorator_list, *func.args.defaults, *defaults):
            self.parents[id(part)] = func
            stack.append((part, scope))
        for stmt in func.body:
            self.parents[id(stmt)] = func
            if isinstance(stmt, _FUNCTIONS):
                self._enter_function(stmt, func, inner, stack)  # a nested function: a scope
            elif isinstance(stmt, ast.ClassDef):
                self.classdefs.append(stmt)
                inner.local.add(stmt.name)
                stack.append((stmt, None))
            else:
                stack.append((stmt, inner))
        a = func.args
        for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
            if p is not None:
                inner.local.add(p.arg)
        # Annotations and type parameters are in no scope of ours, but their names and
        # calls are the file's: noted as the walk notes every other node.
        notes = [p.annotation for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                 if p is not None and p.annotation is not None]  # fmt: skip
        notes += [func.returns] if func.returns is not None else []
        notes += getattr(func, "type_params", [])
        if notes:
            self._note_all(notes)

    def _note_all(self, notes: Sequence[ast.AST]) -> None:
        """Note every node under each of ``notes``, each in ``ast.walk``'s order (breadth
        first), less the contexts and operators (``_note`` records none of them)."""
        note, names, node_class = self._note, self.names, ast.AST
        name_class, constant_class = ast.Name, ast.Constant
        for top in notes:
            queue: list[ast.AST] = [top]
            for node in queue:  # (the list grows as it is read: breadth first)
                cls = node.__class__
                if cls is name_class:  # a leaf: its place
                    found = names.get(node.id)  # type: ignore[attr-defined]
                    if found is None:
                        names[node.id] = [node]  # type: ignore[attr-defined,list-item]
                    else:
                        found.append(node)  # type: ignore[arg-type]
                    continue
                if cls is constant_class:
                    continue
                note(node)
                for field_name in cls._fields:
                    if field_name in NO_CHILD_FIELDS:
                        continue
                    value = getattr(node, field_name, None)
                    if value.__class__ is list:
                        for child in value:
                            if isinstance(child, node_class):
                                queue.append(child)
                    elif isinstance(value, node_class):
                        queue.append(value)


def attribute_table(ctx: Context) -> dict[str, list[ast.Attribute]]:
    """Every ``X.<name>`` in ``ctx``'s file, by name, each name's in no promised order.

    The port's structure walk's table where it walked the file (its facts are made);
    else one table from the scope map's node index (a walk of the whole tree), kept.
    """
    structure = getattr(ctx.memo.get("port.facts"), "structure", None)
    if isinstance(structure, FileStructure) and structure.walked:
        return structure.attributes
    kept = ctx.memo.get("module.attributes")
    if isinstance(kept, dict):
        return kept
    table: dict[str, list[ast.Attribute]] = {}
    for n in ctx.scopes.nodes_of(ast.Attribute):
        assert isinstance(n, ast.Attribute)
        table.setdefault(n.attr, []).append(n)
    ctx.memo["module.attributes"] = table
    return table


def classes_by_name(structure: FileStructure, ctx: Context) -> dict[str, ast.AST]:
    """The file's classes by name, the last in ``ast.walk`` order where a name has several.

    The structure's walk met every class (in its own order); where no two share a name,
    the order cannot matter, and the node index (a walk of the whole tree) is not built.
    """
    if structure.walked:
        names = [c.name for c in structure.classdefs]
        if len(set(names)) == len(names):
            return dict(zip(names, structure.classdefs, strict=True))
    return {c.name: c for c in ctx.scopes.nodes_of(ast.ClassDef)}  # type: ignore[attr-defined]


def _pairs(node: ast.Assign) -> list[tuple[list[ast.expr], ast.expr]]:
    """What ``node`` binds, as (targets, value) pairs: a tuple unpacked item by item
    (``t, w = model(x), torch.ones(2)``: ``w`` holds the ones only, not the pair, which
    made it a device value and the ones were left on the CPU unsaid, issue 31) one pair
    per item; a starred target (``a, *rest = model(x), torch.zeros(2)``) one pair per item
    it takes (a list of them: its items are what the flow knows of it); a conditional of
    two such (``t, w = (a, b) if c else (d, e)``) each branch's; any other assignment whole."""
    (target, *more), value = node.targets, node.value
    if not more and isinstance(value, ast.IfExp) and isinstance(target, ast.Tuple | ast.List):
        sides = (value.body, value.orelse)
        branches = [_pairs(_assigned(target, v)) for v in sides]
        if all(b[0][1] is not v for b, v in zip(branches, sides, strict=True)):
            return [pair for b in branches for pair in b]  # (each branch split: its items)
        return [(node.targets, value)]
    if (
        more
        or not isinstance(target, ast.Tuple | ast.List)
        or not isinstance(value, ast.Tuple | ast.List)
        or any(isinstance(e, ast.Starred) for e in value.elts)
    ):
        return [(node.targets, value)]
    stars = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
    if not stars:
        if len(target.elts) != len(value.elts):
            return [(node.targets, value)]
        return [([t], v) for t, v in zip(target.elts, value.elts, strict=True)]
    (star,) = stars  # (Python allows one)
    after = len(target.elts) - star - 1
    if len(value.elts) < star + after:
        return [(node.targets, value)]  # (raises when run)
    taken = value.elts[star : len(value.elts) - after]
    pairs = [([t], v) for t, v in zip(target.elts[:star], value.elts[:star], strict=True)]
    pairs += [([target.elts[star]], v) for v in taken]
    tail = value.elts[len(value.elts) - after :] if after else []
    return pairs + [([t], v) for t, v in zip(target.elts[star + 1 :], tail, strict=True)]


def _assigned(target: ast.expr, value: ast.expr) -> ast.Assign:
    """``target = value`` as an assignment (a branch of a conditional, for ``_pairs``)."""
    return ast.Assign(targets=[target], value=value, lineno=value.lineno)
