"""The engine and the fix loop with test-only rules: dispatch, walk order, failures, fixes."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

import torchport.check.rules as rules_pkg
from torchport.check import check_source, fix_source
from torchport.check._context import Context
from torchport.check._engine import RuleSet, check_text
from torchport.check._fix import _Accepted, _overlaps, fix_text
from torchport.check._match import called
from torchport.check._rule import Edit, Finding, Fix, FixSafety, Rule, finding_key, unique_findings
from torchport.check._select import select_rules
from torchport.errors import ConfigError


class CudaCall(Rule):
    """What it does: test rule: `x.cuda()` -> `x.to(device)` plus one shared definition."""

    code = "TP9990"
    name = "test-cuda-call"
    message = "use .to(device)"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "cuda" and not node.args:
            edits = [Edit(ctx.end(func.value), ctx.end(node), ".to(device)")]
            if "device = " not in ctx.source:
                edits.append(Edit(0, 0, 'device = "cpu"\n'))
            yield ctx.finding(self, node, fix=Fix(tuple(edits), FixSafety.SAFE))


class PrintCall(Rule):
    """What it does: test rule: `print(` -> `log(` (unsafe)."""

    code = "TP9991"
    name = "test-print"
    message = "use log()"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if isinstance(node.func, ast.Name) and node.func.id == "print":
            fix = Fix((ctx.replace(node.func, "log"),), FixSafety.UNSAFE)
            yield ctx.finding(self, node, fix=fix)


class Boom(Rule):
    """What it does: test rule that crashes on the name `boom`."""

    code = "TP9992"
    name = "test-boom"
    message = "never seen"
    node_types = (ast.Name,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id == "boom":
            raise KeyError("boom")
        if node.id == "flag":
            yield ctx.finding(self, node)


class Noisy(Rule):
    """What it does: test rule off by default, reporting every name twice (dedup)."""

    code = "TP9993"
    name = "test-noisy"
    message = "a name"
    default = False
    node_types = (ast.Name,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        yield ctx.finding(self, node)
        yield ctx.finding(self, node)


class BadFix(Rule):
    """What it does: test rule whose fix breaks the syntax of `broken()`."""

    code = "TP9994"
    name = "test-bad-fix"
    message = "x"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if isinstance(node.func, ast.Name) and node.func.id == "broken":
            start = ctx.start(node)
            yield ctx.finding(self, node, fix=Fix((Edit(start, start, "("),), FixSafety.SAFE))


ALL_TEST_RULES = (CudaCall, PrintCall, Boom, Noisy, BadFix)


@pytest.fixture
def with_test_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules_pkg, "RULES", ALL_TEST_RULES)


def test_test_rules_do_not_pollute_registry_or_rules() -> None:
    for cls in ALL_TEST_RULES:
        assert cls.code not in Rule.registry
        assert cls not in rules_pkg.RULES


# ---------------------------------------------------------------- walk


class Recorder(Rule):
    """What it does: records what the engine shows it."""

    code = "TP9995"
    name = "test-recorder"
    message = "r"
    node_types = (ast.Call, ast.Name)
    seen: ClassVar[list[tuple[str, list[str]]]] = []

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        Recorder.seen.append((ast.dump(node), [type(a).__name__ for a in ctx.ancestors]))
        yield from ()


class LoadRule(Rule):
    """What it does: asks for the Load context nodes the walk skips by default."""

    code = "TP9996"
    name = "test-load"
    message = "load"
    node_types = (ast.Load,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        yield ctx.finding(self, ctx.ancestors[-1])


def _reference(tree: ast.AST) -> list[tuple[str, list[str]]]:
    """A recursive walk over ast.iter_child_nodes: what the engine must reproduce."""
    out: list[tuple[str, list[str]]] = []
    stack: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.expr_context | ast.operator | ast.cmpop | ast.boolop | ast.unaryop):
            return
        if isinstance(node, ast.Call | ast.Name):
            out.append((ast.dump(node), [type(a).__name__ for a in stack]))
        stack.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)
        stack.pop()

    visit(tree)
    return out


SAMPLES = [
    "f(a, b=g(c))[d](e)\n",
    "def f(x):\n    for i in y(x):\n        z = i.cuda() + h(i)\n    return {k: v(k) for k in x}\n",
    "class A(B):\n    @dec(1)\n    def m(self, a=q()):\n"
    "        with o(p) as r:\n            s(t)\n",
    "x = [a if b(c) else d(e) for e in f]\nlambda: g(h)\nmatch m(n):\n    case P(q): r(s)\n",
]


@pytest.mark.parametrize("source", SAMPLES)
def test_walk_matches_iter_child_nodes_order_and_ancestors(source: str) -> None:
    Recorder.seen = []
    tree = ast.parse(source)
    check_text(source, "s.py", RuleSet([Recorder]))
    assert Recorder.seen == _reference(tree)


names = st.sampled_from(["a", "b", "t", "f"])
exprs = st.recursive(
    names,
    lambda inner: st.one_of(
        st.tuples(inner, st.lists(inner, max_size=3)).map(lambda p: f"{p[0]}({', '.join(p[1])})"),
        st.tuples(inner, names).map(lambda p: f"{p[0]}.{p[1]}"),
        st.tuples(inner, inner).map(lambda p: f"({p[0]} + {p[1]})"),
        st.lists(inner, max_size=3).map(lambda xs: f"[{', '.join(xs)}]"),
    ),
    max_leaves=12,
)


@given(st.lists(exprs, min_size=1, max_size=4))
def test_walk_matches_reference_on_generated_code(lines: list[str]) -> None:
    source = "".join(f"{line}\n" for line in lines)
    Recorder.seen = []
    check_text(source, "s.py", RuleSet([Recorder]))
    assert Recorder.seen == _reference(ast.parse(source))


def test_unpositioned_nodes_visited_only_when_a_rule_asks() -> None:
    findings = check_text("a = b + c\n", "s.py", RuleSet([LoadRule])).findings
    assert [(f.line, f.col) for f in findings] == [(1, 5), (1, 9)]


def test_findings_sorted_by_line_col_code_and_deduplicated() -> None:
    source = "flag.cuda(); flag\nx.cuda()\n"
    outcome = check_text(source, "s.py", RuleSet([CudaCall, Boom, Noisy]))
    keys = [(f.line, f.col, f.code) for f in outcome.findings]
    assert keys == sorted(keys)
    assert len(keys) == len(set(keys))  # Noisy yields each name twice: reported once
    assert ("TP9990", 1, 1) in {(f.code, f.line, f.col) for f in outcome.findings}


def test_rule_failure_is_reported_and_other_rules_still_run() -> None:
    source = "boom\nflag\nx.cuda()\nboom\n"
    outcome = check_text(source, "pkg/m.py", RuleSet([Boom, CudaCall]))
    assert len(outcome.failures) == 1  # the broken rule is turned off for the file
    failure = outcome.failures[0]
    assert (failure.code, failure.path, failure.line) == ("TP9992", "pkg/m.py", 1)
    assert "TP9992" in str(failure) and "test-boom" in str(failure) and "pkg/m.py" in str(failure)
    assert [f.code for f in outcome.findings] == ["TP9990"]


def test_check_source_raises_on_rule_failure(with_test_rules: None) -> None:
    with pytest.raises(RuntimeError, match="TP9992"):
        check_source("boom\n", select=["TP9992"])


def test_check_source_raises_syntax_error(with_test_rules: None) -> None:
    with pytest.raises(SyntaxError):
        check_source("def (:\n")


# ---------------------------------------------------------------- selection


def test_selection_defaults_prefixes_all_and_specificity() -> None:
    pool = ALL_TEST_RULES

    def codes(**kw: object) -> list[str]:
        return [r.code for r in select_rules(available=pool, **kw)]  # type: ignore[arg-type]

    assert codes() == ["TP9990", "TP9991", "TP9992", "TP9994"]  # Noisy is off by default
    assert codes(select=["ALL"]) == ["TP9990", "TP9991", "TP9992", "TP9993", "TP9994"]
    assert codes(select=["tp9990", "TP9991"]) == ["TP9990", "TP9991"]
    assert codes(select=["TP999"], ignore=["TP9991"]) == ["TP9990", "TP9992", "TP9993", "TP9994"]
    assert codes(ignore=["TP99"], extend_select=["TP9993"]) == ["TP9993"]
    assert codes(extend_select=["TP9993"], ignore=["TP9990"]) == [
        "TP9991", "TP9992", "TP9993", "TP9994",
    ]  # fmt: skip
    assert codes(select=["TP9990"], ignore=["TP9990"]) == []  # a tie ignores


def test_unknown_selector_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"'TP9899'.*did you mean"):
        select_rules(select=["TP9899"], available=ALL_TEST_RULES)
    with pytest.raises(ConfigError, match="XX1"):
        select_rules(ignore=["XX1"], available=ALL_TEST_RULES)


# ---------------------------------------------------------------- fixes


def test_shared_edit_applied_once_and_result_is_fixed_point() -> None:
    source = "import torch\nx = a.cuda()\ny = b.cuda()\n"
    outcome = fix_text(source, "s.py", RuleSet([CudaCall]))
    assert outcome.source == 'device = "cpu"\nimport torch\nx = a.to(device)\ny = b.to(device)\n'
    assert outcome.fixed == {"TP9990": 2}
    assert outcome.remaining == []
    again = fix_text(outcome.source, "s.py", RuleSet([CudaCall]))
    assert again.source == outcome.source and not again.fixed


def test_overlapping_fixes_wait_for_the_next_round() -> None:
    source = "x = a.cuda().cuda()\n"  # the outer fix's span contains the inner one
    outcome = fix_text(source, "s.py", RuleSet([CudaCall]))
    assert outcome.source == 'device = "cpu"\nx = a.to(device).to(device)\n'
    assert outcome.fixed == {"TP9990": 2}


def test_unsafe_fixes_only_when_asked_and_bytes_outside_edits_kept() -> None:
    source = "# -*- coding: utf-8 -*-\r\nprint(x)  # keep me\r\n\r\ny = z.cuda()   # and me\r\n"
    safe = fix_text(source, "s.py", RuleSet([CudaCall, PrintCall]))
    assert "print(x)  # keep me\r\n" in safe.source
    assert [f.code for f in safe.remaining] == ["TP9991"]
    unsafe = fix_text(source, "s.py", RuleSet([CudaCall, PrintCall]), unsafe=True)
    assert unsafe.source == (
        'device = "cpu"\n# -*- coding: utf-8 -*-\r\nlog(x)  # keep me\r\n\r\n'
        "y = z.to(device)   # and me\r\n"
    )
    assert unsafe.remaining == []


def test_fix_that_breaks_syntax_is_dropped_and_reported() -> None:
    source = "broken()\nx = a.cuda()\n"
    outcome = fix_text(source, "s.py", RuleSet([BadFix, CudaCall]))
    assert outcome.source == 'device = "cpu"\nbroken()\nx = a.to(device)\n'
    assert [f.code for f in outcome.failures] == ["TP9994"]
    ast.parse(outcome.source)


def test_fix_source_public_api(with_test_rules: None) -> None:
    assert fix_source("x = a.cuda()\n", select=["TP9990"]) == 'device = "cpu"\nx = a.to(device)\n'
    assert fix_source("print(1)\n", select=["TP9991"]) == "print(1)\n"
    assert fix_source("print(1)\n", select=["TP9991"], unsafe=True) == "log(1)\n"
    with pytest.raises(RuntimeError, match="TP9994"):
        fix_source("broken()\n", select=["TP9994"])


@given(
    st.lists(st.sampled_from(["x = a.cuda()", "print(b)", "c.cuda().cuda()", "y = 1"]), max_size=6)
)
def test_fix_is_idempotent_and_parses(lines: list[str]) -> None:
    source = "".join(f"{line}\n" for line in lines)
    ruleset = RuleSet([CudaCall, PrintCall])
    once = fix_text(source, "s.py", ruleset, unsafe=True)
    ast.parse(once.source)
    assert once.remaining == []
    assert fix_text(once.source, "s.py", ruleset, unsafe=True).source == once.source


edits_strategy = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 4), st.sampled_from(["", "a", "b"])).map(
        lambda t: Edit(t[0], t[0] + t[1], t[2])
    ),
    max_size=25,
)


@given(edits_strategy)
def test_conflict_index_agrees_with_pairwise_check(edits: list[Edit]) -> None:
    accepted = _Accepted()
    brute: list[Edit] = []
    for edit in edits:
        if edit in accepted.members:
            continue
        expected = any(_overlaps(edit, other) for other in brute)
        assert accepted.conflicts(edit) is expected
        if not expected:
            accepted.add(edit)
            brute.append(edit)
    assert accepted.edits == sorted(brute)


class LoadCalls(Rule):
    """What it does: test rule: reports every call it is handed (``load`` calls, by name)."""

    code = "TP9997"
    name = "test-load-calls"
    message = "load"
    node_types = (ast.Call,)
    call_attrs: ClassVar[frozenset[str] | None] = frozenset({"load"})

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        yield ctx.finding(self, node, message=ctx.segment(node))


class TorchLoads(Rule):
    """What it does: test rule: reports calls of ``torch.load`` however they are named."""

    code = "TP9998"
    name = "test-torch-loads"
    message = "torch.load"
    node_types = (ast.Call,)
    call_attrs: ClassVar[frozenset[str] | None] = frozenset({"load"})

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, frozenset({"load"})) == "torch.load":
            yield ctx.finding(self, node)


class EveryTorchLoad(TorchLoads):
    """What it does: ``TorchLoads`` handed every call."""

    code = "TP9999"
    call_attrs = None


def test_calls_reach_a_rule_by_method_name_import_or_callee_shape() -> None:
    source = (
        "from torch import load as ld\n"
        "import torch\n"
        "ld(a)\nload(b)\ntorch.load(c)\nx.load()\nfoo(d)\nx.save(e)\nfs[0](f)\nmake()(g)\n"
        "def inner():\n    from torch import load as lo\n    lo(h)\n"
    )
    found = check_text(source, "s.py", RuleSet([LoadCalls])).findings
    assert [f.message for f in found] == [
        "ld(a)",
        "load(b)",
        "torch.load(c)",
        "x.load()",
        "fs[0](f)",
        "make()(g)",
        "lo(h)",
    ]


class DeviceKeywordCalls(LoadCalls):
    """What it does: test rule: reports the calls handed to it by name or by keyword."""

    code = "TP9996"
    call_keywords: ClassVar[frozenset[str | None]] = frozenset({"device", None})


def test_calls_reach_a_rule_by_a_keywords_name_or_an_unpacking() -> None:
    source = (
        "from mylib import thing as load\n"
        "f(x, device=d)\ng(x, dtype=t)\nh(**kw)\nx.load(1)\nload(2)\nthing(3)\n"
        "k(devices=d)\nx.m(1, non_blocking=True, device=d)\n"
    )
    found = check_text(source, "s.py", RuleSet([DeviceKeywordCalls, TorchLoads])).findings
    assert [f.message for f in found if f.code == "TP9996"] == [
        "f(x, device=d)",
        "h(**kw)",
        "x.load(1)",
        "load(2)",
        "x.m(1, non_blocking=True, device=d)",
    ]


_IMPORTS = st.sampled_from(
    [
        "import torch",
        "import torch as th",
        "from torch import load",
        "from torch import load as ld",
        "from torch import save as load",
        "from pickle import load",
        "from torch import *",
    ]
)
_CALLS = st.sampled_from(
    ["load(x)", "ld(x)", "th.load(x)", "torch.load(x)", "x.load()", "make()(x)", "save(x)"]
)


@given(st.lists(st.one_of(_IMPORTS, _CALLS), min_size=1, max_size=8), st.booleans())
def test_dispatch_by_callee_name_loses_no_call_a_rule_acts_on(
    lines: list[str], in_function: bool
) -> None:
    body = "".join(f"{line}\n" for line in lines)
    if in_function:
        body = "def f():\n" + "".join(f"    {line}\n" for line in lines)
    by_name = check_text(body, "s.py", RuleSet([TorchLoads])).findings
    every = check_text(body, "s.py", RuleSet([EveryTorchLoad])).findings
    assert [(f.line, f.col) for f in by_name] == [(f.line, f.col) for f in every]


class CudaAttrs(Rule):
    """What it does: test rule: reports every attribute it is handed (``is_cuda``, by name)."""

    code = "TP9980"
    name = "test-cuda-attrs"
    message = "attr"
    node_types = (ast.Attribute,)
    attr_names: ClassVar[frozenset[str] | None] = frozenset({"is_cuda"})

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        yield ctx.finding(self, node, message=ctx.segment(node))


class CudaStrings(Rule):
    """What it does: test rule: reports every constant it is handed (``"cuda"``, by value)."""

    code = "TP9981"
    name = "test-cuda-strings"
    message = "constant"
    node_types = (ast.Constant,)
    constants: ClassVar[frozenset[object] | None] = frozenset({"cuda", 7})

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        parents = "/".join(type(a).__name__ for a in ctx.ancestors[-2:])
        yield ctx.finding(self, node, message=f"{ctx.segment(node)} in {parents}")


class EveryConstant(CudaStrings):
    """What it does: test rule: reports every constant."""

    code = "TP9982"
    constants = None


_NAMED = 'x.is_cuda\ny.is_cuda()\nz.device\nf("cuda", 7, "cpu", 7.5)\nd = {"cuda": [7]}\n'


def test_attributes_reach_a_rule_by_name() -> None:
    found = check_text(_NAMED, "s.py", RuleSet([CudaAttrs])).findings
    assert [f.message for f in found] == ["x.is_cuda", "y.is_cuda"]


def test_constants_reach_a_rule_by_value_with_their_ancestors() -> None:
    found = check_text(_NAMED, "s.py", RuleSet([CudaStrings])).findings
    expected = ['"cuda" in Expr/Call', "7 in Expr/Call", '"cuda" in Assign/Dict', "7 in Dict/List"]
    assert [f.message for f in found] == expected
    # beside a rule that wants every constant, each still gets only what it asked for
    both = check_text(_NAMED, "s.py", RuleSet([CudaStrings, EveryConstant])).findings
    assert [f.message for f in both if f.code == "TP9981"] == expected
    assert len([f for f in both if f.code == "TP9982"]) == 6


_FIXES = st.one_of(
    st.none(),
    st.builds(
        Fix,
        st.tuples(st.builds(Edit, st.integers(0, 1), st.integers(1, 2), st.sampled_from("ab"))),
        st.sampled_from([FixSafety.SAFE, FixSafety.UNSAFE]),
    ),
)
_FINDINGS = st.builds(
    Finding,
    path=st.just("x.py"),
    line=st.integers(1, 2),
    col=st.integers(1, 2),
    end_line=st.just(3),
    end_col=st.integers(1, 2),
    code=st.sampled_from(["TP101", "TP102"]),
    name=st.just("n"),
    message=st.sampled_from(["m", "n"]),
    fix=_FIXES,
)


@given(st.lists(_FINDINGS, max_size=30))
def test_findings_made_unique_run_by_run_are_a_dicts(findings: list[Finding]) -> None:
    # duplicates on purpose: each finding once more, later
    findings = sorted(findings + findings[::2], key=finding_key)
    assert unique_findings(findings) == list(dict.fromkeys(findings))
