"""TP101, TP102, TP109, TP115 and TP401 leave a timing program, known by its structure.

Sample N (torchani's ``tools/scaling-aev-benchmark.py``, rl_games'
``benchmarks/bench_triton_gae.py``): a program that reads a clock after a
synchronization, repeats some work in a ``range`` loop and reads the clock after a
synchronization again is a benchmark; its device, timing syncs and device reports are
its figures (low value; TP115's runtime CUDA strings too, torchani's
``training-aev-benchmark.py`` naming each GPU, sample N). Names are not used:
CSAILVision's ``eval.py`` times each batch of its data the same way and was judged real
(sample K); PARL keeps training programs in ``benchmark/``. Generated programs draw each
synchronization (a sync call or not), each clock read (a clock or not), the loop between
them, and whether the module runs as a program. The oracle, written here: the reported
statement (in another function) is left exactly when the module has the ``__main__``
guard, both statements before the clock reads are sync calls, both reads are clocks, and
the loop is over ``range(...)``.
"""

from __future__ import annotations

import ast

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for
from torchport.check.rules._test_code import timing_program

STATEMENTS = {
    "TP101": "x = x.cuda()",
    "TP102": "torch.cuda.set_device(0)",
    "TP109": 'device = "cuda" if torch.cuda.is_available() else "cpu"; x.to(device)',
    "TP115": 'print(torch.cuda.get_device_name(f"cuda:{i}"))',
    "TP401": "print(torch.cuda.memory_allocated())",
}
SYNCS = {
    "torch.cuda.synchronize()": True,
    "sync_cuda(True)": True,  # torchani's own wrapper
    "x.sum()": False,
    "async_copy_to(x, 0)": False,  # not a synchronization
}
CLOCKS = {
    "time.time()": True,
    "time.perf_counter()": True,
    "perf_counter()": True,
    "timeit.default_timer()": True,
    "time.sleep(0)": False,
    "datetime.now()": False,
    "x.time()": False,
}
LOOPS = {
    "for _ in range(n):": True,
    "for i in range(2, n):": True,
    "for batch in loader:": False,  # the program's own data, timed as it goes
    "for i, batch in enumerate(loader):": False,
    "if n:": False,
}


def _spelled(data: st.DataObject | None, table: dict[str, bool], kept: bool) -> str:
    spellings = sorted(k for k, v in table.items() if v == kept)
    return spellings[0] if data is None else data.draw(st.sampled_from(spellings))


@given(
    code=st.sampled_from(sorted(STATEMENTS)),
    broken=st.sampled_from(("", "sync1", "sync2", "clock1", "clock2", "loop", "program")),
    data=st.data(),
)
@example(code="TP115", broken="", data=None)  # sample N's device names, whole structure
@example(code="TP115", broken="loop", data=None)
def test_a_timing_program_is_left(code: str, broken: str, data: st.DataObject | None) -> None:
    """One part of the structure at a time is drawn absent (or none), each spelled at random."""
    sync1 = _spelled(data, SYNCS, broken != "sync1")
    sync2 = _spelled(data, SYNCS, broken != "sync2")
    clock1 = _spelled(data, CLOCKS, broken != "clock1")
    clock2 = _spelled(data, CLOCKS, broken != "clock2")
    loop = _spelled(data, LOOPS, broken != "loop")
    program = broken != "program"
    head = [
        "import time",
        "import timeit",
        "from datetime import datetime",
        "from time import perf_counter",
        "",
        "import torch",
        "",
        "",
        "def measure(x, n, loader):",
        f"    {sync1}",
        f"    start = {clock1}",
        f"    {loop}",
        "        x = x * 2",
        f"    {sync2}",
        f"    return {clock2}, start",
        "",
        "",
        "def report(x):",
    ]
    tail = ["    return x", "", ""]
    if program:
        tail += ['if __name__ == "__main__":', "    print(measure(torch.ones(3), 10, []))", ""]
    else:
        tail += ["def main():", "    print(measure(torch.ones(3), 10, []))", ""]
    source = "\n".join([*head, f"    {STATEMENTS[code]}", *tail])
    line = len(head) + 1
    left = program and SYNCS[sync1] and SYNCS[sync2] and CLOCKS[clock1] and CLOCKS[clock2]
    left = left and LOOPS[loop]
    found = check_text(source, "tools/run.py", ruleset_for([code], None)).findings
    at_line = [f for f in found if f.line == line]
    assert bool(at_line) != left, (source, found)


# Statements that hold blocks, each with the block the timed code goes in ("{}" and the
# indent of what follows): the timed block is nested in a few of them at random.
WRAPPERS = [
    "if n:\n{}",
    "if n:\n    pass\nelse:\n{}",
    "for i in items:\n{}",
    "for i in items:\n    pass\nelse:\n{}",
    "while n:\n{}",
    "with ctx:\n{}",
    "try:\n{}\nexcept ValueError:\n    pass",
    "try:\n    pass\nexcept ValueError:\n{}",
    "try:\n    pass\nexcept ValueError:\n    pass\nelse:\n{}",
    "try:\n    pass\nfinally:\n{}",
    "def f():\n{}",
    "async def f():\n{}",
    "class C:\n{}",
    "match n:\n    case 1:\n    {}",  # (the case's block: indented twice)
]
TIMED = (
    "torch.cuda.synchronize()\nstart = time.time()\nfor _ in range(n):\n    x = x * 2\n"
    "torch.cuda.synchronize()\nstop = time.time()"
)


def _timing_program_by_walk(tree: ast.Module) -> bool:
    """The oracle: every node's body/orelse/finalbody list (``ast.walk``), a synced clock,
    a ``range`` loop, a synced clock again, in one block, in a module run as a program."""
    guard = any(
        isinstance(s, ast.If) and "__name__" in ast.unparse(s.test) and "__main__" in ast.unparse(s)
        for s in tree.body
    )
    for node in ast.walk(tree) if guard else ():
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            text = [ast.unparse(s) for s in block]
            for i in range(len(text) - 4):
                window = "\n".join(text[i : i + 5])
                if window == TIMED:  # (ast.unparse writes it as TIMED does)
                    return True
    return False


def _nest(wrapper: str, body: str) -> str:
    indent = "        " if wrapper.endswith("    {}") else "    "
    return wrapper.replace("    {}", "{}").format("\n".join(indent + x for x in body.splitlines()))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    wrappers=st.lists(st.sampled_from(WRAPPERS), max_size=4),
    program=st.booleans(),
    lambda_body=st.booleans(),
)
def test_a_timed_block_is_found_in_every_kind_of_block(
    wrappers: list[str], program: bool, lambda_body: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At any depth of statements, handlers and match cases (and never in an expression),
    with ``ast.walk`` out of use: the timing test walks statements only."""
    body = TIMED
    for wrapper in reversed(wrappers):
        body = _nest(wrapper, body)
    lines = ["import time", "import torch", "", body]
    if lambda_body:
        lines.append("g = lambda: (torch.cuda.synchronize(), time.time())")
    if program:
        lines.append('if __name__ == "__main__":\n    pass')
    tree = ast.parse("\n".join(lines) + "\n")
    expected = _timing_program_by_walk(tree)
    assert expected == program  # the oracle sees it wherever it is nested
    walk = ast.walk

    def no_walk_of_the_module(node: ast.AST) -> object:
        assert not isinstance(node, ast.Module), "timing_program walked every node"
        return walk(node)

    with monkeypatch.context() as patched:
        patched.setattr(ast, "walk", no_walk_of_the_module)
        assert timing_program(tree) == expected, "\n".join(lines)
