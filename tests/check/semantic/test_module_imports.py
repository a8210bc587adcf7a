"""Names only module-level imports bind mean the same as the scope pass says, at every read.

The oracle is :class:`ScopeMap` itself (the scope pass, written apart): on generated
programs that bind the same few names every way Python can, wherever
:func:`module_import_targets` claims a name, each read of it must get the same
qualified name from the pass.
"""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.semantic import BindingKind
from torchport.check.semantic._module_imports import module_import_targets
from torchport.check.semantic._scope import ScopeMap

NAMES = ["torch", "th", "nn", "np"]

IMPORTS = [
    "import torch",
    "import torch as th",
    "import torch.nn",
    "import torch.nn as nn",
    "from torch import nn",
    "from torch import nn as th",
    "import numpy as np",
    "import numpy as torch",
    "from . import nn",
    "from .compat import torch",
    "import torch, numpy as np",
    "import torch.cuda, torch",
]


@st.composite
def bindings(draw: st.DrawFn, n: str) -> str:
    nested_imports = [
        f"def f():\n    import numpy.random as {n}\n    return {n}.x",
        f"class N:\n    from numpy import random as {n}\n    y = {n}.x",
        "def f():\n    import numpy.random\n    return numpy.random",
        f"def f():\n    import {n}.sub\n    return {n}.sub",
    ]
    if draw(st.booleans()):
        return draw(st.sampled_from(nested_imports))
    return draw(
        st.sampled_from(
            [
                f"{n} = None",
                f"{n}, other = pair",
                f"for {n} in items:\n    pass",
                f"with ctx() as {n}:\n    pass",
                f"try:\n    pass\nexcept Exception as {n}:\n    pass",
                f"def {n}():\n    pass",
                f"class {n}:\n    pass",
                f"del {n}",
                f"if ({n} := value):\n    pass",
                f"def f({n}):\n    return {n}.cuda",
                f"def f():\n    global {n}\n    {n} = 1",
                f"values = [{n} for {n} in items]",
                f"fn = lambda {n}: {n}.x",
                f"match value:\n    case {{'k': {n}}}:\n        pass",
                f"x = {n}\\\n    .cuda",
                f"label = '{n} {n}.cuda'  # {n}",
                f"class C:\n    {n} = {n}.x\n    y = {n}.cuda",
                # bound with a call, subscript, float or Ellipsis written after the name
                f"def {n}(x):\n    pass",
                f"async  def  {n} (x):\n    pass",
                f"class {n}(Base):\n    pass",
                f"class \\\n    {n}(Base):\n    pass",
                f"def f():\n    global {n}\n    (a)",
                f"def f():\n    global {n}\n    [a]",
                f"def f():\n    global {n}\n    .5",
                f"def f():\n    global {n}\n    ...",
                f"del {n}\n(a)",
                f"del {n}\n[a, b]",
                f"del {n}\n.5",
                f"del x, {n}\n...",
                f"{n}[0] = 1",
                f"with ctx() as {n}[0]:\n    pass",
            ]
        )
    )


@st.composite
def programs(draw: st.DrawFn) -> str:
    """Module-level imports, then bindings and reads of one of the names they may bind."""
    n = draw(st.sampled_from(NAMES))
    reads = [
        f"a = {n}.cuda.is_available()",
        f"def g():\n    return {n}.ones(1)",
        f"class K:\n    w = {n}.float32",
        f"c = {n}(1) + {n} (2)[0]",
        f"@{n}(x)\ndef h():\n    return [{n}[1], {n}.\\\n    y]",
        f"d = ({n}\n    .cuda())",
        f'def r() ->  {n}:\n    """A `{n}`."""\n    return {n}.x',
    ]
    imports = st.sampled_from(IMPORTS)
    placed = st.one_of(
        imports,
        imports.map(lambda i: f"if flag:\n    {i}"),
        imports.map(lambda i: f"try:\n    {i}\nexcept Exception:\n    x = 1"),
    )
    first = draw(st.sampled_from([i for i in IMPORTS if n in _bound(i)]))
    head = draw(st.lists(placed, max_size=2))
    # one other binding of the name at least: the fast path must decline it, or agree
    body = [draw(bindings(n))]
    body += draw(
        st.lists(st.one_of(bindings(n), placed, st.sampled_from([*reads, f"b = {n}"])), max_size=2)
    )
    return "\n".join([first, *head, *body, *reads]) + "\n"


def _bound(statement: str) -> set[str]:
    node = ast.parse(statement).body[0]
    assert isinstance(node, (ast.Import, ast.ImportFrom))
    return {a.asname or a.name.partition(".")[0] for a in node.names}


def _reads(tree: ast.AST) -> list[ast.expr]:
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) or (
            isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
        ):
            out.append(node)
    return out


def _root(expr: ast.expr) -> ast.expr:
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return expr


def _dotted(target: str, expr: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    return ".".join([target, *reversed(parts)])


@given(programs())
def test_a_claimed_name_means_what_the_scope_pass_says(source: str) -> None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    claimed = module_import_targets(tree, source)
    scopes = ScopeMap(tree)
    for expr in _reads(tree):
        root = _root(expr)
        if isinstance(root, ast.Name) and root.id in claimed:
            assert _dotted(claimed[root.id], expr) == scopes.qualname(expr), (
                source,
                ast.dump(expr),
            )


@given(programs())
def test_the_context_answers_as_the_scope_pass_without_building_it(source: str) -> None:
    # Context.qualname and Context.callee answer from the fast path where they can: the
    # same answers as a scope map of their own (built apart, on the same tree).
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    scopes = ScopeMap(tree)
    ctx = Context(source, "x.py", tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            assert ctx.callee(node) == scopes.callee(node), (source, ast.dump(node))
        if isinstance(node, (ast.Attribute, ast.Name)):
            assert ctx.qualname(node) == scopes.qualname(node), (source, ast.dump(node))


def test_common_files_need_no_scope_pass_for_their_imports() -> None:
    # the fast path answers something (otherwise the test above holds trivially)
    source = (
        "import torch\nimport torch.nn as nn\nfrom torch import optim\n\n"
        "def f(x):\n    return torch.cuda.is_available() and nn.Linear(2, 2)\n"
    )
    claimed = module_import_targets(ast.parse(source), source)
    assert claimed == {"torch": "torch", "nn": "torch.nn", "optim": "torch.optim"}
    # calls and subscripts of an imported name are reads
    source = (
        "from torch.utils.data import DataLoader\nfrom typing import Dict\n\n"
        "def f(ds) -> Dict[str, int]:\n    return DataLoader (ds)\n\n\n"
        'def g() -> DataLoader:\n    """A `DataLoader`."""\n'
    )
    claimed = module_import_targets(ast.parse(source), source)
    assert claimed == {"DataLoader": "torch.utils.data.DataLoader", "Dict": "typing.Dict"}


def test_names_bound_otherwise_are_left_to_the_scope_pass() -> None:
    cases = [
        "import torch\n\ndef f(torch):\n    return torch.x\n",
        "import torch.nn\n\ndef f(torch):\n    return torch.x\n",  # `torch.` binds torch here
        "import torch.nn\nfor torch in items:\n    pass\n",
        "from torch.nn import functional as torch\n\nclass C:\n    torch = 1\n",
        "import torch\ntorch = None\n",
        "import torch\n\ndef f():\n    import numpy.random as torch\n",
        "import torch\n\ndef f():\n    global torch\n",
        "import torch\nimport numpy as torch\n",
        "from . import torch\n",
        "import torch\nlabel = 'torch'\n",  # text in a string: the pass answers
        "import torch\nx = ｔｏｒｃｈ\n",  # noqa: RUF001  (not ASCII: NFKC names)
        "import torch\n\ndef torch(x):\n    pass\n",
        "import torch\n\nclass \\\n    torch(Base):\n    pass\n",
        "import torch\n\nclass torch[T]:\n    pass\n",  # (3.12 syntax: the text decides)
        "import torch\n\ndef f():\n    global torch\n    (x)\n",
        "import torch\ndel torch\n...\n",
        "import torch\ndel torch\n.5\n",
        "import torch\ntorch = 1  # `torch`\n",
    ]
    for source in cases:
        try:
            tree = ast.parse(source)
        except SyntaxError:  # newer syntax than this Python's: the text alone is asked
            tree = ast.parse("import torch\n")
        assert "torch" not in module_import_targets(tree, source), source


@given(programs())
def test_only_imported_names_are_bound_by_imports_alone_in_the_scope_pass(source: str) -> None:
    # Context.only_imported (the project view's cheap read): where it says True, the scope
    # pass's module-level bindings of the name are there, and every one is an import.
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    ctx = Context(source, "x.py", tree)
    module = ScopeMap(tree).module.bindings
    for name in {*NAMES, "numpy", "other", "x"}:
        if ctx.only_imported(name):
            assert module.get(name), (source, name)
            assert all(b.kind is BindingKind.IMPORT for b in module[name]), (source, name)


def test_only_imported_reads_relative_imports_and_declines_other_bindings() -> None:
    source = "from . import nn\nfrom .compat import th\n\nx = nn.Linear(th.ones(1))\n"
    ctx = Context(source, "x.py", ast.parse(source))
    assert ctx.only_imported("nn") and ctx.only_imported("th")
    assert not ctx.only_imported("x") and not ctx.only_imported("torch")
    source = "import torch\n\ndef f():\n    global torch\n    torch = 1\n"
    assert not Context(source, "x.py", ast.parse(source)).only_imported("torch")
