"""Rules' whole-file questions are read once per file (or scope), not once per match (issue 34:
every rule linear in its matches).

Helpers walked a whole module or scope for each match they were asked about: TP109's
``_counted_choice._attribute_value`` (the file's ``X.attr = value`` stores, for every
``if args.n_gpu > 0``), ``_idle_choices._only_shown`` (the module's parents, for every
module-level choice) and ``_unread_globals._named_once`` (every node, for every module-level
name); TP101's ``_class_constructions._Scope`` (made anew, and every name's spellings walked,
per construction asked about); TP120's ``_partial_chains._picked_beside``; TP122's
``_autocast_queries._asks_the_cpu_too``; TP303's ``_resident_datasets._assignments``; TP523's
``ClassAttributes._bound_by_another_class``; TP503's test of the file's seeded scopes. Held here:
each rule's own examples grown 4x cost ~4x the Python calls (``benchmarks/
bench_check_linearity.py``'s measure: 5.6-10.8x before, at these sizes), and TP109's three
indexes answer as the per-choice walks they replaced (copied here as oracles) on generated
modules.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.rules import _counted_choice, _unread_globals

_BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_check_linearity.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_check_linearity", _BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("code", ["TP101", "TP109", "TP120", "TP122", "TP303", "TP523"])
def test_a_rule_costs_calls_linear_in_its_matches(code: str) -> None:
    bench = _bench()
    bench._calls(bench._copies(code, 1), code)  # what the first check loads, not counted
    small, big = (bench._calls(bench._copies(code, n), code) for n in (2, 8))
    assert big / small <= 1.1 * 4, f"{code}: {small} -> {big} calls for 4x the matches"


# ---------------------------------------------------------------- the oracles: the old walks


def _named_once_walk(
    tree: ast.Module, target: ast.Name, shown: Callable[[ast.Name], bool] | None = None
) -> bool:
    name = target.id
    word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    readers, namespaces = _unread_globals._READERS, _unread_globals._NAMESPACES
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Name)
            and node.id == name
            and node is not target
            and not (shown is not None and isinstance(node.ctx, ast.Load) and shown(node))
        ):
            return False
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and word.search(node.value)
        ):
            return False
        if isinstance(node, ast.alias) and name in (node.name, node.asname):
            return False
        if isinstance(node, ast.Name) and node.id in readers:
            return False
        if isinstance(node, ast.Attribute) and (
            node.attr in namespaces
            or (
                node.attr in readers
                and isinstance(node.value, ast.Name)
                and node.value.id == "builtins"
            )
        ):
            return False
    return True


def _attribute_value_walk(attr: ast.Attribute, tree: ast.Module) -> ast.expr | None:
    assert isinstance(attr.value, ast.Name)
    want = (attr.value.id, attr.attr)
    values = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and (target.value.id, target.attr) == want
    ]
    return values[0] if len(values) == 1 else None


# ---------------------------------------------------------------- generated modules

# `a·b`: an identifier with a character that is no word character (the search's other path)
_NAMES = ("device", "dev", "dev_2", "x", "args", "builtins", "dév", "a·b")
_ATTRS = ("n_gpu", "device", "cuda")
_READING = ("globals", "eval", "getattr", "__dict__", "modules")  # a reader, or a namespace
_TEXT_PIECES = (*_NAMES, " ", "_", ".", "-", "2", "dev_", "xdevice", "é", "·")


@st.composite
def _statement(draw: st.DrawFn) -> str:
    a, b = draw(st.sampled_from(_NAMES)), draw(st.sampled_from(_NAMES))
    attr, reading = draw(st.sampled_from(_ATTRS)), draw(st.sampled_from(_READING))
    text = "".join(draw(st.lists(st.sampled_from(_TEXT_PIECES), max_size=4)))
    forms = (
        f"print({text!r})",
        f"print('{b}')",
        f"s = 'see {b}.'",
        f"import {a} as {b}",
        f"from m import {a}",
        f"import {a}",
        f"{reading}()",
        f"{a}.{reading}",
        f"{a} = {b}",
        f"{a}: int = {b}",
        f"{a}.{attr} = {b}",
        f"{a}.{attr}: int = torch.cuda.device_count()",
        f"{a}.{attr}: int",
        f"{a}.{attr}, {b} = 1, 2",
        f"{a}.{attr} = {b}.{attr} = 0",
        f"{a} = f'{{{b}}} {text}'",
        f"{a}.{attr}",
        f"def f({b}):\n    {a}.{attr} = {b}\n    return {a}",
        f"if {a}:\n    {b} = {text!r}",
        f"class C:\n    {a} = {b}.{attr}",
    )
    return draw(st.sampled_from(forms))


_MODULES = st.lists(_statement(), min_size=1, max_size=8).map(lambda s: "\n".join(s) + "\n")


def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


@settings(max_examples=60, deadline=None)
@given(_MODULES, st.integers(0, 3))
@example("import dev as x\nx = 1\n", 3)  # each path of the index, one case each
@example("s = 'see a·b.'\na·b = 1\n", 3)
@example("s = 'see dev.'\ndev = 1\n", 3)
@example("x.__dict__\ndevice = dev\n", 3)
@example("builtins.eval\ndevice = dev\n", 3)
@example("eval()\ndevice = dev\nprint(device)\n", 0)
def test_named_once_answers_as_the_walk(source: str, parity: int) -> None:
    tree = _parsed(source)
    if tree is None:
        return
    shown = None if parity == 3 else (lambda node: node.lineno % 3 == parity)
    targets = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
    for target in targets:
        expected = _named_once_walk(tree, target, shown)
        assert _unread_globals._named_once(tree, target, shown) is expected, (target.id, source)


@settings(max_examples=60, deadline=None)
@given(_MODULES)
def test_attribute_value_answers_as_the_walk(source: str) -> None:
    source += "# device_count, and every attribute: " + " ".join(_ATTRS + _READING) + "\n"
    tree = _parsed(source)
    if tree is None:
        return
    ctx = Context(source, "m.py", tree)
    for attr in [n for n in ast.walk(tree) if isinstance(n, ast.Attribute)]:
        if not isinstance(attr.value, ast.Name):
            continue
        assert _counted_choice._attribute_value(attr, ctx) is _attribute_value_walk(attr, tree)
