"""TP109 leaves a branch alone that only waits for CUDA around a timer, as it does queries.

Held-out samples Y (class Y5) and Z (Transformer-Optimization's ``scripts/eval_carrier.py``,
positions 5 and 56): ``cuda = torch.cuda.is_available()``, then ``if cuda:`` around
``torch.cuda.reset_peak_memory_stats()`` and ``torch.cuda.synchronize()`` before and after
a timed call, judged low: the branch picks no device, places nothing, and the program runs
the same on every machine. So are CUDA events around a step timer (held-out sample AB,
Reinforcement-Casino's ``sparse_dpo_bsr.py`` ``on_step_end``), a print of the GPU's name and
memory from its properties (AB, AX_OCR's ``test_doclayout.py``) and a per-process memory cap
(AA, cell-segmentation-hub's ``api/main.py``). A branch that also places something is still
a choice.

The oracle is the table below, each statement marked by hand with whether it places
something on CUDA; the branch, its flag and the order of its statements are drawn. TP109
reports the branch exactly when one statement in it places something.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

STATEMENTS = {
    "torch.cuda.synchronize()": False,
    "torch.cuda.reset_peak_memory_stats()": False,
    "peak = torch.cuda.max_memory_allocated()": False,
    "torch.cuda.empty_cache()": False,
    "print(torch.cuda.get_device_name())": False,
    "t0 = time.perf_counter()": False,
    "start = torch.cuda.Event(enable_timing=True)": False,
    "end = torch.cuda.streams.Event(enable_timing=True)\n        end.record()": False,
    "ms = start.elapsed_time(end)": False,
    "mem = torch.cuda.get_device_properties(0).total_memory / 1024**3": False,
    "print(torch.cuda.get_device_properties(0).name)": False,
    "torch.cuda.set_per_process_memory_fraction(0.5, 0)": False,
    "torch.cuda.set_per_process_memory_fraction(0.5)\n        x = x.cuda()": True,
    "torch.cuda.set_stream(torch.cuda.Stream())": True,
    "model.cuda()": True,
    "x = x.to('cuda')": True,
    "torch.cuda.set_device(0)": True,
    "s = torch.cuda.Stream()": True,
}
TESTS = {
    "flag": "cuda = torch.cuda.is_available()\n\n\ndef timed(model, x):\n    if cuda:\n",
    "call": "def timed(model, x):\n    if torch.cuda.is_available():\n",
}


@given(
    test=st.sampled_from(sorted(TESTS)),
    body=st.lists(st.sampled_from(sorted(STATEMENTS)), min_size=1, max_size=4),
)
def test_a_branch_that_only_synchronizes_and_reads_statistics_picks_no_device(
    test: str, body: list[str]
) -> None:
    source = "import time\nimport torch\n\n" + TESTS[test]
    source += "".join(f"        {line}\n" for line in body) + "    return model(x)\n"
    found = [f.code for f in check_source(source, select=["TP109"])]
    assert (found == ["TP109"]) == any(STATEMENTS[line] for line in body), source
    assert len(found) <= 1, source
