"""A checked file leaves no analysis garbage for the cyclic collector.

Reference counting must free each file's trees, scopes and bindings as soon as
its walk ends: ``check`` pauses the collector per chunk of files, and cyclic
leftovers of 64 files at once cost time and memory (issue 34). Oracle: with the
collector off, what ``gc.collect()`` finds unreachable after one check holds no
syntax node, scope, binding or other object at all (the port compared trees with
the standard library's ``ast.dump``, whose formatter is a closure that calls itself:
one cycle per call; ``port._device_name.same_tree`` replaces it). Second oracle,
apart from the collector: every object the collector tracks (``gc.get_objects``)
after a check, its outcome dropped, was there before it.
"""

from __future__ import annotations

import ast
import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from torchport.check import check_source
from torchport.check._engine import check_text, check_tree, ruleset_for
from torchport.check._syntax import parse_source
from torchport.check.rules import RULES

_E2E = sorted((Path(__file__).parent / "e2e").glob("*.py"))


def _every_example() -> str:
    """Every rule's invalid examples, one after another, each in its own function."""
    parts = []
    # the rule classes themselves: the engine's stand-ins (LazyRule) carry no examples
    for k, rule in enumerate(RULES):
        for j, example in enumerate(rule.invalid):
            body = "".join("    " + line for line in example.source.splitlines(True))
            parts.append(f"def example_{k}_{j}():\n{body or '    pass'}\n")
    assert len(parts) > len(RULES)
    return "import torch\n" + "\n".join(parts)


@contextmanager
def _garbage() -> Iterator[list[object]]:
    """What the collector finds unreachable among the objects made in the block."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    found: list[object] = []
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()


def _ours(thing: object) -> bool:
    module = type(thing).__module__ or ""
    return module.startswith("torchport") or isinstance(thing, ast.AST)


@pytest.mark.parametrize("source", [*(p.read_text() for p in _E2E), _every_example()])
def test_a_checked_file_leaves_no_cycles(source: str) -> None:
    check_source(source, select=["ALL"])  # caches of the first run are not garbage
    with _garbage() as garbage:
        check_source(source, select=["ALL"])
    assert not [type(g).__name__ for g in garbage if _ours(g)]
    assert not garbage, f"{len(garbage)} objects left for the collector: {garbage[:5]}"


@pytest.mark.parametrize("source", [*(p.read_text() for p in _E2E[:3]), _every_example()])
def test_nothing_of_a_files_analysis_outlives_its_check(source: str) -> None:
    check_text(source, "<f>", ruleset_for(["ALL"], None))  # caches of the first run stay
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        before = {id(o) for o in gc.get_objects()}
        tree = parse_source(source, "<f>")
        alive = weakref.ref(tree)
        outcome = check_tree(source, "<f>", tree, ruleset_for(["ALL"], None))
        assert outcome.findings
        del tree, outcome
        assert alive() is None  # freed by reference counting alone, the collector off
        new = [o for o in gc.get_objects() if id(o) not in before]
        ours = [o for o in new if _ours(o)]
        assert not ours, ours[:5]
    finally:
        if was:
            gc.enable()
