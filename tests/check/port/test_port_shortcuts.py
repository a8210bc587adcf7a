"""The port's shortcuts (issue 31, s31an) answer as the full analyses they skip.

Each shortcut skips a walk where a cheaper look shows the walk cannot find anything:

* ``_unsure_calls.dynamic_calls`` walks no tree whose text names none of ``globals``,
  ``vars``, ``locals`` (ASCII text: every identifier is written as it is; a non-ASCII one
  may spell it otherwise, NFKC);
* ``_models.registries`` and ``_command_line._constants`` count the module's stores only
  when some top-level assignment is a candidate (with none, nothing is left to filter);
* ``DeviceFlow.fixed_point`` reads, each round, only the nodes of the kinds a round looks at
  (``_iterated.ROUNDS``), picked once per call from ``scope.nodes``, in its order.

The oracles are written apart from the code under test: the parsed tree's own names (for
the text test), and the functions as they were before (a full walk, every node each round),
on generated modules and on the tutorial scripts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.port import _command_line, _device_flow, _models, _unsure_calls
from torchport.check.port._calls import is_move, moves_all
from torchport.check.port._collected import added, collector
from torchport.check.port._guesses import unpacked
from torchport.check.port._iterated import ITERATES, positions_taken
from torchport.check.port._rewrite import port_text

_SCRIPTS = Path(__file__).parent / "scripts"
_TABLES = ("globals", "vars", "locals")

# ---------------------------------------------------------------- dynamic_calls' text test

# Pieces of modules: the table names as names, attributes, parts of longer names, split
# or escaped in constants (which make no name), in comments, and spelled in fullwidth
# letters (NFKC makes them the ASCII name: a non-ASCII text is always walked).
_PIECES = (
    "x = globals()[name]()",
    "y = vars()[args.arch](3)",
    "z = locals()[k]().to(d)",
    "w = globals()['Net']()",
    "v = \uff47lobals()[key]()",
    "u = \uff56ars()[key]()",
    "globals = dict(a=1)\nt = globals()[k]()",
    "t = my_vars_table[k]()",
    "t = obj.globals()[k]()",
    "s = 'glo' 'bals'",
    "s = '\\x67lobals'",
    "s = '''vars'''",
    "# locals()[k]() in a comment",
    "n = Net()",
    "def make(k):\n    return vars()[k]()",
    "def make(k):\n    return g()[k]()",
)
_MODEL = "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n"


@st.composite
def _table_modules(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5))
    return _MODEL + "\n".join(parts) + "\n"


def _names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


@contextmanager
def _full_walk() -> Iterator[None]:
    """``dynamic_calls`` with its text test passing every text: the walk it skips."""
    kept = _unsure_calls._may_name
    _unsure_calls._may_name = lambda source, words: True  # type: ignore[assignment]
    try:
        yield
    finally:
        _unsure_calls._may_name = kept


def _dynamic(source: str) -> list[tuple[int, int]]:
    ctx = Context(source, "m.py", ast.parse(source))
    return [(c.lineno, c.col_offset) for c in _unsure_calls.dynamic_calls(ctx, True)]


@settings(max_examples=40, deadline=None)
@given(_table_modules())
def test_a_text_naming_no_table_parses_to_no_such_name(source: str) -> None:
    if not _unsure_calls._may_name(source, _TABLES):
        assert not _names(ast.parse(source)) & set(_TABLES)


@settings(max_examples=25, deadline=None)
@given(_table_modules())
def test_dynamic_calls_as_the_full_walk(source: str) -> None:
    fast = _dynamic(source)
    with _full_walk():
        assert fast == _dynamic(source)


def test_fullwidth_table_names_are_walked() -> None:
    source = _MODEL + "m = \uff47lobals()[key]()\n"
    assert "globals" not in source and "globals" in _names(ast.parse(source))
    assert _dynamic(source) == [(4, 4)]  # line 4, after the model class


# ---------------------------------------------------------------- registries and _constants


def _registries_walked(tree: ast.Module) -> dict[str, list[str]]:
    """``registries`` as it was: every store of the module counted, then filtered."""
    found: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    for stmt in tree.body:
        for node in ast.walk(stmt) if not isinstance(stmt, ast.ClassDef) else ():
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                counts[node.id] = counts.get(node.id, 0) + 1
            elif (
                isinstance(node, ast.Subscript)
                and not isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name)
            ):
                counts[node.value.id] = counts.get(node.value.id, 0) + 2
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Dict)
            and stmt.value.values
            and all(isinstance(v, ast.Name) for v in stmt.value.values)
        ):
            found[stmt.targets[0].id] = [v.id for v in stmt.value.values]  # type: ignore[attr-defined]
    return {  # (x31an's later filter, the same on both sides: the cut is the count's)
        name: held
        for name, held in found.items()
        if counts.get(name) == 1 and not _models.changed_after(tree, name)
    }


def _constants_walked(tree: ast.Module) -> frozenset[str]:
    """``_constants`` as it was: every store of the module walked."""
    literal: set[str] = set()
    plain: set[int] = set()
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and _command_line._literal(stmt.value)
        ):
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                literal.add(target.id)
                plain.add(id(target))
    others = {
        n.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and id(n) not in plain
    }
    return frozenset(literal - others)


# Module-level statements: registries and literals (candidates), their rebinding by every
# kind of store (a second assignment, an item store, `del`, a loop, `global` in a function,
# a walrus, a class body's own names), and statements with no candidate at all.
_STATEMENTS = (
    "MODELS = {'a': NetA, 'b': NetB}",
    "OTHER = {'a': NetA}",
    "EMPTY = {}",
    "MIXED = {'a': NetA, 'b': 1}",
    "LR = 0.1",
    "STEPS = -3",
    "NAME = 'x'",
    "MODELS = {'c': NetC}",
    "MODELS['d'] = NetD",
    "del OTHER",
    "for LR in range(3):\n    pass",
    "def f():\n    global STEPS\n    STEPS = 4",
    "if (NAME := 'y'):\n    pass",
    "class C:\n    LR = 2\n    MODELS = {'z': NetZ}",
    "x = y = 1",
    "a, b = 1, 2",
    "print(MODELS)",
    "import os",
    "def g(MODELS):\n    return MODELS['a']",
)


@st.composite
def _top_modules(draw: st.DrawFn) -> str:
    return "\n".join(draw(st.lists(st.sampled_from(_STATEMENTS), max_size=7))) + "\n"


@settings(max_examples=60, deadline=None)
@given(_top_modules())
def test_registries_and_constants_as_the_full_walk(source: str) -> None:
    tree = ast.parse(source)
    assert _models.registries(tree) == _registries_walked(tree)
    assert _command_line._constants(tree) == _constants_walked(tree)


# ---------------------------------------------------------------- fixed_point's rounds


def _fixed_point_scanned(
    self: _device_flow.DeviceFlow, scope: _device_flow.PortScope, values: set[str], *, unpack: bool
) -> None:
    """``DeviceFlow.fixed_point`` as it was: every node of the scope read each round."""
    changed = True
    while changed:
        changed = False
        for targets, value in scope.assigns:
            flags = self.item_calls.get(id(value)) if self.item_calls else None
            for part in positions_taken(targets, flags):
                for name in _device_flow.names_of(part):
                    if name not in values:
                        values.add(name)
                        changed = True
            if self.on_device(value, scope) and (unpack or not unpacked(targets, value, scope)):
                for target in targets:
                    for name in _device_flow.names_of(target):
                        if name not in values:
                            values.add(name)
                            changed = True
            if is_move(value) or moves_all(value):
                for target in targets:
                    scope.moved.update(_device_flow.names_of(target))
        for node in scope.nodes:
            if isinstance(node, ITERATES):
                for target, held in self.taken(node, scope):
                    if self.on_device(held, scope) and (
                        unpack or not unpacked([target], held, scope)
                    ):
                        for name in _device_flow.names_of(target):
                            if name not in values:
                                values.add(name)
                                changed = True
            elif (
                isinstance(node, (ast.Call, ast.AugAssign, ast.Assign))
                and (holder := collector(node, scope, self.module)) is not None
                and holder not in values
                and any(self.on_device(a, scope) for a in added(node))
            ):
                values.add(holder)
                changed = True


def _ported(source: str) -> tuple[str, list[str]]:
    outcome = port_text(source, "train.py")
    return outcome.source, [str(f) for f in outcome.remaining]


def _scanned(source: str) -> tuple[str, list[str]]:
    kept = _device_flow.DeviceFlow.fixed_point
    _device_flow.DeviceFlow.fixed_point = _fixed_point_scanned  # type: ignore[method-assign]
    try:
        return _ported(source)
    finally:
        _device_flow.DeviceFlow.fixed_point = kept  # type: ignore[method-assign]


# Device values reached through loops, comprehensions and collectors (`append`, `+=`,
# `= acc + [...]`), in functions and at module level.
_FLOWS = (
    "for x, y in loader:\n    out = model(x)\n    preds.append(out)",
    "outs = [model(x) for x, _ in loader]",
    "for t in outs:\n    total = total + t.sum()",
    "preds += [model(b) for b in batches]",
    "acc = acc + [model(xs)]",
    "for p in preds:\n    print(p.cpu().numpy())",
    "ys = {k: model(v) for k, v in items.items()}",
    "z = torch.zeros(3)\nz2 = z + model(xs)",
)
_HEAD = (
    "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n"
    "model = nn.Linear(3, 3)\nloader = DataLoader(torch.randn(8, 3), batch_size=2)\n"
    "xs = torch.randn(2, 3)\nbatches = [xs]\nitems = {'a': xs}\n"
    "preds, acc, outs, total = [], [], [], 0\n"
)


@st.composite
def _flow_programs(draw: st.DrawFn) -> str:
    body = "\n".join(draw(st.lists(st.sampled_from(_FLOWS), min_size=1, max_size=4)))
    if draw(st.booleans()):
        inner = "\n".join("    " + line for line in body.splitlines())
        body = f"def run(model, loader, preds, acc, outs, total):\n{inner}\n    return preds\n"
        body += "run(model, loader, preds, acc, outs, total)"
    return _HEAD + body + "\n"


@pytest.mark.slow  # (two ports per example: the tutorial scripts' test runs by default)
@settings(max_examples=20, deadline=None)
@given(_flow_programs())
def test_fixed_point_rounds_port_as_the_full_scan(source: str) -> None:
    assert _ported(source) == _scanned(source)


def test_fixed_point_rounds_on_the_tutorial_scripts() -> None:
    for script in sorted(_SCRIPTS.glob("*.py")):
        source = script.read_text(encoding="utf-8")
        assert _ported(source) == _scanned(source), script.name
