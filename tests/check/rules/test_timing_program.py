"""TP101, TP102, TP109 and TP401 leave a timing program, known by its structure.

Sample N (torchani's ``tools/scaling-aev-benchmark.py``, rl_games'
``benchmarks/bench_triton_gae.py``): a program that reads a clock after a
synchronization, repeats some work in a ``range`` loop and reads the clock after a
synchronization again is a benchmark; its device, timing syncs and device reports are
its figures (low value). Names are not used: CSAILVision's ``eval.py`` times each batch
of its data the same way and was judged real (sample K); PARL keeps training programs
in ``benchmark/``. Generated programs draw each synchronization (a sync call or not),
each clock read (a clock or not), the loop between them, and whether the module runs as
a program. The oracle, written here: the reported statement (in another function) is
left exactly when the module has the ``__main__`` guard, both statements before the
clock reads are sync calls, both reads are clocks, and the loop is over ``range(...)``.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

STATEMENTS = {
    "TP101": "x = x.cuda()",
    "TP102": "torch.cuda.set_device(0)",
    "TP109": 'device = "cuda" if torch.cuda.is_available() else "cpu"',
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


def _spelled(data: st.DataObject, table: dict[str, bool], kept: bool) -> str:
    return data.draw(st.sampled_from(sorted(k for k, v in table.items() if v == kept)))


@given(
    code=st.sampled_from(sorted(STATEMENTS)),
    broken=st.sampled_from(("", "sync1", "sync2", "clock1", "clock2", "loop", "program")),
    data=st.data(),
)
def test_a_timing_program_is_left(code: str, broken: str, data: st.DataObject) -> None:
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
