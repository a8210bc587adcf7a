"""The audit of a run on an accelerator (the simulated one here, CUDA on a GPU).

Invariant: on a run whose device is an accelerator, every entry of ``report.syncs`` names
a tensor on that device; a read of a host tensor is in no entry and no total, whether the
device counted the run (``measured``) or the audit predicted it (``audit(every=N)``, and
CUDA, which counts nothing of its own). The CPU-only run keeps predicting: there a read
of a tensor the accelerator run would hold on the device is a ``would_sync`` entry.

And what runs on the device after a real copy from host tensors is the device's: a mask
index, ``masked_select``, ``unique`` ... of it is a shape sync, once per call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.sim.isolated import run_isolated

# One child runs every program three ways: measured (every=1) and predicted (every=2, one
# recorded step) on the simulated device, and predicted on the CPU. Per run: per line,
# the sync entries' (kind, device, would_sync, count) and whether the report was measured.
_CHILD = """
import os, tempfile, linecache
import torchport as tp
sim = simulate_accelerator()
sources = json.loads({sources!r})
folder = tempfile.mkdtemp()
results = []
for number, source in enumerate(sources):
    path = os.path.join(folder, f"prog_{{number}}.py")
    with open(path, "w") as f:
        f.write(source)
    linecache.checkcache(path)
    scope = {{"torch": torch}}
    exec(compile(source, path, "exec"), scope)
    runs = {{}}
    ways = (("measured", sim, 1), ("predicted", sim, 2), ("cpu", torch.device("cpu"), 1))
    for name, dev, every in ways:
        with tp.audit(every=every) as report:
            with report.step():
                scope["prog"](dev)
        runs[name] = {{
            "measured": report.measured,
            "syncs": [[e.line, e.kind, e.device, e.would_sync, e.count]
                      for e in report.syncs if e.file == path],
            "total": report.total_count,
        }}
    results.append(runs)
print(json.dumps(results))
"""


def _runs(sources: list[str]) -> list[dict[str, Any]]:
    return run_isolated(_CHILD.format(sources=json.dumps(sources)))  # type: ignore[no-any-return]


# The benchmark's pattern (benchmarks/data/cuda_only_train.py), line by line: on CUDA the
# mask index was missed (x, a real copy of host rows, was taken for the host's) and the
# read of the host copy `predictions` was listed as a device sync.
_SCRIPT = """\
def prog(dev):
    features = torch.randn(64, 8)
    w = torch.randn(8).to(dev)
    x = features[0:32].to(dev)
    scores = x @ w
    confident = x[scores > 0]
    predictions = scores.cpu()
    text = f"{predictions.mean():.4f}"
    picked = torch.masked_select(x, (x > 0))
    distinct = torch.unique(x)
    spread = torch.repeat_interleave(x[:4, 0], (scores[:4] > 0).long() + 1)
    x[x > 1] = x[x > 1] * 2
    where = torch.where(scores > 0)
    both = x[scores > 0, ...]
    host_sum = features.sum().item()
"""
_DEVICE_LINES = {6: 1, 9: 1, 10: 1, 11: 1, 12: 2, 13: 1, 14: 1}  # line -> syncs on it
_HOST_LINES = (8, 15)  # reads of host tensors


def test_on_the_accelerator_each_data_dependent_shape_counts_once_and_host_reads_never() -> None:
    (runs,) = _runs([_SCRIPT])
    assert runs["measured"]["measured"] and not runs["predicted"]["measured"]
    for name in ("measured", "predicted"):
        syncs = runs[name]["syncs"]
        per_line: dict[int, int] = {}
        for line, _, device, would_sync, count in syncs:
            assert device.startswith("sim") and not would_sync, (name, syncs)
            per_line[line] = per_line.get(line, 0) + count
        assert per_line == _DEVICE_LINES, (name, syncs)
    # the CPU-only run predicts as before: each device read is a wait it would make
    cpu = runs["cpu"]["syncs"]
    assert {line for line, *_ in cpu} == set(_DEVICE_LINES), cpu
    assert all(device == "cpu" and would_sync for _, _, device, would_sync, _ in cpu), cpu


# -- the invariant over generated programs ---------------------------------------------------
# A program: `h0` made on the host, `d0` its copy on the device, then lines that make a
# host or a device tensor from earlier ones, or read one. The oracle is the program's own
# bookkeeping: which names are the host's and which the device's, by construction.

_MAKE_HOST = ("torch.randn(6)", "{d}.cpu()", "{h} * 2", "{h}.abs()")
_MAKE_DEVICE = ("{h}.to(dev)", "{d} + 1", "torch.ones(6, device=dev)", "{d}.exp()")
_READS = (
    "float({t}.sum())",
    "{t}.sum().item()",
    'f"{{{t}.mean():.3f}}"',
    "{t}.tolist()",
    "{t}[{t} > 0]",
    "torch.nonzero({t})",
)


@st.composite
def _programs(draw: st.DrawFn) -> tuple[str, list[int], list[int]]:
    lines = ["def prog(dev):", "    h0 = torch.randn(6)", "    d0 = h0.to(dev)"]
    hosts, devices = ["h0"], ["d0"]
    device_reads: list[int] = []
    host_reads: list[int] = []
    for _ in range(draw(st.integers(3, 10))):
        what = draw(st.sampled_from(("host", "device", "read host", "read device")))
        h, d = draw(st.sampled_from(hosts)), draw(st.sampled_from(devices))
        if what == "host":
            name = f"h{len(hosts)}"
            lines.append(f"    {name} = " + draw(st.sampled_from(_MAKE_HOST)).format(h=h, d=d))
            hosts.append(name)
        elif what == "device":
            name = f"d{len(devices)}"
            lines.append(f"    {name} = " + draw(st.sampled_from(_MAKE_DEVICE)).format(h=h, d=d))
            devices.append(name)
        else:
            tensor = h if what == "read host" else d
            lines.append("    _ = " + draw(st.sampled_from(_READS)).format(t=tensor))
            (host_reads if what == "read host" else device_reads).append(len(lines))
    return "\n".join(lines) + "\n", device_reads, host_reads


@settings(max_examples=3, deadline=None, database=None, phases=[Phase.generate])
@given(st.lists(_programs(), min_size=10, max_size=10))
def test_every_sync_of_an_accelerator_run_names_a_device_tensor(
    programs: list[tuple[str, list[int], list[int]]],
) -> None:
    """Each example: ten programs, run in one child (a child starts in seconds)."""
    results = _runs([source for source, _, _ in programs])
    for (source, device_reads, host_reads), runs in zip(programs, results, strict=True):
        for name in ("measured", "predicted"):
            syncs = runs[name]["syncs"]
            lines = {line for line, *_ in syncs}
            assert all(dev.startswith("sim") and not ws for _, _, dev, ws, _ in syncs), source
            assert not lines & set(host_reads), (name, source, syncs)
            assert set(device_reads) <= lines, (name, source, syncs)


# -- on real CUDA (the lead's GPU runs) ------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_real_cuda_mask_index_of_a_copied_tensor_is_a_shape_sync_and_host_reads_are_free() -> None:
    with tp.audit() as report:
        features = torch.randn(64, 8)  # made inside: the audit follows it as the host's
        host = torch.randn(16)
        x = features[0:32].cuda()
        scores = x.sum(1)
        x[scores > 0]
        mask_line = _previous_line()
        predictions = scores.cpu()
        f"{predictions.mean():.4f}"
        host_line = _previous_line()
        host.sum().item()
    torch.cuda.synchronize()
    (mask,) = [e for e in report.entries if e.line == mask_line]
    assert (mask.kind, mask.device, mask.count, mask.would_sync) == (
        "shape sync",
        "cuda:0",
        1,
        False,
    )
    assert all(e.device.startswith("cuda") and not e.would_sync for e in report.syncs)
    here = [e for e in report.entries if e.file == __file__]
    assert not [e for e in here if e.line >= host_line and e.kind != "transfer"], here


def _previous_line() -> int:
    import sys

    frame = sys._getframe(1)
    return (frame.f_lineno or 0) - 1
