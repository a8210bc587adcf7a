"""Numbers the standard library makes out of host data are host data: a timing helper's list.

Found on a real repository's inference benchmark (a CIFAR-10 width study): a helper timed
the model with ``time.perf_counter_ns()`` and returned the list of latencies; the caller
divided ``statistics.median(samples)`` by each ``batch_size`` of a list parsed from the
command line, and the port said "cannot tell whether `batch_size` is a tensor" (TP520).
The helper is given the model's device input, and ``start = time.perf_counter_ns()`` was
not read as host data, so its list, and the median of it, were taken for device values.

Invariant: a call of a function of a standard-library module that makes numbers or strings
(``time``, ``math``, ``statistics``, ``random``, ``os.path``), given only host data and not
one that hands back what it was given (``random.choice``), is host data; so is a list only
filled with such values, and what a helper returns of it. Oracle: generated programs of the
benchmark's shape (timer, record, summary drawn); where every record is host data the port
leaves nothing at the loop; where a record is the model's output (a device value) the
report stays; and each original on the CPU and its port on the simulated accelerator give
the same values.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import originals_on_cpu_ports_on_sim
from torchport.check.port import port_text

_TIMERS = ("time.perf_counter", "time.perf_counter_ns", "time.time", "time.monotonic")
# What each repeat records; True: host data.
_RECORDS = {
    "(end - start) / 1e6": True,
    "end - start": True,
    "math.sqrt(abs(end - start))": True,
    "round(end - start, 3)": True,
    "statistics.fmean([start, end])": True,
    "y.sum()": False,  # the model's output: a device value
    "(end - start) * y.mean()": False,
}
_SUMMARIES = ("statistics.median", "statistics.mean", "math.fsum", "max")
_OF_TENSORS = ("statistics.median", "math.fsum", "max")  # (`statistics.mean` refuses them)

_PROGRAM = """import math
import statistics
import time

import torch
import torch.nn as nn


def parse(text, kind):
    return [kind(item) for item in text.split(",")]


def measure(model, x, repeats):
    out = []
    for _ in range(repeats):
        start = {timer}()
        y = model(x)
        end = {timer}()
        out.append({record})
    return out


def main():
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    for n in parse("1,2", int):
        x = torch.randn(n, 4)
        samples = measure(model, x, 3)
        value = {summary}(samples)
        OUT.append(torch.tensor(float(value / n > -1e30)))


main()
"""


def _loop_line(source: str) -> int:
    return source[: source.index("    for n in parse")].count("\n") + 1


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, bool]:
    record = draw(st.sampled_from(sorted(_RECORDS)))
    host = _RECORDS[record]
    source = _PROGRAM.format(
        timer=draw(st.sampled_from(_TIMERS)),
        record=record,
        summary=draw(st.sampled_from(_SUMMARIES if host else _OF_TENSORS)),
    )
    return source, host


@settings(max_examples=2, deadline=None)
@given(st.lists(programs(), min_size=6, max_size=6))
def test_a_timing_helpers_numbers_are_host_data(cases: list[tuple[str, bool]]) -> None:
    outcomes = [port_text(source, "p.py") for source, _ in cases]
    for (_, host), outcome in zip(cases, outcomes, strict=True):
        assert not outcome.failures, outcome.failures
        at_loop = [f for f in outcome.remaining if f.line == _loop_line(outcome.source)]
        assert bool(at_loop) == (not host), (at_loop, outcome.source)  # `n` meets a device value
    pairs = [(source, o.source) for (source, _), o in zip(cases, outcomes, strict=True)]
    runs = originals_on_cpu_ports_on_sim(pairs)
    for run, outcome in zip(runs, outcomes, strict=True):
        assert run["same"], outcome.source
