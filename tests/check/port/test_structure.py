"""The port's structure walk and model search, against their slower forms.

``FileStructure`` walks a file once with shortcuts (leaves end at once, fields that hold
no node are not read); the oracle is the walk it replaced, kept here as it was: on
generated programs and on the corners the walk reaches only through special cases, both
record the same parents, scopes (their nodes in order, assignments, locals, loop
targets), classes, functions, names' places, imports and moves; and each name's reads
are the scope map's (its node index, a walk of its own).

``PortFacts._find_models`` gathers what its rounds read once (moves in place, calls of
the file's functions, factories' returns) and stops at a round that adds nothing; the
oracle is the search it replaced, kept here as it was (three rounds, each scanning every
scope): the same models per scope, per class, the same moves, factories and unresolved
calls.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check._context import Context
from torchport.check.port._call_sites import callees, methods_by_name
from torchport.check.port._device_flow import MOVES, PortScope, names_of
from torchport.check.port._facts import PortFacts, _model_parameters
from torchport.check.port._loop_items import loop_candidates, mark_loop_models
from torchport.check.port._object_parameters import ObjectParameters
from torchport.check.port._parameters import CallerKinds
from torchport.check.port._structure import FileStructure
from torchport.check.port._value_kind import Kind

pytest.importorskip("torch", reason="the port fuzzer's programs need torch (and numpy)")
port_programs = load("port_programs_for_structure", Path(__file__).parent / "port_programs.py")

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _OldWalk:
    """The structure walk as ``PortFacts._collect`` did it before (the oracle)."""

    def __init__(self, tree: ast.Module) -> None:
        self.module = PortScope(tree)
        self.scopes = [self.module]
        self.parents: dict[int, ast.AST] = {}
        self.scope_of: dict[int, PortScope] = {}
        self.classdefs: list[ast.ClassDef] = []
        self.functions: dict[str, ast.AST] = {}
        self.name_spots: dict[str, list[tuple[int, int]]] = {}
        self.imports: list[ast.AST] = []
        self.moves: list[ast.AST] = []
        stack: list[tuple[ast.AST, PortScope | None]] = [(tree, self.module)]
        while stack:
            node, scope = stack.pop()
            self._note(node)
            if scope is not None:
                scope.nodes.append(node)
                self.scope_of[id(node)] = scope
                if isinstance(node, ast.Name):
                    if isinstance(node.ctx, ast.Store):
                        scope.local.add(node.id)
                    continue
                if isinstance(node, ast.Assign):
                    scope.assigns.append((node.targets, node.value))
                elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
                    if node.value is not None:
                        scope.assigns.append(([node.target], node.value))
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    # (a comprehension's `for` too since g31ak: its target takes items as a
                    # `for` statement's does, issue 31)
                    scope.loop_bound.update(names_of(node.target))
                elif isinstance(node, (ast.With, ast.AsyncWith)):
                    for item in node.items:
                        if item.optional_vars is not None:
                            scope.loop_bound.update(names_of(item.optional_vars))
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for alias in node.names:
                        scope.local.add((alias.asname or alias.name).partition(".")[0])
            for field_name, value in ast.iter_fields(node):
                if field_name in ("ctx", "op", "ops"):
                    continue
                for child in value if isinstance(value, list) else [value]:
                    if not isinstance(child, ast.AST):
                        continue
                    self.parents[id(child)] = node
                    if isinstance(child, _FUNCTIONS):
                        self._enter(child, node, scope, stack)
                    elif isinstance(child, ast.ClassDef):
                        self.classdefs.append(child)
                        if scope is not None:
                            scope.local.add(child.name)
                        stack.append((child, None))
                    else:
                        stack.append((child, scope))

    def _note(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            self.name_spots.setdefault(node.id, []).append((node.lineno, node.col_offset))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda"):
                self.moves.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imports.append(node)

    def _enter(
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
                self._enter(stmt, func, inner, stack)
            elif isinstance(stmt, ast.ClassDef):
                self.classdefs.append(stmt)
                inner.local.add(stmt.name)
                stack.append((stmt, None))
            else:
                stack.append((stmt, inner))
        a = func.args
        params = [p for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p]
        inner.local.update(p.arg for p in params)
        notes: list[Any] = [p.annotation for p in params if p.annotation is not None]
        notes += [func.returns] if func.returns is not None else []
        notes += getattr(func, "type_params", [])
        for note in notes:
            for n in ast.walk(note):
                self._note(n)


CORNERS = [
    # annotations noted breadth first, as ast.walk: the inner `torch` and `x` last
    "import torch\n\ndef f(a: Dict[torch.Tensor, torch] = None) -> Union[x, x.y, y]:\n"
    "    return a\n",
    "import torch\n\ndef f(x: torch.Tensor = torch.ones(1), *a: int, k: 'T' = 2, **kw: dict)"
    " -> torch.Tensor:\n    return x.to(0)\n",
    "import torch\n\n@decorate(torch.zeros(2))\nclass A(Base, metaclass=M):\n"
    "    w: int = 3\n    def m(self, y: make_type()):\n        return y.cuda(1)\n",
    "import torch\nimport numpy as np\n\ndef outer():\n    from os import path\n"
    "    def inner(rank):\n        class B:\n            g = lambda q=torch.ones(1): q.to(rank)\n"
    "        return B\n    return inner\n\nmodel = torch.nn.Linear(2, 2).to(3)\n",
    "import torch\n\nasync def f(a):\n    async for x in a:\n        async with l as (m, n):\n"
    "            y: int = (z := x + 1)\n    try:\n        pass\n    except E as e:\n"
    "        del y\n    match a:\n        case [1, *rest]:\n            pass\n"
    "        case {'k': v, **kw}:\n            global g\n    return [i for i in a if i]\n",
    "import torch\n\nx = f'{a!r:>{w}}' + 'b' * 2\nclass C:\n    import os.path as p\n"
    "    for q in r:\n        pass\n    v = [torch.zeros(1) for _ in q]\n",
    # attributes in annotations, decorators, defaults, class bases and keywords, and
    # classes nested in functions and in classes
    "import torch\n\n@a.b(c.d)\ndef f(x: torch.nn.Module = m.n, *, k: t.u = v.w) -> r.s:\n"
    "    class In(base.B, metaclass=meta.M):\n        class Deeper:\n            y: q.r = s.t\n"
    "    return x.to(p.q)\n",
]


def _scope_record(scope: PortScope, ids: dict[int, int]) -> tuple[object, ...]:
    return (
        type(scope.node).__name__,
        ids.get(id(scope.cls), -1) if scope.cls is not None else None,
        [id(n) for n in scope.nodes],
        [([id(t) for t in targets], id(value)) for targets, value in scope.assigns],
        sorted(scope.local),
        sorted(scope.loop_bound),
    )


def _same_walk(source: str) -> None:
    tree = ast.parse(source)
    old = _OldWalk(tree)
    new = FileStructure(tree, PortScope(tree))
    ids = {id(c): i for i, c in enumerate(old.classdefs)}
    assert [id(c) for c in new.classdefs] == [id(c) for c in old.classdefs]
    assert {k: id(v) for k, v in new.parents.items()} == {k: id(v) for k, v in old.parents.items()}
    position = {id(s): i for i, s in enumerate(old.scopes)}
    new_position = {id(s): i for i, s in enumerate(new.scopes)}
    assert [_scope_record(s, ids) for s in new.scopes] == [
        _scope_record(s, ids) for s in old.scopes
    ]
    assert [None if s.outer is None else new_position[id(s.outer)] for s in new.scopes] == [
        None if s.outer is None else position[id(s.outer)] for s in old.scopes
    ]
    assert {k: new_position[id(v)] for k, v in new.scope_of.items()} == {
        k: position[id(v)] for k, v in old.scope_of.items()
    }
    assert {k: id(v) for k, v in new.functions.items()} == {
        k: id(v) for k, v in old.functions.items()
    }
    assert new.name_spots == old.name_spots
    assert [id(n) for n in new.imports] == [id(n) for n in old.imports]
    assert [id(n) for n in new.moves] == [id(n) for n in old.moves]
    # Every name's reads: the scope map's node index (its own ast.walk) is the oracle.
    scopes = Context(source, "<string>", tree).scopes
    for name in [*(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)), "absent"]:
        want = sorted(id(n) for n in scopes.loads_of(name))
        assert sorted(id(n) for n in new.loads_of(name)) == want, name
    # Every attribute by its name, and every class: ast.walk's, in any order.
    attributes: dict[str, list[int]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute):
            attributes.setdefault(n.attr, []).append(id(n))
    assert {k: sorted(id(n) for n in v) for k, v in new.attributes.items()} == {
        k: sorted(v) for k, v in attributes.items()
    }
    assert sorted(id(c) for c in new.classdefs) == sorted(
        id(n) for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
    )


@pytest.mark.parametrize("source", CORNERS)
def test_the_walk_records_what_the_old_walk_did_on_corners(source: str) -> None:
    _same_walk(source)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_the_walk_records_what_the_old_walk_did_on_generated_programs(source: str) -> None:
    _same_walk(source)


class _OldModelSearch(PortFacts):
    """``_find_models`` as it was: three full rounds, each scanning every scope's nodes."""

    def _find_models(self) -> None:
        searched = [s for s in self.scopes if not s.module_method]
        # (z31p) targets of loops over listed models: the same marking, asked every round
        loops = loop_candidates(self.ctx.scopes, searched, self.loads_of, self.scope_of)
        for _ in range(3):
            for scope in self.scopes:
                if not scope.module_method:
                    self._old_scope_models(scope)
            mark_loop_models(self.ctx.scopes, loops, self.builds_model)
            self._old_params_from_calls()
            for name, func in self.functions.items():
                scope = self.scope_of_function(func)
                if any(
                    isinstance(n, ast.Return)
                    and n.value is not None
                    and self.builds_model(n.value, scope)
                    for n in scope.nodes
                ):
                    self.known.factories.add(name)
            # (n31e) plain functions defined in a function or under an `if`, their name
            # defined once in the file (counted here over the whole tree)
            names = [
                n.name
                for n in ast.walk(self.ctx.tree)
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            ]
            for scope in self.scopes:
                node = scope.node
                if (
                    isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                    and scope.cls is None
                    and not scope.internal
                    and names.count(node.name) == 1
                    and node.name not in self.functions
                    and any(
                        isinstance(n, ast.Return)
                        and n.value is not None
                        and self.builds_model(n.value, scope)
                        for n in scope.nodes
                    )
                ):
                    self.known.factories.add(node.name)

    def _old_scope_models(self, scope: PortScope) -> None:
        node = scope.node
        if isinstance(node, _FUNCTIONS):
            # which parameters are models by their names and defaults is a rule of its own
            # (the port's, n31d's setting words): the rounds are what this reference holds
            scope.models.update(_model_parameters(node.args))
        changed = True
        while changed:
            changed = False
            for targets, value in scope.assigns:
                if not self.builds_model(value, scope):
                    continue
                for target in targets:
                    if isinstance(target, ast.Name) and target.id not in scope.models:
                        scope.models.add(target.id)
                        changed = True
                    elif (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                        and scope.cls is not None
                    ):
                        found = self.class_models.setdefault(id(scope.cls), set())
                        if target.attr not in found:
                            found.add(target.attr)
                            changed = True
        for n in scope.nodes:
            func = getattr(n, "func", None)
            if (
                isinstance(n, ast.Call)
                and isinstance(func, ast.Attribute)
                and func.attr in MOVES
                and isinstance(func.value, ast.Name)
                and isinstance(self.parents.get(id(n)), ast.Expr)
            ):
                scope.moved.add(func.value.id)

    def _old_params_from_calls(self) -> None:
        methods = methods_by_name(self.scopes)
        for scope in self.scopes:
            if scope.module_method:
                continue
            for node in scope.nodes:
                if not isinstance(node, ast.Call):
                    continue
                # (which functions a call runs is the call sites' answer, shared: a
                # partial's call runs its function with the bound model first)
                for func, bound in callees(self, node, scope, methods):
                    params = [p.arg for p in [*func.args.posonlyargs, *func.args.args]]
                    params = ["", *params] if bound < 0 else params[bound:]
                    target = self.scope_of_function(func)
                    for i, arg in enumerate(node.args):
                        if i < len(params) and self.builds_model(arg, scope):
                            target.models.add(params[i])
                    for kw in node.keywords:
                        if kw.arg is not None and self.builds_model(kw.value, scope):
                            target.models.add(kw.arg)


def _models(facts: PortFacts) -> tuple[object, ...]:
    return (
        [sorted(s.models) for s in facts.scopes],
        [sorted(s.moved) for s in facts.scopes],
        sorted((k, sorted(v)) for k, v in facts.class_models.items()),
        sorted(facts.known.factories),
        sorted(facts.unresolved_calls),
    )


def _same_models(source: str) -> None:
    tree = ast.parse(source)
    fast = PortFacts(Context(source, "<models>", tree))
    slow = _OldModelSearch(Context(source, "<models>", tree))
    assert _models(fast) == _models(slow)
    assert fast.has_models == slow.has_models


MODEL_CORNERS = [
    # moved in place, by name; handed on by keyword and by position, to a method
    "import torch\n\ndevice = 'cpu'\nnet = torch.nn.Linear(2, 2)\nnet.to(device)\n"
    "class Job:\n    def __init__(self, model):\n        self.model = model\n"
    "    def run(self, x, thing=None):\n        return self.model(x)\n\n"
    "job = Job(net)\njob.run(torch.ones(2), thing=net)\nother = net\nother.cuda()\n",
    # a trainer holding its model; a nested function returning one; a static method
    "import torch\n\ndef outer():\n    def inner():\n        return torch.nn.GRU(2, 2)\n"
    "    m = inner()\n    m.to('cpu')\n    return m\n\nclass T:\n    @staticmethod\n"
    "    def fit(model, data):\n        model.train()\n        return model(data)\n\n"
    "T.fit(outer(), torch.zeros(1))\nclass A:\n    def go(self, net): pass\n"
    "class B:\n    def go(self, net): pass\nthing.go(torch.nn.ReLU())\n",
]


@pytest.mark.parametrize("source", MODEL_CORNERS)
def test_the_model_search_finds_what_it_found_before_on_corners(source: str) -> None:
    _same_models(source)


def test_a_chain_of_factories_needs_every_round() -> None:
    # build() returns make(), whose return is only known to be a model after a round
    source = (
        "import torch\n\ndef make():\n    return torch.nn.Linear(2, 2)\n\n"
        "def build():\n    return make()\n\ndef train(model, x):\n    return model(x)\n\n"
        "net = build()\ntrain(net, torch.ones(2))\n"
    )
    _same_models(source)
    facts = PortFacts(Context(source, "<models>", ast.parse(source)))
    assert facts.known.factories == {"make", "build"}
    assert "net" in facts.module.models


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_the_model_search_stops_where_three_rounds_find_nothing_more(source: str) -> None:
    _same_models(source)


# ------------------------------------------------ the file's plain functions (call sites)


def _plain_functions_by_ancestry(tree: ast.Module) -> list[int]:
    """Every ``def`` whose nearest enclosing ``def``/``class``/module is no class (the oracle)."""
    found: list[int] = []
    stack: list[tuple[ast.AST, ast.AST]] = [(tree, tree)]
    while stack:
        node, holder = stack.pop()
        if isinstance(node, _FUNCTIONS) and not isinstance(holder, ast.ClassDef):
            found.append(id(node))
        inner = node if isinstance(node, (*_FUNCTIONS, ast.ClassDef)) else holder
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return sorted(found)


def _same_plain_functions(source: str) -> None:
    tree = ast.parse(source)
    kinds = CallerKinds(PortFacts(Context(source, "<plain>", tree)), lambda e: Kind.UNKNOWN)
    found = [id(f) for f in kinds._plain_functions()]
    assert len(found) == len(set(found))
    assert sorted(found) == _plain_functions_by_ancestry(tree)


PLAIN_FUNCTION_CORNERS = [
    # methods under an `if`/`try` of the class body; a class in a function; nested and
    # async functions; a lambda (no def); a def in a method
    "import torch\n\nclass A:\n    if True:\n        def f(self): pass\n    try:\n"
    "        async def g(self): pass\n    except Exception:\n        pass\n"
    "    def h(self):\n        def inner(x): return x\n        return inner\n\n"
    "def outer():\n    class B:\n        def m(self): pass\n    async def k(): pass\n"
    "    return lambda y: y\n\nif torch:\n    def top(): pass\n",
]


@pytest.mark.parametrize("source", PLAIN_FUNCTION_CORNERS)
def test_plain_functions_are_the_defs_outside_class_bodies_on_corners(source: str) -> None:
    _same_plain_functions(source)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_plain_functions_are_the_defs_outside_class_bodies_on_generated_programs(
    source: str,
) -> None:
    _same_plain_functions(source)


# ------------------------------------------ a parameter's reads (the batch plan's objects)


def _same_parameter_reads(source: str) -> None:
    tree = ast.parse(source)
    ctx = Context(source, "<reads>", tree)
    facts = PortFacts(ctx)
    objects = ObjectParameters(facts)
    scopes = ctx.scopes
    for func in ast.walk(tree):
        if not isinstance(func, _FUNCTIONS):
            continue
        a = func.args
        for param in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
            if param is None:
                continue
            # The oracle: the scope map's reads of the name that resolve to the function.
            want = sorted(id(r) for r in scopes.reads_of(param.arg, scopes.scopes[id(func)]))
            found = [id(r) for r in objects.parameter_reads(param, func)]
            assert len(found) == len(set(found))
            assert sorted(found) == want, param.arg


READ_CORNERS = [
    # read in a nested function, a lambda, a comprehension; shadowed by a nested
    # function's own parameter and by a class body; a global of the same name
    "import torch\n\nx = 1\n\ndef f(x, y, *rest, z=2, **kw):\n    def g():\n        return x\n"
    "    def h(x):\n        return x\n    class C:\n        x = 3\n        w = x\n"
    "    k = lambda: x + y\n    return [x for _ in rest] + [g(), h(z), kw, k()]\n\n"
    "def unused(x):\n    return torch.ones(1)\n",
]


@pytest.mark.parametrize("source", READ_CORNERS)
def test_a_parameter_s_reads_are_the_scope_map_s_on_corners(source: str) -> None:
    _same_parameter_reads(source)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_a_parameter_s_reads_are_the_scope_map_s_on_generated_programs(source: str) -> None:
    _same_parameter_reads(source)


@st.composite
def _class_programs(draw: st.DrawFn) -> str:
    """Classes drawn from three names (the same name often twice), at module level, in a
    function, in a class, under an ``if``: nested as deep as drawn."""
    lines = ["import torch"]

    def block(indent: int, depth: int) -> None:
        for _ in range(draw(st.integers(1, 3))):
            pad = "    " * indent
            kind = draw(st.sampled_from(["class", "def", "if"] if depth < 3 else ["class"]))
            if kind == "class":
                lines.append(f"{pad}class {draw(st.sampled_from('ABC'))}(torch.nn.Module):")
            elif kind == "def":
                lines.append(f"{pad}def f{len(lines)}(self):")
            else:
                lines.append(f"{pad}if flag:")
            lines.append(f"{pad}    x = {len(lines)}")
            if depth < 3 and draw(st.booleans()):
                block(indent + 1, depth + 1)

    block(0, 0)
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(_class_programs())
def test_the_classes_by_name_are_ast_walks_last(source: str) -> None:
    from torchport.check.port._facts import port_facts
    from torchport.check.port._structure import classes_by_name

    tree = ast.parse(source)
    want = {n.name: id(n) for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    ctx = Context(source, "<string>", tree)
    facts = port_facts(ctx)
    assert facts.structure.walked
    assert {k: id(v) for k, v in classes_by_name(facts.structure, ctx).items()} == want
