"""Two searches of the port made cheaper, each against the search it replaced (the oracle).

* TP504's ``self.X(...)`` helper (``_module_leftovers._held_function``): the values a
  class binds to ``self.X`` are collected in one walk of the class per file, not one walk
  per call. The oracle is the per-call walk, kept here as it was: on generated classes
  (``self.X`` bound by an assignment, an annotated one with or without a value, a chain,
  a tuple target, in nested functions and classes), both give the same name for every
  ``self.X(...)`` call of every method; on the port's own scripts too.
* The model-on-the-CPU search (``_choices._model_on_the_cpu``) builds no index of the
  file's calls where the text cannot hold the word ``cpu``
  (:func:`~torchport.check._prefilter.may_hold`). The oracle is the port with that test
  turned off (every text may hold it): on generated programs that write the CPU in every
  way Python allows (a method, a constant, an escape, split constants, a non-ASCII
  identifier) or not at all, the port writes the same text and reports the same
  findings, with the same messages; on the port's own scripts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport.check.port._choices as choices
from torchport.check._context import Context
from torchport.check.port import port_text
from torchport.check.port._facts import PortFacts
from torchport.check.rules import _module_leftovers
from torchport.check.rules._module_leftovers import _held_function, _self_attribute, _targets

SCRIPTS = Path(__file__).parent / "scripts"


def _old_held_function(node: ast.Call, cls: ast.ClassDef) -> ast.Name | None:
    """The search as it was: a walk of the whole class for each call (the oracle)."""
    attr = _self_attribute(node.func)
    if attr is None:
        return None
    values = [
        n.value
        for n in ast.walk(cls)
        if isinstance(n, ast.Assign | ast.AnnAssign)
        and any(_self_attribute(t) == attr for t in _targets(n))
    ]
    if len(values) == 1 and isinstance(values[0], ast.Name):
        return values[0]
    return None


def _held_agree(source: str) -> int:
    """Both searches name the same node for every ``self.X(...)`` call in a method of a
    class; the number of calls asked."""
    tree = ast.parse(source)
    ctx = Context(source, "<string>", tree)
    facts = PortFacts(ctx)
    asked = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        scope = facts.scope_of.get(id(node))
        if scope is None or scope.cls is None:
            continue
        asked += 1
        assert _held_function(node, scope, ctx) is _old_held_function(node, scope.cls)
    return asked


# What a class's methods bind to `self.X` (X among a few names, so that they meet).
_BINDINGS = (
    "self.{a} = {f}",
    "self.{a} = self.{b} = {f}",
    "self.{a}: object = {f}",
    "self.{a}: object",
    "self.{a}, self.{b} = {f}, {f}",
    "self.{a} = lambda n: {f}(n)",
    "self.{a} = [{f}]",
    "self.{a} += 1",
    "other.{a} = {f}",
)
_CALLS = ("self.{a}(4)", "x = self.{a}(x)", "self.{a}.run(1)", "{f}(2)")
_ATTRS = st.sampled_from(("helper", "fn", "inf"))
_FUNCS = st.sampled_from(("INF", "mask", "print"))


@st.composite
def _statement(draw: st.DrawFn) -> str:
    form = draw(st.sampled_from(_BINDINGS + _CALLS))
    return form.format(a=draw(_ATTRS), b=draw(_ATTRS), f=draw(_FUNCS))


# Blocks a binding may sit in (`{}`: the statement, indented to the block's body).
_OPENERS = (
    "if x:\n    {}",
    "if x:\n    pass\nelse:\n    {}",
    "for i in x:\n    pass\nelse:\n    {}",
    "while x:\n    {}",
    "with x:\n    {}",
    "try:\n    {}\nexcept ValueError:\n    pass",
    "try:\n    pass\nexcept ValueError:\n    {}",
    "try:\n    pass\nexcept* ValueError:\n    {}",
    "try:\n    pass\nfinally:\n    {}",
    "match x:\n    case 1:\n        {}",
    "y = (lambda: 1) if x else 2\n{}",
)


@st.composite
def _placed(draw: st.DrawFn) -> list[str]:
    """A statement, alone or in a block (a block in a block at most), as lines."""
    text = draw(_statement())
    for _ in range(draw(st.integers(0, 2))):
        opener = draw(st.sampled_from(_OPENERS))
        at = next(line for line in opener.splitlines() if "{}" in line)
        text = opener.format(text.replace("\n", "\n" + " " * at.index("{}")))
    return text.splitlines()


@st.composite
def _method(draw: st.DrawFn, name: str) -> str:
    lines = [f"    def {name}(self, x):"]
    for _ in range(draw(st.integers(1, 4))):
        lines += [f"        {line}" for line in draw(_placed())]
    if draw(st.booleans()):  # a nested function and a nested class bind and call too
        lines += ["        def inner():", f"            {draw(_statement())}"]
    if draw(st.booleans()):
        lines += ["        class Local:", "            def go(self):"]
        lines += [f"                {draw(_statement())}"]
    lines.append(f"        return self.{draw(_ATTRS)}(x)")  # one call at least
    return "\n".join(lines)


@st.composite
def _module(draw: st.DrawFn) -> str:
    parts = [
        "import torch",
        "from torch import nn",
        "def INF(n):\n    return torch.ones(n)",
        "def mask(n):\n    return torch.zeros(n, n)",
    ]
    for c in range(draw(st.integers(1, 2))):
        methods = [draw(_method(n)) for n in ("__init__", "forward", "step")]
        parts.append(f"class Net{c}(nn.Module):\n" + "\n".join(methods))
    return "\n".join(parts) + "\n"


@settings(max_examples=120, deadline=None)
@given(_module())
def test_the_held_function_is_the_one_the_per_call_walk_finds(source: str) -> None:
    assert _held_agree(source) > 0


def test_a_helper_bound_once_is_found_and_a_helper_bound_twice_is_not() -> None:
    """The generated classes' two outcomes, each shown once (the oracle agreeing on both)."""
    once = "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
    once += "        self.inf = INF\n    def forward(self, x):\n        return self.inf(4)\n"
    tree = ast.parse(once)
    ctx = Context(once, "<string>", tree)
    facts = PortFacts(ctx)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    scope = facts.scope_of[id(call)]
    found = _held_function(call, scope, ctx)
    assert isinstance(found, ast.Name) and found.id == "INF"
    twice = once.replace("self.inf = INF\n", "self.inf = INF\n        self.inf = INF\n")
    tree = ast.parse(twice)
    ctx = Context(twice, "<string>", tree)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    assert _held_function(call, PortFacts(ctx).scope_of[id(call)], ctx) is None
    assert _held_agree(once) == _held_agree(twice) == 1


def test_the_port_scripts_agree_on_held_functions() -> None:
    scripts = sorted(SCRIPTS.glob("*.py"))
    assert scripts
    for script in scripts:
        _held_agree(script.read_text(encoding="utf-8"))


# ------------------------------------------------------------ the word `cpu`

# How a program may put its model on the CPU (or not), each spelling Python allows.
_MOVES = (
    "net = net.cpu()",
    'net = net.to("cpu")',
    'net = net.to("cpu:0")',
    'net = net.to(device="cpu")',
    'net = net.to(torch.device("cpu"))',
    'net = net.to("\\x63pu")',
    'net = net.to("\\143pu")',
    'net = net.to("c" "pu")',
    'net = net.to("cp"\n    "u")',
    "net = net.\uff43\uff50\uff55()",  # fullwidth: NFKC makes it `cpu`
    "net = net.to(device)",
    "net = net.cuda()",
    "net.eval()",
    "",
)
_MODELS = ("nn.Linear(4, 2)", "nn.Sequential(nn.Linear(4, 2), nn.ReLU())", "Net()")
_AFTER = ("out = net(x)", "print(net)", "torch.save(net.state_dict(), 'w.pt')", "")


def _outcome(source: str) -> tuple[str, list[tuple[str, int, int, str]]]:
    outcome = port_text(source, "prog.py")
    assert not outcome.failures
    found = [(f.code, f.line, f.col, f.message) for f in outcome.remaining]
    return outcome.source, found


def _cpu_agree(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The port's text and findings with the word test and without it (the oracle)."""
    with_test = _outcome(source)
    with monkeypatch.context() as m:
        m.setattr(choices, "may_hold", lambda source, word: True)
        without = _outcome(source)
    assert with_test == without


@st.composite
def _cpu_program(draw: st.DrawFn) -> str:
    lines = [
        "import torch",
        "from torch import nn",
        "class Net(nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.fc = nn.Linear(4, 2)",
        "    def forward(self, x):",
        "        return self.fc(x)",
        "x = torch.randn(3, 4)",
        f"net = {draw(st.sampled_from(_MODELS))}",
    ]
    for _ in range(draw(st.integers(1, 3))):
        lines.append(draw(st.sampled_from(_MOVES)))
        lines.append(draw(st.sampled_from(_AFTER)))
    return "\n".join(line for line in lines if line) + "\n"


@settings(max_examples=60, deadline=None)
@given(_cpu_program())
def test_the_word_test_changes_no_port(source: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _cpu_agree(source, monkeypatch)


_HIDDEN = _MOVES[5:10]  # an escape (hex, octal), split constants, a fullwidth name


@pytest.mark.parametrize("move", _HIDDEN)
def test_a_cpu_the_text_hides_is_still_the_program_s_choice(
    move: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each hidden spelling of the CPU (no ``cpu`` in the text) that the search must still
    see: the word test lets it through, and the port agrees with the oracle."""
    source = f"import torch\nfrom torch import nn\nnet = nn.Linear(4, 2)\n{move}\nout = net(x)\n"
    assert "cpu" not in source
    assert choices.may_hold(source, "cpu")
    _cpu_agree(source, monkeypatch)


def test_the_port_scripts_agree_on_the_word_test(monkeypatch: pytest.MonkeyPatch) -> None:
    scripts = sorted(SCRIPTS.glob("*.py"))
    assert scripts
    for script in scripts:
        _cpu_agree(script.read_text(encoding="utf-8"), monkeypatch)


def test_the_class_bindings_are_kept_per_file() -> None:
    """One walk per class: the second call of a file reads what the first collected."""
    source = "class Net:\n    def f(self):\n        self.inf = INF\n        self.inf(3)\n"
    tree = ast.parse(source)
    ctx = Context(source, "<string>", tree)
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    first = _module_leftovers._self_bindings(cls, ctx)
    assert _module_leftovers._self_bindings(cls, ctx) is first
    assert [type(v).__name__ for v in first["inf"]] == ["Name"]
