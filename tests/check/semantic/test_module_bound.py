"""Module-level bindings read from the statements are the scope pass's, name for name.

:func:`module_bound` lists the names module-level statements bind otherwise than by an
import; ``Context.only_imported`` answers from it, where the text's count cannot say,
whether the module's bindings of a name are imports only (the project view asks it for
every name a file imports from the project: issue 34). The oracle is
:class:`ScopeMap` (the scope pass, written apart): on generated programs that bind a few
names every way Python can, at module level, in the blocks of module-level statements,
and in functions and classes (their own scopes), the names with a binding of another
kind than an import in the pass's module scope, or declared ``global`` in any scope, are
exactly those :func:`module_bound` lists, and a name ``only_imported`` claims has import
bindings only there (and no function binds it by ``global``). And what a name or dotted
name read in the module's own scope means (``Context.qualname(..., at_module=True)``: a
project view asks it of the bases of a module's classes) is the pass's answer, read from
the statements where the text declines.
"""

from __future__ import annotations

import ast
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.semantic import BindingKind
from torchport.check.semantic._binding import statement_facts
from torchport.check.semantic._module_imports import ModuleImports, module_bound
from torchport.check.semantic._scope import ScopeMap

NAMES = ["a", "b", "torch"]


def _simple(n: str) -> list[str]:
    """One statement that binds (or reads, or declares) ``n``."""
    return [
        f"import {n}",
        f"import numpy as {n}",
        f"from m import {n}",
        f"from m import x as {n}",
        f"from . import {n}",
        f"from .m import x as {n}",
        f"import {n}.sub",
        f"{n} = 1",
        f"{n} = other = 2",
        f"{n}, other = pair",
        f"[other, *{n}] = items",
        f"({n}) = 3",
        f"{n} += 1",
        f"{n}: int = 1",
        f"{n}: int",
        f"{n}.attr = 1",
        f"{n}[0] = 1",
        f"other[{n}] = 1",
        f"del {n}",
        f"del other, {n}",
        f"del {n}.attr",
        f"global {n}",
        f"print({n})",
        f"values = [{n} for {n} in items]",
        f"fn = lambda {n}: {n}",
        f"x = {{{n}: 1 for {n} in items}}",
        f'"""{n} in a docstring"""',
        f"x = 1  # {n} in a comment",
        f"def f(x: {n}) -> {n}:\n    return {n}",
        f"def {n}():\n    pass",
        f"async def {n}():\n    pass",
        f"class {n}:\n    pass",
        f"@{n}\ndef g():\n    pass",
        f"def f({n}):\n    return {n}",
        f"def f():\n    {n} = 1",
        f"def f():\n    global {n}\n    {n} = 1",
        f"def f():\n    if x:\n        global {n}",
        f"def f():\n    def g():\n        global {n}",
        f"class C:\n    global {n}",
        f"def f():\n    match x:\n        case 1:\n            global {n}",
        f"def f():\n    try:\n        pass\n    except E:\n        global {n}",
        f"def f():\n    import {n}",
        f"class C:\n    {n} = 1",
        f"class C:\n    import {n}",
        f"class C({n}):\n    pass",
    ]


def _blocks(body: str) -> list[str]:
    """Module-level compound statements holding ``body`` (their blocks run at module level)."""
    inner = textwrap.indent(body, "    ")
    return [
        f"if flag:\n{inner}",
        f"if flag:\n    pass\nelse:\n{inner}",
        f"while flag:\n{inner}",
        f"for other in items:\n{inner}",
        f"for other in items:\n    pass\nelse:\n{inner}",
        f"with ctx():\n{inner}",
        f"try:\n{inner}\nexcept Exception:\n    pass",
        f"try:\n    pass\nexcept Exception:\n{inner}",
        f"try:\n    pass\nexcept Exception:\n    pass\nelse:\n{inner}",
        f"try:\n    pass\nfinally:\n{inner}",
        f"def f():\n{inner}",
        f"class K:\n{inner}",
    ]


def _headers(n: str) -> list[str]:
    """Compound statements whose header binds ``n``."""
    return [
        f"for {n} in items:\n    pass",
        f"for {n}, other in pairs:\n    pass",
        f"with ctx() as {n}:\n    pass",
        f"with ctx() as ({n}, other):\n    pass",
        f"with ctx() as {n}.attr:\n    pass",
        f"try:\n    pass\nexcept Exception as {n}:\n    pass",
    ]


@st.composite
def statements(draw: st.DrawFn, depth: int = 0) -> str:
    n = draw(st.sampled_from(NAMES))
    simple = draw(st.sampled_from(_simple(n) + _headers(n)))
    if depth < 2 and draw(st.booleans()):
        return draw(st.sampled_from(_blocks(draw(statements(depth + 1)))))
    return simple


@st.composite
def programs(draw: st.DrawFn) -> str:
    return "\n".join(draw(st.lists(statements(), min_size=1, max_size=6))) + "\n"


def _other_bindings(tree: ast.Module) -> set[str]:
    """The oracle: names the pass's module scope binds otherwise than by an import, and
    names some scope declares ``global``."""
    scopes = ScopeMap(tree)
    declared = {name for scope in scopes.scopes.values() for name in scope.declared_global}
    return declared | {
        name
        for name, found in scopes.module.bindings.items()
        if any(b.kind is not BindingKind.IMPORT for b in found)
    }


def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def test_every_statement_in_every_block_binds_what_the_scope_pass_binds() -> None:
    # each statement form alone and in each module-level block (all of them: a draw of
    # programs below may miss one)
    for name in NAMES:
        for statement in _simple(name) + _headers(name):
            for source in [statement, *_blocks(statement)]:
                tree = _parsed(source + "\n")
                if tree is None:
                    continue
                assert module_bound(tree) == _other_bindings(tree), source
                # with its text: a text without `global` has its bodies left unwalked
                assert module_bound(tree, source + "\n") == _other_bindings(tree), source


@given(programs())
def test_the_statements_bind_what_the_scope_pass_binds_at_module_level(source: str) -> None:
    tree = _parsed(source)
    if tree is None:
        return
    found = module_bound(tree)
    assert found is not None, source  # every statement above is one it reads
    assert found == _other_bindings(tree), source
    assert module_bound(tree, source) == found, source  # (its text told: `global` or none)


@given(programs())
def test_a_name_claimed_has_import_bindings_only_at_module_level(source: str) -> None:
    tree = _parsed(source)
    if tree is None:
        return
    ctx = Context(source, "x.py", tree)
    module = ScopeMap(tree).module
    for name in NAMES:
        if ctx.only_imported(name):
            found = module.bindings.get(name, [])
            assert found, (source, name)
            assert all(b.kind is BindingKind.IMPORT for b in found), (source, name)


@given(st.sampled_from(NAMES), programs())
def test_a_walrus_or_a_match_is_left_to_the_scope_pass(name: str, source: str) -> None:
    # `:=` binds from inside an expression (a comprehension's too: at module level, in the
    # module), `match` by its patterns: neither read from the statements
    for extra in (
        f"values = [({name} := x) for x in items]",
        f"if ({name} := value):\n    pass",
        f"match value:\n    case {{'k': {name}}}:\n        pass",
        f"match value:\n    case [*{name}]:\n        pass",
    ):
        program = f"import {name}\n{source}{extra}\n"
        tree = _parsed(program)
        if tree is None:
            continue
        ctx = Context(program, "x.py", tree)
        assert not ctx.only_imported(name), program


def _by_the_text(source: str, tree: ast.Module, name: str) -> bool:
    return ModuleImports(statement_facts(tree), source, tree).only_imports(name)


def test_imports_alone_are_read_where_the_text_cannot_say() -> None:
    # A name in a docstring, an annotation, `__all__`: the text's count declines it (the
    # scope pass would be built); the statements say the module binds it by imports only.
    source = (
        '"""Boxes are ..."""\n'
        "from .boxes import Boxes\n"
        "from .masks import Masks as M\n\n"
        '__all__ = ["Boxes", "M"]\n\n\n'
        "def f(boxes: Boxes, m: M) -> int:\n"
        "    Boxes = 1  # a local of f's\n"
        "    return Boxes\n\n\n"
        "class C:\n    M = 2\n"
    )
    tree = ast.parse(source)
    ctx = Context(source, "x.py", tree)
    assert not _by_the_text(source, tree, "Boxes") and not _by_the_text(source, tree, "M")
    assert ctx.only_imported("Boxes") and ctx.only_imported("M")
    assert not ctx.only_imported("f") and not ctx.only_imported("C")
    assert ctx.built_scopes is None  # no scope map built for them
    assert module_bound(tree) == {"__all__", "f", "C"}
    # a module of imports alone (nothing else bound at module level: an empty set)
    source = '"""Boxes."""\nfrom .boxes import Boxes\n'
    tree = ast.parse(source)
    assert module_bound(tree) == frozenset()
    assert not _by_the_text(source, tree, "Boxes")
    assert Context(source, "x.py", tree).only_imported("Boxes")


def _module_reads(tree: ast.Module) -> list[ast.expr]:
    """The bases of the classes of the module's own scope (in its blocks too), and the
    arguments of its calls there: names and dotted names read at module level."""
    found: list[ast.expr] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, ast.ClassDef):
            found.extend(stmt.bases)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            found.extend(stmt.value.args)
        elif isinstance(stmt, (ast.If, ast.While, ast.For, ast.With, ast.Try)):
            todo.extend(stmt.body + getattr(stmt, "orelse", []) + getattr(stmt, "finalbody", []))
            for handler in getattr(stmt, "handlers", []):
                todo.extend(handler.body)
    return [e for e in found if isinstance(e, (ast.Name, ast.Attribute))]


_READS = st.lists(
    st.sampled_from(
        [f"class R({n}):\n    pass" for n in NAMES] + [f"print({n}.x.y)" for n in NAMES]
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=400)
@given(programs(), _READS, st.booleans())
def test_a_module_level_read_means_what_the_scope_pass_says(
    source: str, reads: list[str], inside: bool
) -> None:
    extra = "\n".join(reads)
    program = source + ("if flag:\n" + textwrap.indent(extra, "    ") if inside else extra) + "\n"
    _reads_as_the_pass(program)


def _reads_as_the_pass(program: str) -> None:
    tree = _parsed(program)
    if tree is None:
        return
    oracle = ScopeMap(tree)  # built apart, before the context answers anything
    ctx = Context(program, "x.py", tree)
    for expr in _module_reads(tree):
        got = ctx.qualname(expr, at_module=True)
        assert got == oracle.qualname(expr), (program, ast.dump(expr))


def test_every_statement_in_every_block_leaves_a_module_level_read_as_the_pass_reads_it() -> None:
    for name in NAMES:
        for statement in _simple(name) + _headers(name):
            for source in [statement, *_blocks(statement)]:
                for first in (f"import {name}.sub", f"from . import {name}"):
                    for read in (f"class R({name}):\n    pass", f"print({name}.x)"):
                        _reads_as_the_pass(f"{first}\n{source}\n{read}\n")
                        _reads_as_the_pass(f"{first}\n{read}\n{source}\n")


def test_a_module_level_read_is_told_without_the_scope_pass_where_the_text_cannot_say() -> None:
    source = (
        '"""A Backbone and its Boxes."""\n'
        "from torch import nn\n"
        "from .backbone import Backbone\n"
        "from .boxes import Boxes as B\n\n"
        '__all__ = ["Net", "Backbone"]\n\n\n'
        "class Net(Backbone, nn.Linear, B):\n"
        "    def forward(self, x: Backbone, nn=None) -> B:\n"
        "        return nn\n"
    )
    tree = ast.parse(source)
    ctx = Context(source, "x.py", tree)
    bases = tree.body[-1].bases  # type: ignore[attr-defined]
    assert [ctx.qualname(b, at_module=True) for b in bases] == [None, "torch.nn.Linear", None]
    assert ctx.built_scopes is None  # relative imports' names: no dotted name, no scope map
    assert [ScopeMap(tree).qualname(b) for b in bases] == [None, "torch.nn.Linear", None]
