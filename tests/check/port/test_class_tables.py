"""The port's per-class and per-file tables, against the searches they replaced (the oracles).

* ``FileStructure.definitions``: how many ``def``s and ``class``es define each name, counted
  from the structure's scopes and classes (``_facts._inner_factory_returns`` built the
  scope map's node index of the whole tree for it). Oracle: ``ast.walk`` of the tree.
* ``rules/_module_tensors``: a module class's ``__init__`` chain, the names its
  ``__init__`` calls on ``self``, whether a method only ``__init__`` reaches, and the
  submodules it builds, each worked out once per class and file (they were worked out per
  method or per call, with walks of the class or of the whole tree). Oracles: the old
  searches, kept here as they were, on generated module classes (several ``__init__``s,
  methods under ``if``/``try``, nested functions and classes, ``self.X`` named outside
  the class) and on the port's own scripts.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check._context import Context
from torchport.check.port._device_flow import PortScope
from torchport.check.port._facts import port_facts
from torchport.check.port._structure import FileStructure
from torchport.check.rules import _module_tensors as mt

pytest.importorskip("torch", reason="the port fuzzer's programs need torch (and numpy)")
port_programs = load("port_programs_for_class_tables", Path(__file__).parent / "port_programs.py")
SCRIPTS = Path(__file__).parent / "scripts"


# ------------------------------------------------------------ the oracles (as they were)


def _old_definitions(tree: ast.Module) -> Counter[str]:
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return Counter(n.name for n in ast.walk(tree) if isinstance(n, kinds))


def _old_run_by_init(cls: ast.ClassDef) -> tuple[dict[str, ast.FunctionDef], set[int]]:
    methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef)}
    found: dict[str, ast.FunctionDef] = {}
    inside: set[int] = set()
    todo = ["__init__"]
    while todo:
        name = todo.pop()
        if name in found or name not in methods:
            continue
        found[name] = methods[name]
        for c in ast.walk(methods[name]):
            if (
                isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute)
                and isinstance(c.func.value, ast.Name)
                and c.func.value.id == "self"
            ):
                inside.add(id(c.func))
                todo.append(c.func.attr)
    return found, inside


def _old_called_by_init(name: str, cls: ast.ClassDef) -> bool:
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
            return any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == name
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "self"
                for n in ast.walk(stmt)
            )
    return False


def _old_builds_the_module(method: ast.FunctionDef, cls: ast.ClassDef, tree: ast.AST) -> bool:
    if method.name == "__init__":
        return True
    chain, inside = _old_run_by_init(cls)
    return method.name in chain and not any(
        isinstance(n, ast.Attribute) and n.attr == method.name and id(n) not in inside
        for n in ast.walk(tree)
    )


# ------------------------------------------------------------ generated module classes

_STATEMENTS = [
    "self.fc = nn.Linear(4, 4)",
    "self.w = nn.Parameter(torch.ones(2))",
    "self.n = 3",
    "self.{m}()",
    "self.{m}(x)",
    "other.{m}()",
    "y = self.{m}",
    "if x:\n    self.{m}()",
    "try:\n    self.act = nn.ReLU()\nexcept Exception:\n    self.{m}()",
    "def inner():\n    self.{m}()\n    self.g = nn.GELU()",
    "class Inner:\n    z = nn.Linear(2, 2)",
    "self.blocks: list = [nn.Linear(2, 2)]",
    "return torch.zeros(2)",
    # the name written where it is no `X.<name>` attribute, or in a text not ASCII: the
    # text's count of the name's words proves nothing there (the tree is asked)
    "s = 'self.{m}()'  # other.{m}",
    "{m} = 2",
    "s = '\u00e9'",
    "other.\uff48elper()",  # NFKC: `other.helper()`, a word the ASCII text does not hold
    "async def {m}(self):\n    pass",
]
_NAMES = ["__init__", "build", "reset", "forward", "helper"]


def _indent(text: str, by: str) -> str:
    return "\n".join(by + line for line in text.splitlines())


@st.composite
def _module_program(draw: st.DrawFn) -> str:
    classes = []
    for k in range(draw(st.integers(1, 2))):
        methods = []
        for _ in range(draw(st.integers(0, 5))):
            name = draw(st.sampled_from(_NAMES))
            picked = draw(st.lists(st.sampled_from(_STATEMENTS), min_size=1, max_size=4))
            body = "\n".join(s.format(m=draw(st.sampled_from(_NAMES))) for s in picked)
            method = f"def {name}(self, x=None):\n{_indent(body, '    ')}\n    pass"
            if draw(st.integers(0, 4)) == 0:  # a method under an `if` of the class body
                method = "if True:\n" + _indent(method, "    ")
            methods.append(method)
        if draw(st.booleans()):
            methods.append("def __init__(self):\n    super().__init__()\n    self.build()")
        body = "\n".join(methods) or "pass"
        classes.append(f"class M{k}(nn.Module):\n{_indent(body, '    ')}\n")
    tail = draw(st.sampled_from(["", "m = M0()\nm.reset()\n", "m = M0()\nm.forward(1)\n"]))
    return "import torch\nfrom torch import nn\n\n" + "\n".join(classes) + tail


def _same_tables(source: str) -> None:
    tree = ast.parse(source)
    ctx = Context(source, "<tables>", tree)
    structure = FileStructure(tree, PortScope(tree))
    assert Counter(structure.definitions()) == _old_definitions(tree)
    facts = port_facts(ctx)
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    attrs = [*sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}), "absent"]
    for cls in classes:
        kinds = (ast.Assign, ast.AnnAssign)
        want = sorted(id(n) for n in ast.walk(cls) if isinstance(n, kinds))
        assert sorted(id(n) for n in mt.class_assignments(cls)) == want
        for _ in range(2):  # the second ask is the kept answer
            old_chain, old_inside = _old_run_by_init(cls)
            chain, inside, calls = mt._run_by_init(cls, ctx)
            assert {k: id(v) for k, v in chain.items()} == {k: id(v) for k, v in old_chain.items()}
            assert set(inside) == old_inside
            named = {id(n): n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute)}
            assert calls == Counter(named[i] for i in old_inside)
            for name in attrs:
                assert mt._called_by_init(name, cls, ctx) == _old_called_by_init(name, cls)
            for method in [s for s in ast.walk(cls) if isinstance(s, ast.FunctionDef)]:
                want_built = _old_builds_the_module(method, cls, tree)
                assert mt.builds_the_module(method, cls, ctx) == want_built, method.name
        if facts.active:
            built = set()
            for n in ast.walk(cls):
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
                    for t in n.targets:
                        if (
                            isinstance(t, ast.Attribute)
                            and isinstance(t.value, ast.Name)
                            and t.value.id == "self"
                            and facts.known.builds(n.value, lambda _: False)
                        ):
                            built.add(t.attr)
            assert mt.submodules(cls, facts) == built


@settings(max_examples=150, deadline=None)
@given(_module_program())
def test_the_class_tables_answer_as_the_searches_did_on_module_classes(source: str) -> None:
    _same_tables(source)


@settings(max_examples=40, deadline=None)
@given(port_programs.programs())
def test_the_class_tables_answer_as_the_searches_did_on_generated_programs(source: str) -> None:
    _same_tables(source)


@pytest.mark.parametrize(
    "elsewhere",
    [
        "pass",  # the words are the def and the chain's call: the text answers (built)
        "other.build()",  # another receiver's `build`: not only `__init__` reaches it
        "other.\uff42uild()",  # the same, spelt in fullwidth (NFKC): the text is not read
        "s = 'self.build()'  # self.build()",  # words that are no attribute: the tree asks
        "build = 2",
    ],
)
def test_builds_the_module_where_the_text_counts_the_name_and_where_it_cannot(
    elsewhere: str,
) -> None:
    source = (
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.build()\n"
        "    def build(self):\n        self.fc = nn.Linear(2, 2)\n"
        "    def unused(self):\n        return 1\n"
        f"    def forward(self, x):\n        {elsewhere}\n        return self.fc(x)\n"
    )
    _same_tables(source)
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    build = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "build")
    built = mt.builds_the_module(build, cls, Context(source, "<tables>", tree))
    assert built == ("other." not in elsewhere)  # (NFKC's `other.build` too)


def test_the_class_tables_answer_as_the_searches_did_on_the_port_scripts() -> None:
    scripts = sorted(SCRIPTS.glob("*.py"))
    assert scripts
    for script in scripts:
        _same_tables(script.read_text(encoding="utf-8"))


def test_a_method_only_init_reaches_builds_the_module_and_one_named_elsewhere_does_not() -> None:
    source = (
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.build()\n"
        "        self.reset()\n"
        "    def build(self):\n        self.fc = nn.Linear(2, 2)\n"
        "    def reset(self):\n        self.n = 0\n"
        "    def forward(self, x):\n        return self.fc(x)\n\nm = M()\nm.reset()\n"
    )
    tree = ast.parse(source)
    ctx = Context(source, "<m>", tree)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef)}
    assert mt.builds_the_module(methods["build"], cls, ctx)
    assert not mt.builds_the_module(methods["reset"], cls, ctx)  # `m.reset()` outside
    assert not mt.builds_the_module(methods["forward"], cls, ctx)
    assert mt._called_by_init("build", cls, ctx) and not mt._called_by_init("forward", cls, ctx)
    assert mt.submodules(cls, port_facts(ctx)) == {"fc"}
