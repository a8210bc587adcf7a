"""Benchmark code is a context of its own: by its folders or its file's name, after test code.

The oracle is written apart from ``check/_select.in_a_benchmark``: regular expressions
over the generated path's parts (the checker splits and compares strings). Paths are
drawn from folder and file names that are benchmark names, near misses (a ``benchmark``
folder, ``efficiency_benchmark``, ``mybench``, ``benchmarked``) and ordinary names, in any
case.
A default run leaves a rule out of the contexts it is not on in; a rule the run names
reports everywhere.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source
from torchport.check._select import BENCH, CODE, CONTEXTS, TEST, in_a_benchmark
from torchport.check.rules import RULES

_FOLDER = re.compile(r"bench(es|marks|marking)?", re.IGNORECASE)  # not `benchmark`
_STEM = re.compile(r"bench|bench[_-].*|benchmark.*|.*[_-]bench(mark)?", re.IGNORECASE)

_WORDS = ["bench", "benches", "benchmark", "benchmarks", "benchmarking", "tools", "src"]
_WORDS += ["efficiency_benchmark", "mybench", "benchmarked", "attack_benchmarks", "bm", "x"]
_STEMS = ["bench", "bench_gemm", "bench-io", "benchmark", "benchmark_causal", "benchmarks"]
_STEMS += ["clc_bench", "nvila_benchmark", "scaling-md-benchmark", "train", "model", "benched"]
_STEMS += ["workbench", "benchx", "my_benchmarking", "test_layers"]


def _cased(word: str) -> st.SearchStrategy[str]:
    return st.sampled_from([word, word.upper(), word.capitalize()])


_folders = st.lists(st.sampled_from(_WORDS).flatmap(_cased), max_size=4)
_names = st.tuples(
    st.sampled_from(_STEMS).flatmap(_cased), st.sampled_from([".py", ".ipynb", ""])
).map("".join)


def _oracle(folders: list[str], name: str) -> bool:
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return any(_FOLDER.fullmatch(f) for f in folders) or bool(_STEM.fullmatch(stem))


@given(_folders, _names, st.sampled_from(["/", "\\"]))
def test_a_file_is_benchmark_code_by_its_folders_or_its_name(
    folders: list[str], name: str, sep: str
) -> None:
    assert in_a_benchmark(sep.join([*folders, name])) is _oracle(folders, name)


# One finding each of rules on everywhere (TP105), outside test code (TP402), off by default
# (TP104, TP307, TP403; under the bar over samples A-Y): a default run reports each where its
# rule's default contexts say (the scope itself is test_default_scope's), a named one everywhere.
_SOURCE = (
    "import torch\nfrom torch.autograd import Variable\n\n"
    'state = torch.hub.load_state_dict_from_url("u")\ntorch.cuda.manual_seed(0)\n'
    "scaler = torch.cuda.amp.GradScaler()\nt = torch.cuda.FloatTensor(2)\n"
    "v = Variable(x, volatile=True)\n"
)
_PROBED = {"TP104", "TP105", "TP307", "TP402", "TP403"}
_BY_CODE = {rule.code: rule for rule in RULES}


def _on_in(where: str) -> set[str]:
    return {c for c in _PROBED if _BY_CODE[c].default and where in _BY_CODE[c].default_contexts}


def test_the_probe_tells_the_contexts_apart() -> None:
    # else the test below could not fail: some probed rule is on in one context and not another
    assert _on_in(CODE) and _on_in(CODE) != _on_in(TEST)
    assert _on_in(BENCH) != _on_in(TEST) and _PROBED - _on_in(CODE)


# A module named like a pytest test (``test_*.py``) is left out here: TP301 reads such a module
# as a test's own fixture loading whatever the context (its rule tests hold that).
_modules = _names.map(lambda n: n if n.endswith(".py") else n + ".py").filter(
    lambda n: not n.lower().startswith("test_")
)


@given(_folders, _modules, st.booleans())
def test_a_default_run_leaves_benchmark_code_to_the_rules_judged_there(
    folders: list[str], name: str, in_tests: bool
) -> None:
    path = "/".join([*folders, *(["tests"] if in_tests else []), name])
    where = TEST if in_tests else BENCH if _oracle(folders, name) else CODE
    found = {f.code for f in check_source(_SOURCE, path)}
    assert found == _on_in(where)
    named = check_source(_SOURCE, path, select=["TP1", "TP3", "TP4"])
    assert {f.code for f in named} == _PROBED


def test_a_test_under_a_benchmarks_folder_is_test_code() -> None:
    # TP402 is on in benchmark code, off in test code: a pytest module there is a test
    assert {BENCH, CODE} <= _BY_CODE["TP402"].default_contexts
    assert TEST not in _BY_CODE["TP402"].default_contexts
    source = "import pytest\nimport torch\n\ntorch.cuda.manual_seed(0)\n"
    assert [f.code for f in check_source(source, "benchmarks/bench_io.py")] == ["TP402"]
    assert [f.code for f in check_source(source, "src/io.py")] == ["TP402"]
    assert not check_source(source, "benchmarks/test_layers.py")


def test_every_rule_names_its_default_contexts_among_the_three() -> None:
    assert {CODE, TEST, BENCH} == CONTEXTS
    for rule in RULES:
        assert rule.default_contexts <= CONTEXTS and rule.default_contexts, rule.code


def test_a_benchmark_file_with_tests_in_it_is_decided_node_by_node() -> None:
    # The path's answer is kept per file (asked per node and rule): a test function's nodes
    # are still test code, the module level's benchmark code, in either order.
    seed = "torch.cuda.manual_seed(0)"  # TP402: on in benchmark code, off in test code
    source = f"import pytest\nimport torch\n\n\ndef test_io():\n    {seed}\n\n\n{seed}\n"
    found = check_source(source, "benchmarks/bench_io.py")
    assert [(f.code, f.line) for f in found] == [("TP402", 9)]
    flipped = f"import pytest\nimport torch\n\n{seed}\n\n\ndef test_io():\n    {seed}\n"
    found = check_source(flipped, "benchmarks/bench_io.py")
    assert [(f.code, f.line) for f in found] == [("TP402", 4)]
