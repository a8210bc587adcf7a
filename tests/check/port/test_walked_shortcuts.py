"""Two more port searches made cheaper, each against the search it replaced (the oracle).

* The model-on-the-CPU search (``_choices._model_on_the_cpu``) builds no index of the
  file's calls where the port's own walk of the file (``FileStructure``: every ``.to``,
  ``.cuda`` and now ``.cpu`` call it meets) saw no ``x.cpu()`` and no ``.to(...)`` to the
  CPU written out: the only calls the search can return; nor where at most one of those
  calls is such a choice (p31v: the index only orders several). The oracle is the search as it
  was (every call of the index), kept here: on generated programs that put a model or a
  tensor on the CPU in every place a call can sit (a module's body, a function, a method,
  a nested function, a class body, a lambda, a decorator, a default, an annotation) or
  nowhere, both return the same call; on the port's own scripts too.
* The hand-trained weights of a scope (``_captures.grad_leaves``) look at its statements
  only (``w.requires_grad_()`` and ``w.requires_grad = True`` are statements), not every
  node. The oracle is the scan of every node, kept here: the same weights in the same
  order for every scope of generated programs and of the port's scripts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.port import _captures, _choices
from torchport.check.port._calls import grad_leaf, grad_maker
from torchport.check.port._device_flow import PortScope
from torchport.check.port._facts import PortFacts
from torchport.check.port._models import QualName

SCRIPTS = Path(__file__).parent / "scripts"


def _old_model_on_the_cpu(facts: PortFacts, ctx: Context) -> ast.Call | None:
    """The search as it was before the walk's gate (the oracle): every call of the index."""
    if not _choices.may_hold(ctx.source, "cpu"):
        return None
    for call in ctx.scopes.nodes_of(ast.Call):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        func = call.func
        if not (func.attr == "cpu" and not call.args) and not _choices._to_the_cpu(call, ctx):
            continue
        scope = facts.scope_of.get(id(call))
        if scope is None or scope.internal:
            continue
        if facts.known.builds(func.value, lambda _: False):
            return call
        if isinstance(func.value, ast.Name) and facts.holds_model(func.value, scope):
            name, stmt = func.value.id, facts.parents.get(id(call))
            if isinstance(stmt, ast.Expr | ast.Assign) and any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id == name
                and n.lineno > call.lineno
                for n in scope.nodes
            ):
                return call
    return None


def _cpu_agree(source: str) -> ast.Call | None:
    tree = ast.parse(source)
    ctx = Context(source, "<string>", tree)
    facts = PortFacts(ctx)
    found = _choices._model_on_the_cpu(facts, ctx)
    assert found is _old_model_on_the_cpu(facts, ctx)
    return found


# Calls that may put something on the CPU, or look like it and do not.
_CPU_CALLS = (
    "net.cpu()",
    "net.cpu(0)",
    "nn.Linear(4, 2).cpu()",
    'net.to("cpu")',
    'net.to("cpu:1")',
    'net.to(device="cpu")',
    'net.to(torch.device("cpu"))',
    'nn.Linear(4, 2).to("cpu")',
    'x.to("cpu")',
    "x.cpu()",
    "net.to(device)",
    "net.cuda()",
    "net.cpu",
    'getattr(net, "cpu")()',
)
_AFTER = ("out = net(x)", "print(net)", "")
# Where a call may sit (`{}`): the scopes of the port and the places outside them.
_PLACES = (
    "{}",
    "net = {}",
    "def run(net, x):\n    net = {}\n    out = net(x)",
    "def run():\n    net = nn.Linear(4, 2)\n    net = {}\n    out = net(x)",
    "class Net(nn.Module):\n    def forward(self, net):\n        net = {}\n        return net(x)",
    "def outer():\n    def inner(net):\n        net = {}\n        return net(x)",
    "class Holder:\n    moved = {}",
    "f = lambda net: {}",
    "@wrap({})\ndef g():\n    pass",
    "def h(a=({})):\n    pass",
    "def k(a: ({})) -> None:\n    pass",
)


@st.composite
def _cpu_program(draw: st.DrawFn) -> str:
    lines = ["import torch", "from torch import nn", "def wrap(f):\n    return f"]
    lines += ["x = torch.randn(3, 4)", "net = nn.Linear(4, 2)"]
    for _ in range(draw(st.integers(0, 3))):
        place = draw(st.sampled_from(_PLACES))
        lines.append(place.format(draw(st.sampled_from(_CPU_CALLS))))
        lines.append(draw(st.sampled_from(_AFTER)))
    return "\n".join(line for line in lines if line) + "\n"


@settings(max_examples=150, deadline=None)
@given(_cpu_program())
def test_the_walk_s_gate_finds_the_call_the_index_finds(source: str) -> None:
    _cpu_agree(source)


def test_a_model_put_on_the_cpu_is_found_with_the_gate_and_a_cuda_move_is_not() -> None:
    """Both outcomes of the generated programs, each once (the oracle agreeing on both)."""
    head = "import torch\nfrom torch import nn\nx = torch.randn(3, 4)\nnet = nn.Linear(4, 2)\n"
    found = _cpu_agree(head + "net = net.cpu()\nout = net(x)\n")
    assert found is not None and ast.unparse(found) == "net.cpu()"
    found = _cpu_agree(head + 'net = net.to(device="cpu")\nout = net(x)\n')
    assert found is not None and ast.unparse(found) == "net.to(device='cpu')"
    assert _cpu_agree(head + "# the cpu is not used\nnet = net.cuda()\nout = net(x)\n") is None


def test_the_port_scripts_agree_on_the_cpu_search() -> None:
    scripts = sorted(SCRIPTS.glob("*.py"))
    assert scripts
    for script in scripts:
        _cpu_agree(script.read_text(encoding="utf-8"))


# ------------------------------------------------------------ hand-trained weights


def _old_grad_leaves(scope: PortScope, qualname: QualName) -> Iterator[tuple[list[str], ast.expr]]:
    """The weights as found before (the oracle): every node of the scope asked."""
    for targets, value in scope.assigns:
        made = grad_leaf(value, qualname)
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if made is not None and names:
            yield names, made
    for node in scope.nodes:
        name = _captures._made_a_weight(node)
        for value in scope.values_of(name) if name in scope.local else ():
            made = grad_maker(value, qualname)
            if made is not None:
                yield [name], made


def _leaves_agree(source: str) -> int:
    """The same weights for every scope; how many were found."""
    tree = ast.parse(source)
    ctx = Context(source, "<string>", tree)
    facts = PortFacts(ctx)
    found = 0
    for scope in facts.scopes:
        new = list(_captures.grad_leaves(scope, ctx.qualname))
        assert new == list(_old_grad_leaves(scope, ctx.qualname))
        found += len(new)
    return found


_WEIGHTS = (
    "w = torch.zeros(2)",
    "w = start.clone()",
    "w = torch.randn(3, requires_grad=True)",
    "w = torch.zeros(2).requires_grad_()",
    "w = nn.Parameter(start)",
    "w.requires_grad_()",
    "w.requires_grad_(True)",
    "w.requires_grad_(False)",
    "w.requires_grad = True",
    "w.requires_grad = False",
    "v = w.requires_grad_()",
    "print(w.requires_grad_())",
    "if w.requires_grad_():\n    pass",
    "for i in range(2):\n    w.requires_grad_()",
    "u.requires_grad = True",
)
_SCOPES = ("{}", "def f(start):\n    w = start.clone()\n    {}", "def g():\n    {}")


@st.composite
def _weights_program(draw: st.DrawFn) -> str:
    lines = ["import torch", "from torch import nn", "start = torch.ones(2)", "w = start"]
    for _ in range(draw(st.integers(1, 5))):
        scope = draw(st.sampled_from(_SCOPES))
        statement = draw(st.sampled_from(_WEIGHTS))
        indent = " " * (len(scope.splitlines()[-1]) - 2)
        lines.append(scope.format(statement.replace("\n", "\n" + indent)))
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(_weights_program())
def test_the_statements_give_the_weights_every_node_gives(source: str) -> None:
    _leaves_agree(source)


def test_a_weight_made_by_a_statement_is_found() -> None:
    source = "import torch\nw = torch.zeros(2)\nw.requires_grad_()\nv = torch.ones(2)\n"
    source += "v.requires_grad = True\n"
    assert _leaves_agree(source) == 2


def test_the_port_scripts_agree_on_hand_trained_weights() -> None:
    scripts = sorted(SCRIPTS.glob("*.py"))
    assert scripts
    for script in scripts:
        _leaves_agree(script.read_text(encoding="utf-8"))
