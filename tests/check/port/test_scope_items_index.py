"""A scope's loop items, indexed once, answer as the scans of its nodes they replaced.

``PortScope.items_of`` serves ``_call_flow._unplaced`` (the comprehensions whose target
binds a name anywhere) and ``_call_flow._tensor_copy`` (the loops and comprehensions whose
target is the name). Each asked a scan of the scope's nodes per argument (issue 31: a
walk per question); the oracle here is that scan, written out again, on generated programs
(targets nested, starred, repeated, attributes and subscripts; loops in functions, methods,
lambdas, nested functions and class bodies) and on the tutorial scripts.
"""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check.port._device_flow import PortScope, names_of
from torchport.check.port._structure import FileStructure

_NAMES = ("a", "b", "k", "v", "x")
_ITERABLES = ("xs", "range(3)", "zip(a, b)", "d.items()", "[(1, 2)]")


def _scan(scope: PortScope, name: str, *, comprehended: bool) -> list[int]:
    """The scans ``items_of`` replaced, as they were written (ids of the iterables)."""
    if comprehended:
        return [
            id(n.iter)
            for n in scope.nodes
            if isinstance(n, ast.comprehension) and name in names_of(n.target)
        ]
    return [
        id(n.iter)
        for n in scope.nodes
        if isinstance(n, ast.For | ast.AsyncFor | ast.comprehension)
        and isinstance(n.target, ast.Name)
        and n.target.id == name
    ]


# Loop targets: a name, nested and starred tuples, repeated names, attributes, subscripts
_TARGETS = (
    *_NAMES,
    "(a, b)",
    "(k, (v, x))",
    "(a, *b)",
    "((k, v), *x)",
    "(k, k)",
    "[a, [b, *k]]",
    "self.w",
    "d[k]",
    "(x, self.w)",
    "(d[k], *v)",
)


@st.composite
def _loops(draw: st.DrawFn) -> str:
    target = draw(st.sampled_from(_TARGETS))
    plain = draw(st.sampled_from(_NAMES))  # comprehension targets must be stores of names
    source = draw(st.sampled_from(_ITERABLES))
    kind = draw(st.sampled_from(["for", "list", "dict", "gen", "nested", "with"]))
    if kind == "for":
        return f"for {target} in {source}:\n    pass"
    comp = target if not any(c in target for c in ".[") else plain
    if kind == "list":
        return f"r = [{plain} for {comp} in {source} if {plain}]"
    if kind == "dict":
        return f"r = {{{plain}: 1 for {comp} in {source} for {plain} in {comp}}}"
    if kind == "gen":
        return f"r = sum({plain} for {comp} in {source})"
    if kind == "nested":
        return f"r = [[{plain} for {plain} in {comp}] for {comp} in {source}]"
    return f"with open({source}) as {plain}:\n    pass"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


@st.composite
def _programs(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        body = "\n".join(draw(st.lists(_loops(), min_size=1, max_size=3)))
        where = draw(st.sampled_from(["module", "def", "async", "method", "inner", "lambda"]))
        if where == "module":
            parts.append(body)
        elif where == "def":
            parts.append("def f(a, b, *xs, **d):\n" + _indent(body))
        elif where == "async":
            loop = "async for x in xs:\n    pass\n"
            parts.append("async def g(xs, d):\n" + _indent(loop + body))
        elif where == "method":
            parts.append("class C:\n    def m(self, xs):\n" + _indent(_indent(body)))
        elif where == "inner":
            parts.append("def outer(xs):\n    def inner(d):\n" + _indent(_indent(body)))
        else:
            parts.append("h = lambda xs: [x for (x, k) in xs for v in k]\n" + body)
    return "\n".join(parts) + "\n"


def _agrees(source: str) -> None:
    tree = ast.parse(source)
    walked = FileStructure(tree, PortScope(tree), walk=True)
    for scope in walked.scopes:
        for name in {*_NAMES, *walked.names}:
            for comprehended in (True, False):
                found = scope.items_of(name, comprehended=comprehended)
                assert [id(i) for i in found] == _scan(scope, name, comprehended=comprehended)


@settings(max_examples=25, deadline=None)
@given(_programs())
def test_items_of_answers_as_the_scan(source: str) -> None:
    _agrees(source)


def test_items_of_on_the_tutorial_scripts() -> None:
    scripts = Path(__file__).parent / "scripts"
    texts = [p.read_text(encoding="utf-8") for p in sorted(scripts.glob("*.py"))]
    assert texts
    for text in texts:
        _agrees(text)


def test_a_repeated_name_in_one_target_counts_once() -> None:
    """``[k for k, k in pairs]``: one comprehension, one iterable (the scan tested it once)."""
    tree = ast.parse("r = [k for k, k in pairs]\nfor k in ks:\n    pass\n")
    module = PortScope(tree)
    FileStructure(tree, module, walk=True)
    assert [ast.unparse(i) for i in module.items_of("k", comprehended=True)] == ["pairs"]
    assert [ast.unparse(i) for i in module.items_of("k", comprehended=False)] == ["ks"]
