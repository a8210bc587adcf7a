"""What a rule declares it wants is all it acts on: the dispatch loses no finding.

A rule declares the calls (``call_attrs``: by the name called; ``call_keywords``: by
a keyword's name), attributes (``attr_names``) and constants (``constants``) it can
report on, and the engine hands it only those (``_engine._walk``). The oracle: the
same rule with every declaration taken back (``None``: handed every node of its
types). Both must find exactly the same on every program, whether generated here
from names that are not taken from the declarations alone (torch's API, the names
in every rule's examples, look-alikes) or the rules' own examples. A declaration
that misses a name a rule acts on fails here (tried: ``to`` dropped from TP101's).
"""

from __future__ import annotations

import ast
import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.check.fix_programs import programs
from torchport.check._catalog import shipped_rules
from torchport.check._dispatch import call_rules, named_rules
from torchport.check._engine import RuleSet, check_text
from torchport.check._rule import Rule
from torchport.check.rules import RULES


def _everywhere(rule: type[Rule]) -> type[Rule]:
    """``rule`` handed every node of its types (the dispatch's oracle)."""
    namespace = {
        "call_attrs": None,
        "call_keywords": frozenset(),
        "attr_names": None,
        "constants": None,
        "__module__": __name__,  # a test class: never registered as shipped
    }
    return type(f"{rule.__name__}Everywhere", (rule,), namespace)


DECLARED = RuleSet(shipped_rules())  # the catalog's stand-ins: what a check runs
EVERYWHERE = RuleSet(_everywhere(rule) for rule in RULES)
# rules whose declarations narrow what they get (the others get every node anyway)
NARROWED = [
    rule
    for rule in RULES
    if rule.call_attrs is not None or rule.attr_names is not None or rule.constants is not None
]


def _found(source: str, ruleset: RuleSet) -> list[object]:
    try:
        outcome = check_text(source, "t.py", ruleset, strict=True)
    except SyntaxError:
        return ["syntax error"]
    return [
        (f.line, f.col, f.end_line, f.end_col, f.code, f.message, f.fix) for f in outcome.findings
    ]


def _assert_same(source: str) -> None:
    assert _found(source, DECLARED) == _found(source, EVERYWHERE), source


# ------------------------------------------------------------ the vocabulary


@functools.cache
def _example_names() -> tuple[list[str], list[str]]:
    """Names called or read as attributes, and keyword names, in every rule's examples."""
    names: set[str] = set()
    keywords: set[str] = set()
    for rule in RULES:
        for source in (*rule.valid, *(e.source for e in rule.invalid)):
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Attribute):
                    names.add(node.attr)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    names.add(node.func.id)
                elif isinstance(node, ast.keyword) and node.arg is not None:
                    keywords.add(node.arg)
    return sorted(names), sorted(keywords)


# torch's API and look-alikes, written apart from any declaration
def _words(text: str) -> list[str]:
    return text.split()


_API = _words(
    "to cuda cpu device double float half zeros ones tensor empty randn load save "
    "partial DataLoader DistributedDataParallel DataParallel DDP autocast GradScaler "
    "Generator set_device manual_seed synchronize item numpy tolist format "
    "add_argument set_defaults xpu mps npu mlu is_cuda is_available device_count "
    "Variable FloatTensor HalfTensor type new_zeros pin_memory get dict Mock "
    "SimpleNamespace init_device_mesh hub Stream Event"
)
_HOT = _words("to cuda device load zeros DDP autocast format double xpu add_argument")
_HOT_KEYWORDS = _words("device dtype map_location device_ids weights_only device_type default")
_KEYWORDS = _words(
    "device dtype map_location accelerator default device_type device_ids "
    "output_device weights_only pickle_module non_blocking pin_memory type "
    "num_workers enabled"
)
_ARGS = (
    '"cuda"', '"cuda:0"', '"cuda:1"', '"mps"', '"xpu"', '"cpu"', '"--device"',
    '"cuda:{}"', '"cuda:"', "0", "1", "rank", "x", "device", "torch.float64",
    "th.float64", "f64", "[0]", "[rank]", "True", "False", "None", 'torch.device("cuda")',
    '"cuda" if c else "cpu"', "path", "pickle",
)  # fmt: skip
# values some keywords usually get
_VALUES = {
    "device_ids": ("[0]", "[rank]", "[device]"),
    "weights_only": ("False", "0", "not True", "flag"),
    "device_type": ('"cuda"', '"cpu"'),
    "dtype": ("torch.float64", "th.double", "f64", "torch.float32"),
}
_IMPORTS = (
    "import torch", "import torch as th", "from torch import device",
    "from torch import device as D", "from torch import load as ld",
    "from torch.nn.parallel import DistributedDataParallel as DDP",
    "from torch.nn import DataParallel as DP", "from torch import autocast as ac",
    "from torch.amp import GradScaler", "from functools import partial",
    "from torch import float64 as f64", "from torch import cuda",
    "from pickle import load", "import numpy as np", "from torch import save as load",
    "from torch.autograd import Variable", "from mylib import to",
    "from mylib import wrap as DDP",
)  # fmt: skip
_RECEIVERS = (
    "x", "torch", "th", "torch.cuda", "model", "x.double()", "x.to(device)", "self",
    "super()", '"cuda:{}"', "torch.nn", "np", "f()", "fs[0]", "getattr(torch, name)",
    "torch.serialization", "loader", "torch.backends.cuda.matmul",
)  # fmt: skip


@st.composite
def _call(draw: st.DrawFn) -> str:
    names, keywords = _example_names()
    # the names device rules are about half the time: the others are many
    name = draw(st.sampled_from(_HOT) | st.sampled_from(sorted({*_API, *names})))
    receiver = draw(st.sampled_from(("torch", "x", "th")) | st.sampled_from(_RECEIVERS))
    if draw(st.booleans()):
        func = f"{receiver}.{name}"
    else:
        func = draw(st.sampled_from([name, "D", "ld", "DDP", "DP", "ac", "f()", "fs[0]"]))
    args = draw(st.lists(st.sampled_from(_ARGS), max_size=2))
    every_keyword = sorted({*_KEYWORDS, *keywords})
    kw_names = draw(
        st.lists(st.sampled_from(_HOT_KEYWORDS) | st.sampled_from(every_keyword), max_size=2)
    )
    args += [
        f"{k}={draw(st.sampled_from(_VALUES.get(k, _ARGS)) | st.sampled_from(_ARGS))}"
        for k in dict.fromkeys(kw_names)
    ]
    unpack = draw(st.sampled_from(["", "**kw", '**{"weights_only": False}', "**opts"]))
    return f"{func}({', '.join([*args, *([unpack] if unpack else [])])})"


_WRAP = (
    "{}",
    "y = {}",
    "device = {}",
    "for i in range(3):\n    {}",
    "if torch.cuda.is_available():\n    {}",
    "try:\n    {}\nexcept Exception:\n    pass",
    "def test_it(device='cuda'):\n    return {}",
    "class M:\n    def forward(self, x):\n        return {}",
)


@st.composite
def _call_programs(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.sampled_from(_IMPORTS), max_size=3))
    if draw(st.integers(0, 3)):
        lines.insert(0, "import torch")
    if draw(st.booleans()):
        lines.append('opts = {"weights_only": False}')
    for _ in range(draw(st.integers(1, 8))):
        lines.append(draw(st.sampled_from(_WRAP)).format(draw(_call())))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------ the oracle


@given(_call_programs())
def test_generated_calls_find_the_same_declared_or_handed_everything(source: str) -> None:
    _assert_same(source)


@given(programs())
def test_generated_programs_find_the_same_declared_or_handed_everything(source: str) -> None:
    _assert_same(source)


_DEVICE_VALUES = ('"cuda"', '"cuda:0"', '"mps"', '"xpu"', "0", "[0]", "torch.float64", "False")
_SHAPES = (
    '("cuda")',
    '("cuda:1")',
    "(0)",
    '("mps")',
    '("xpu")',
    "(torch.float64)",
    "()",
    "(m, [0])",
)


@functools.cache
def _every_name_and_keyword() -> list[str]:
    """Programs where every name is called every way and every keyword gets every value.

    Generated programs draw a name and a keyword it needs together rarely; here each
    name meets each argument shape and each keyword each value, one call a line, a few
    lines a program (one line may change what a rule says of the whole file).
    """
    names, keywords = _example_names()
    calls = []
    for name in sorted({*_API, *names}):
        for func in (name, f"torch.{name}", f"x.{name}"):
            calls += [f"{func}{shape}" for shape in _SHAPES]
        calls += [f'"cuda:{{}}".{name}(0)', f'"cuda:%d".{name}()']
    for keyword in sorted({*_KEYWORDS, *keywords}):
        for func in ("f", "torch.zeros", "torch.load", "x.f", "DDP"):
            calls += [f"{func}(m, {keyword}={value})" for value in _DEVICE_VALUES]
        for func in ("f", "torch.load"):  # given in a `**` dict
            calls += [f'{func}(m, **{{"{keyword}": {value}}})' for value in _DEVICE_VALUES]
    head = (
        "import torch\nfrom torch import device as D\nfrom torch import float64 as f64\n"
        "from parallel import Wrapper as DDP\n"  # a rule may test the name called itself
    )
    return [
        head + "\n".join(calls[i : i + _PER_PROGRAM]) + "\n"
        for i in range(0, len(calls), _PER_PROGRAM)
    ]


_PER_PROGRAM = 8
_PARTS = 4  # spread over the workers


@pytest.mark.parametrize("part", range(_PARTS))
def test_every_name_and_keyword_finds_the_same_declared_or_handed_everything(part: int) -> None:
    for source in _every_name_and_keyword()[part::_PARTS]:
        _assert_same(source)


@pytest.mark.parametrize("rule", [pytest.param(r, id=r.code) for r in RULES])
def test_every_rules_examples_find_the_same_declared_or_handed_everything(
    rule: type[Rule],
) -> None:
    for source in (*rule.valid, *(e.source for e in rule.invalid)):
        _assert_same(source)


def test_the_oracle_is_handed_every_node() -> None:
    # the oracle is not the declared set under another name
    assert NARROWED
    assert all(
        r.call_attrs is None and r.attr_names is None and r.constants is None
        for r in EVERYWHERE.rules
    )
    assert {r.code for r in EVERYWHERE.rules} == {r.code for r in DECLARED.rules}


# ------------------------------------------------------------ sets the prefilter cuts


def _callee_key(name: str, tail: str, keywords: list[str]) -> object:
    """A call's key as ``_walk`` makes it (name, import tail, the listed keywords)."""
    key: object = name if tail == name else (name, tail)
    return (key, tuple(keywords)) if keywords else key


@given(
    st.sets(st.sampled_from(sorted(DECLARED.codes)), max_size=12),
    st.lists(st.sampled_from(sorted({*_HOT, *_API, *_example_names()[0]})), min_size=1),
    st.sampled_from(sorted({*_HOT, *_example_names()[0]})),
    st.lists(st.sampled_from(sorted({*_HOT_KEYWORDS, *_KEYWORDS})), max_size=2, unique=True),
)
def test_a_cut_set_hands_each_node_to_its_own_rules_as_the_plain_dispatch(
    codes: set[str], names: list[str], tail: str, keywords: list[str]
) -> None:
    """A set cut from another (``lacking``/``without``: the prefilter's, a file's noqa)
    learns each name from the set it was cut from: the same rules, its own instances,
    in the same order, as ``_dispatch``'s functions over its own table.
    """
    cut = DECLARED.lacking(frozenset(codes))
    cuts = [cut, cut.without(sorted(codes)[:1] or ["TP1"])]
    for ruleset in cuts:
        for name in names:
            for key in (name, _callee_key(name, tail, keywords)):
                expected = call_rules(ruleset.dispatch, key)
                found = ruleset.call_rules(key)
                assert [id(r) for r in found or ()] == [id(r) for r in expected or ()]
                assert (found is None) is (expected is None)
            expected = named_rules(ruleset.dispatch, ast.Attribute, name)
            found = ruleset.named_rules(name)
            assert [id(r) for r in found or ()] == [id(r) for r in expected or ()]
            assert (found is None) is (expected is None)
