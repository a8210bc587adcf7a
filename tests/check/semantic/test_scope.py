"""ScopeMap: scopes, bindings, definite binding, qualified names and how torch is imported."""

from __future__ import annotations

import ast
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check.semantic._scope import BindingKind, ScopeKind, ScopeMap, TorchImport


def build(source: str) -> tuple[ScopeMap, ast.Module]:
    tree = ast.parse(source)
    return ScopeMap(tree), tree


def name_at(tree: ast.Module, name: str, line: int) -> ast.Name:
    """The (first) Name node ``name`` on ``line``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and node.lineno == line:
            return node
    raise AssertionError(f"no {name} on line {line}")


def probe_call(tree: ast.Module) -> ast.Call:
    """The `probe()` call of a source."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "probe":
            return node
    raise AssertionError("no probe()")


# ---------------------------------------------------------------- scopes


@pytest.mark.parametrize(
    ("source", "line", "kind"),
    [
        ("def f(x=a):\n    pass\n", 1, ScopeKind.MODULE),  # default: enclosing scope
        ("@a\ndef f():\n    pass\n", 1, ScopeKind.MODULE),  # decorator
        ("def f(x: a) -> a:\n    pass\n", 1, ScopeKind.MODULE),  # annotations
        ("def f():\n    a\n", 2, ScopeKind.FUNCTION),
        ("g = lambda x=a: x\n", 1, ScopeKind.MODULE),  # the default
        ("class C(a):\n    a\n", 1, ScopeKind.MODULE),  # bases
        ("class C(b):\n    a\n", 2, ScopeKind.CLASS),
        ("y = [a for b in c]\n", 1, ScopeKind.COMPREHENSION),
        ("y = [b for b in a]\n", 1, ScopeKind.MODULE),  # first iterable: enclosing scope
        ("y = [b for b in c for d in a]\n", 1, ScopeKind.COMPREHENSION),
    ],
)
def test_scope_of(source: str, line: int, kind: ScopeKind) -> None:
    scopes, tree = build(source)
    assert scopes.scope_of(name_at(tree, "a", line)).kind is kind


def test_lambda_body_and_parameters_are_the_lambda_scope() -> None:
    scopes, tree = build("g = lambda a: a\n")
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "a"]
    assert [scopes.scope_of(n).kind for n in uses] == [ScopeKind.LAMBDA]
    assert scopes.resolve("a", uses[0]).kind is ScopeKind.LAMBDA


@pytest.mark.parametrize(
    ("source", "line", "where"),
    [
        # A class body's names are invisible to its methods and comprehensions.
        ("a = 1\nclass C:\n    a = 2\n    def m(self):\n        return a\n", 5, ScopeKind.MODULE),
        ("class C:\n    a = 2\n    b = [a for _ in range(3)]\n", 3, ScopeKind.MODULE),
        ("class C:\n    a = 2\n    b = a\n", 3, ScopeKind.CLASS),
        ("def f():\n    global a\n    a = 1\n    return a\n", 4, ScopeKind.MODULE),
        ("def f():\n    a = 1\n    def g():\n        return a\n", 4, ScopeKind.FUNCTION),
        # A walrus in a comprehension binds in the enclosing function.
        ("def f():\n    [(a := x) for x in y]\n    return a\n", 3, ScopeKind.FUNCTION),
        ("def f(a):\n    return a\n", 2, ScopeKind.FUNCTION),
        ("def f():\n    return a\na = 1\n", 2, ScopeKind.MODULE),
    ],
)
def test_resolve(source: str, line: int, where: ScopeKind) -> None:
    scopes, tree = build(source)
    assert scopes.resolve("a", name_at(tree, "a", line)).kind is where


def test_nonlocal_resolves_to_the_enclosing_function() -> None:
    source = "def f():\n    a = 1\n    def g():\n        nonlocal a\n        a = 2\n        a\n"
    scopes, tree = build(source)
    scope = scopes.resolve("a", name_at(tree, "a", 6))
    assert scope.kind is ScopeKind.FUNCTION
    assert scope.node is tree.body[0]


def test_binding_kinds_and_values() -> None:
    source = (
        "import torch.nn as nn\n"
        "from torch import cuda as c\n"
        "x = y = 1\n"
        "a, b = 2, 3\n"
        "for i in r: pass\n"
        "with m as w: pass\n"
        "try: pass\nexcept E as e: pass\n"
        "def f(p): pass\n"
        "class K: pass\n"
        "z += 1\n"
        "del z\n"
        "if (q := 5): pass\n"
    )
    scopes, _ = build(source)
    kinds = {n: [b.kind for b in bs] for n, bs in scopes.module.bindings.items()}
    assert kinds["nn"] == [BindingKind.IMPORT]
    assert scopes.module.bindings["nn"][0].qualified == "torch.nn"
    assert scopes.module.bindings["c"][0].qualified == "torch.cuda"
    assert kinds["x"] == kinds["y"] == kinds["a"] == [BindingKind.ASSIGN]
    assert isinstance(scopes.module.bindings["x"][0].value, ast.Constant)
    assert scopes.module.bindings["a"][0].value is None  # unpacked: no single value
    assert kinds["i"] == [BindingKind.LOOP]
    assert kinds["w"] == [BindingKind.WITH]
    assert kinds["e"] == [BindingKind.EXCEPT]
    assert kinds["f"] == [BindingKind.DEF]
    assert kinds["K"] == [BindingKind.CLASS]
    assert kinds["z"] == [BindingKind.AUGMENTED, BindingKind.DELETE]
    assert kinds["q"] == [BindingKind.WALRUS]
    assert "p" not in kinds


def test_star_imports_and_module_reads() -> None:
    source = (
        "from config import *\n\ndef f():\n    return device\n\ndef g(cuda):\n    return cuda\n"
    )
    scopes, tree = build(source)
    assert scopes.resolve("device", name_at(tree, "device", 4)) is scopes.module
    assert scopes.module.star_imports and "device" not in scopes.module.bindings
    assert scopes.module_reads("device")
    assert not scopes.module_reads("cuda")  # read only as g's parameter


# ---------------------------------------------------------------- definitely bound


@pytest.mark.parametrize(
    ("body", "bound"),
    [
        ("device = 1\nprobe(device)", True),
        ("probe(device)\ndevice = 1", False),  # assigned later
        ("if c:\n    device = 1\nelse:\n    probe(device)", False),  # sibling branch
        ("if c:\n    device = 1\nprobe(device)", False),
        ("if c:\n    device = 1\nelse:\n    device = 2\nprobe(device)", True),
        ("if c:\n    device = 1\nelse:\n    return\nprobe(device)", True),
        ("for i in r:\n    device = i\nprobe(device)", False),  # the loop may not run
        ("for device in r:\n    probe(device)", True),
        ("try:\n    device = 1\nexcept E:\n    pass\nprobe(device)", False),
        ("try:\n    device = 1\nexcept E:\n    device = 2\nprobe(device)", True),
        ("try:\n    device = 1\nexcept E:\n    raise\nprobe(device)", True),
        ("try:\n    device = 1\nexcept E:\n    pass\nelse:\n    probe(device)", True),
        ("with m as device:\n    probe(device)", True),
        ("with m:\n    device = 1\nprobe(device)", True),
        ("device = 1\ndel device\nprobe(device)", False),
        ("device = 1\nif c:\n    del device\nprobe(device)", False),
        ("while c:\n    device = 1\nprobe(device)", False),
        ("if (device := f()):\n    probe(device)", True),
        ("x = c and (device := f())\nprobe(device)", False),  # short-circuit walrus
        ("import device\nprobe(device)", True),
        ("def device(): pass\nprobe(device)", True),
    ],
)
def test_definitely_bound_in_a_function(body: str, bound: bool) -> None:
    source = "def f(c, r, m, E):\n" + "".join(f"    {ln}\n" for ln in body.splitlines())
    scopes, tree = build(source)
    use = probe_call(tree).args[0]
    assert scopes.definitely_bound("device", use) is bound


def test_parameters_are_bound_and_defaults_are_not_inside() -> None:
    scopes, tree = build("def f(x, device=None):\n    probe(device)\n")
    assert scopes.definitely_bound("device", probe_call(tree).args[0])
    scopes, tree = build("def f(x, device=probe(device)):\n    pass\n")
    assert not scopes.definitely_bound("device", probe_call(tree).args[0])


@pytest.mark.parametrize(
    ("source", "bound"),
    [
        ("device = 1\ndef f():\n    probe(device)\n", True),
        ("def f():\n    probe(device)\ndevice = 1\n", False),  # f may be called before
        ("def f():\n    probe(device)\nf()\ndevice = 1\n", False),
        ("device = 1\nclass C:\n    def m(self):\n        probe(device)\n", True),
        ("from config import *\ndef f():\n    probe(device)\n", False),  # unknown
        ("def g():\n    device = 1\n    h = lambda: probe(device)\n", True),
        ("def g():\n    h = lambda: probe(device)\n    device = 1\n", False),
    ],
)
def test_definitely_bound_for_free_names(source: str, bound: bool) -> None:
    scopes, tree = build(source)
    assert scopes.definitely_bound("device", probe_call(tree).args[0]) is bound


# ---------------------------------------------------------------- the reaching binding


@pytest.mark.parametrize(
    ("body", "value"),
    [
        ("x = 1\nx = 2\nprobe(x)", "2"),
        ("x = 1\nif c:\n    x = 2\nprobe(x)", None),  # one of two
        ("x = 1\nfor i in r:\n    probe(x)\n    x = 2", None),  # the loop rebinds it
        ("x = 1\nfor i in r:\n    x = 2\n    probe(x)", "2"),
        ("x = 1\nif c:\n    y = 2\nprobe(x)", "1"),
    ],
)
def test_reaching_binding(body: str, value: str | None) -> None:
    source = "def f(c, r):\n" + "".join(f"    {ln}\n" for ln in body.splitlines())
    scopes, tree = build(source)
    found = scopes.reaching("x", probe_call(tree).args[0])
    got = None if found is None or found.value is None else ast.unparse(found.value)
    assert got == value


def test_reaching_through_self_assignment_terminates() -> None:
    # `x = x[0]`: the x read on the right is the binding before, never the statement itself.
    source = "def f(a):\n    x = a\n    x = x[0]\n    x = x[0]\n    probe(x)\n"
    scopes, tree = build(source)
    chain: list[str] = []
    node: ast.expr = probe_call(tree).args[0]
    for _ in range(10):
        assert isinstance(node, ast.Name)
        found = scopes.reaching(node.id, node)
        if found is None or found.value is None:
            break
        chain.append(ast.unparse(found.value))
        node = found.value.value if isinstance(found.value, ast.Subscript) else found.value
    assert chain == ["x[0]", "x[0]", "a"]


# ---------------------------------------------------------------- qualified names, torch


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch as th\nprobe(th.cuda.is_available)\n", "torch.cuda.is_available"),
        ("from torch import cuda\nprobe(cuda.synchronize)\n", "torch.cuda.synchronize"),
        ("import torch\ndef f(torch):\n    probe(torch.device)\n", None),  # a parameter
        (
            "def f():\n    import numpy as torch\n    probe(torch.load)\nimport torch\n",
            "numpy.load",
        ),
        ("import torch\nprobe(dict)\n", None),
        ("from . import torch\nprobe(torch.load)\n", None),
        (
            "try:\n    import torch\nexcept ImportError:\n    torch = None\nprobe(torch.load)\n",
            "torch.load",
        ),
        # two imports of one name: the one that reaches the read
        ("import torch\nimport numpy as torch\nprobe(torch.load)\n", "numpy.load"),
        # ... unknown in a function, which may run after either
        ("import torch\nimport numpy as torch\ndef f():\n    probe(torch.load)\n", None),
        # a local import in one function does not leak into another
        (
            "from numba import cuda\ndef g():\n    from torch import cuda\n"
            "def f():\n    probe(cuda.synchronize)\n",
            "numba.cuda.synchronize",
        ),
        # an assignment after the import: an object of the user's
        ("from torch.cuda import amp\namp = MyAmp()\nprobe(amp.autocast)\n", None),
        ("from torch.cuda import amp\namp = MyAmp()\ndef f():\n    probe(amp.autocast)\n", None),
        ("x = 1\nimport torch\nprobe(torch.cuda)\n", "torch.cuda"),
        # conditional imports of different things
        (
            "if fast:\n    from numba import cuda\nelse:\n    from torch import cuda\n"
            "probe(cuda.synchronize)\n",
            None,
        ),
        ("class C:\n    import torch\n    def m(self):\n        probe(torch.load)\n", None),
        ("import torch\ndef f():\n    torch = get()\n    probe(torch.load)\n", None),
        ("import torch\ndel torch\nimport torch as torch\nprobe(torch.load)\n", "torch.load"),
    ],
)
def test_qualname(source: str, expected: str | None) -> None:
    scopes, tree = build(source)
    assert scopes.qualname(probe_call(tree).args[0]) == expected


def test_is_torch_call() -> None:
    source = (
        "import torch\nimport argparse\np = argparse.ArgumentParser()\n"
        'a = torch.zeros(1, device="cuda")\nb = dict(device="cuda")\n'
        'p.set_defaults(device="cuda")\nc = torch.nn.Linear(1, 1, device="cuda")\n'
    )
    scopes, tree = build(source)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.keywords]
    assert {ast.unparse(c.func): scopes.is_torch_call(c) for c in calls} == {
        "torch.zeros": True,
        "dict": False,
        "p.set_defaults": False,
        "torch.nn.Linear": True,
    }


@pytest.mark.parametrize(
    ("source", "status"),
    [
        ("import torch\n", TorchImport.UNCONDITIONAL),
        ("import os\nfrom torch import nn\n", TorchImport.UNCONDITIONAL),
        ("try:\n    import torch\nexcept ImportError:\n    torch = None\n", TorchImport.OPTIONAL),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n",
            TorchImport.OPTIONAL,
        ),
        ("def f():\n    import torch\n", TorchImport.OPTIONAL),
        ("import numpy\n", TorchImport.NONE),
        ("import torchvision\n", TorchImport.NONE),
    ],
)
def test_torch_import(source: str, status: TorchImport) -> None:
    assert build(source)[0].torch_import()[0] is status


@pytest.mark.parametrize(
    ("source", "alias"),
    [
        ("import torch\nprobe()\n", "torch"),
        ("import torch as th\nprobe()\n", "th"),
        ("import torch.nn\nprobe()\n", "torch"),
        ("probe()\nimport torch\n", None),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\nprobe()\n", None),
        ("try:\n    import torch\nexcept ImportError:\n    torch = None\nprobe()\n", None),
        ("def f():\n    import torch\n    probe()\n", "torch"),
        ("import torch\ndef f(torch):\n    probe()\n", None),
    ],
)
def test_torch_alias(source: str, alias: str | None) -> None:
    scopes, tree = build(source)
    assert scopes.torch_alias(probe_call(tree)) == alias


# ---------------------------------------------------------------- soundness against Python


# `del x` only when bound, so that the one UnboundLocalError possible is at the probe.
_STATEMENTS = st.sampled_from(
    ["x = 1", "if 'x' in dir(): del x", "return", "pass", "IF", "IFELSE", "FOR", "TRY"]
)


@st.composite
def blocks(draw: st.DrawFn, depth: int = 0) -> list[str]:
    """Random statement blocks over one name `x` and conditions c0..c3."""
    out: list[str] = []
    for kind in draw(st.lists(_STATEMENTS, min_size=1, max_size=4)):
        cond = f"c{draw(st.integers(0, 3))}"
        if kind in ("IF", "IFELSE", "FOR", "TRY") and depth >= 2:
            out.append("pass")
        elif kind in ("IF", "IFELSE", "FOR", "TRY"):
            inner = draw(blocks(depth + 1))
            head = {"IF": f"if {cond}:", "IFELSE": f"if {cond}:", "FOR": f"for _ in range({cond}):"}
            if kind == "TRY":
                other = draw(blocks(depth + 1))
                out += ["try:", *(f"    {s}" for s in inner), "    if c3: raise KeyError"]
                out += ["except KeyError:", *(f"    {s}" for s in other)]
                continue
            out += [head[kind], *(f"    {s}" for s in inner)]
            if kind == "IFELSE":
                out += ["else:", *(f"    {s}" for s in draw(blocks(depth + 1)))]
        else:
            out.append(kind)
    return out


@settings(max_examples=150, deadline=None)
@given(blocks())
def test_definitely_bound_is_sound(lines: list[str]) -> None:
    """Whenever the analysis says "bound", no run of the function reads `x` unbound."""
    body = "".join(f"    {s}\n" for s in [*lines, "probe(x)"])
    source = f"def f(c0, c1, c2, c3, probe):\n{body}"
    scopes, tree = build(source)
    if not scopes.definitely_bound("x", probe_call(tree).args[0]):
        return
    namespace: dict[str, object] = {}
    exec(compile(tree, "<fuzz>", "exec"), namespace)
    for flags in itertools.product((0, 1), repeat=4):
        try:
            namespace["f"](*flags, lambda v: v)  # type: ignore[operator]
        except UnboundLocalError as exc:  # pragma: no cover  (the failure this test looks for)
            raise AssertionError(f"x unbound at probe with {flags}:\n{source}") from exc


# ---------------------------------------------------------------- the model's parts


def test_the_parts_answer_as_the_map_does() -> None:
    """The flow analysis and the resolver the map holds give the map's own answers."""
    scopes, tree = build(
        "import torch as th\nif c:\n    x = th.zeros(1)\nelse:\n    x = None\nprobe(x, th.cuda)\n"
    )
    x, cuda = probe_call(tree).args
    assert isinstance(x, ast.Name)
    assert scopes.flow.definitely_bound("x", x) and scopes.definitely_bound("x", x)
    assert scopes.flow.reaching("x", x) is scopes.reaching("x", x) is None
    assert scopes.resolver.qualname(cuda) == scopes.qualname(cuda) == "torch.cuda"


def test_a_dropped_model_is_freed_without_the_cycle_collector() -> None:
    """The parts hold the map weakly: dropping a file's model frees it at once.

    A strong reference back made every model a cycle only ``gc`` frees, which
    cost a check about 8% of its time (the collector walking those trees).
    """
    import gc
    import weakref

    scopes, tree = build("import torch\ndef f(y):\n    z = torch.zeros(1)\n    probe(z, y)\n")
    z = probe_call(tree).args[0]
    assert isinstance(z, ast.Name)
    assert scopes.reaching("z", z) is not None and scopes.qualname(z) is None  # caches filled
    gone = weakref.ref(scopes)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del scopes
        assert gone() is None
    finally:
        if enabled:
            gc.enable()
