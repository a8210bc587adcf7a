"""How branchy each rule's ``check`` is: McCabe cyclomatic complexity, counted on the AST.

One question: do rules read as a few named steps (the semantic model answering the
questions), or as branches in each rule? For every rule class in
``torchport.check.rules.RULES`` the complexity of ``check`` is counted together with
the private methods of the class it calls (``self._x``), since a rule that moves its
branches into ``_check`` is no simpler. Complexity = 1 + decision points (``if``,
``elif``, loops, ``except``, ``and``/``or`` operands beyond the first, conditional
expressions, comprehension ``if`` clauses, ``match`` cases, ``assert``).

Prints each rule's figure, the median and the largest. The median is held at 8 or less
by tests/check/test_rule_complexity.py (issue 35), which reads this counter.

Run: ``.venv/bin/python benchmarks/bench_rule_complexity.py``
"""

from __future__ import annotations

import ast
import inspect
import statistics
import textwrap

from torchport.check.rules import RULES

_DECISIONS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.IfExp, ast.Assert)
_DECISIONS += (ast.ExceptHandler, ast.match_case)


def complexity(func: ast.FunctionDef) -> int:
    """McCabe complexity of one function's body (nested functions included)."""
    count = 1
    for node in ast.walk(func):
        if isinstance(node, _DECISIONS):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += len(node.ifs)
    return count


def rule_complexity(rule: type) -> int:
    """``check`` plus the private methods it reaches through ``self``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(rule)))
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    todo, seen, total = ["check"], set(), 0
    while todo:
        name = todo.pop()
        if name in seen or name not in methods:
            continue
        seen.add(name)
        func = methods[name]
        total += complexity(func) - (0 if name == "check" else 1)
        for node in ast.walk(func):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr.startswith("_")
            ):
                todo.append(node.attr)
    return total


def main() -> int:
    figures = sorted(((rule_complexity(r), r.code) for r in RULES), reverse=True)
    for value, code in figures:
        print(f"{code} {value}")
    values = [v for v, _ in figures]
    print(f"rules {len(values)}  median {statistics.median(values)}  max {max(values)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
