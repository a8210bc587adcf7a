"""``to_device`` and ``DeviceLoader`` on the simulated accelerator: the invariant, values compared.

``meta`` holds no values, so a move to it cannot show a wrong value or a wrong
cast. The simulated accelerator (``torchport.testing.simulate_accelerator``) holds
real values and enforces CUDA's device rules; installing it changes the process
for good, so these checks run in a child interpreter (``tests/sim/isolated.py``).
There the generated graphs of ``graphs.py`` are moved to ``sim:0`` and checked by
the reachability oracle (``reachability.py``: devices, input unchanged, sharing,
and each tensor's values against its input), and a ``DeviceLoader`` over such
batches hands over batches whose tensors hold the input's values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

HERE = str(Path(__file__).parent)

_CHILD = f"""
import sys
sys.path.insert(0, {HERE!r})
import graphs, reachability as reach
import torchport as tp
from hypothesis import HealthCheck, assume, given, settings, strategies as st

SIM = simulate_accelerator()
POOL = [
    torch.ones(2),
    torch.arange(6).reshape(2, 3).t(),
    torch.zeros(1, 2, 2, 2).contiguous(memory_format=torch.channels_last),
    torch.tensor(3),
    torch.linspace(0, 1, 5, dtype=torch.float64),
    # Negative views (a sign bit torch keeps apart from the bytes): casts must keep it.
    torch._neg_view(torch.linspace(-2, 3, 4)),
    torch._neg_view(torch.linspace(-1, 2, 3, dtype=torch.float16)),
    torch.tensor([1 + 2j, -3 - 1j]).conj().imag,
]
OPTIONS = st.sampled_from(
    [{{}}, {{"pack": True}}, {{"pack": False}}, {{"skip_keys": ("ids",)}},
     {{"dtype": torch.float64}}, {{"pack": True, "dtype": torch.float16}},
     {{"pack": True, "dtype": torch.float32}}]
)
count = {{"moved": 0, "loaded": 0}}


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(graphs.graphs(POOL), OPTIONS)
def moves(graph, options):
    assume(not any(t.is_meta for _, t in reach.tensors(graph)))  # no values to move
    taken = reach.snapshot(graph)
    out = tp.to_device(graph, SIM, **options)
    dtype = options.get("dtype")

    def cast(t):
        return dtype if dtype is not None and t.is_floating_point() else t.dtype

    skip = frozenset(options.get("skip_keys", ()))
    reach.check_move(graph, taken, out, SIM, skip=skip, cast=cast)
    count["moved"] += 1


@settings(max_examples=15, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.lists(graphs.graphs(POOL, max_leaves=6), min_size=1, max_size=3))
def loads(batches):
    assume(not any(t.is_meta for batch in batches for _, t in reach.tensors(batch)))
    taken = [reach.snapshot(batch) for batch in batches]
    handed = list(tp.DeviceLoader(batches, device=SIM))
    assert len(handed) == len(batches)
    for batch, before, out in zip(batches, taken, handed, strict=True):
        reach.check_move(batch, before, out, SIM)
        count["loaded"] += 1


def negative_views():
    # The packed gather casts on the host: a negative view's sign must survive it (torch's
    # CPU copy_ between float16 and float32 drops it). Oracle: negation commutes with rounding.
    count["negative"] = 0
    for source in (torch.float16, torch.float32, torch.float64):
        plain = torch.linspace(-2, 3, 6, dtype=source)
        for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            batch = {{"n": torch._neg_view(plain), "rest": [torch.ones(2)] * 3 + [torch.zeros(1)]}}
            out = tp.to_device(batch, SIM, pack=True, dtype=dtype)
            want = plain.to(dtype).neg()
            assert out["n"].device == SIM and torch.equal(out["n"].cpu(), want), (source, dtype)
            count["negative"] += 1


moves()
loads()
negative_views()
print(json.dumps(count))
"""


def test_moves_and_loads_to_the_simulated_accelerator_keep_values_and_the_invariant() -> None:
    count = run_isolated(_CHILD, timeout=600)
    assert count["moved"] >= 40 and count["loaded"] >= 15 and count["negative"] == 12


# Tensor subclasses. Every tensor on the simulated accelerator is the simulator's own
# wrapper class and torch gives a tensor one Python object, so a subclass whose .to
# hands back its own class cannot live there (on a real accelerator it can). The
# promise: to_device, DeviceLoader and module moves refuse it with an
# UnsupportedBatchError naming a path where one is (paths found by the reachability
# oracle, not by the code under test) and why, and leave the input as it was;
# subclasses whose .to gives a plain tensor (nn.Parameter, torch functions disabled)
# still move, values kept.
_SUBCLASS_CHILD = f"""
import sys, re
sys.path.insert(0, {HERE!r})
import graphs, reachability as reach
import torchport as tp
from hypothesis import HealthCheck, assume, given, settings, strategies as st

SIM = simulate_accelerator()


class Sub(torch.Tensor):
    pass


class Quiet(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl


POOL = [
    torch.ones(2),
    torch.arange(3.0).as_subclass(Sub),
    torch.tensor([4.0, 5.0]).as_subclass(Sub),
]
count = {{"refused": 0, "loaded": 0, "kept": 0, "left": 0}}


def _named(message, graph):
    # The message starts with the path; it must lead to one of the input's Sub tensors
    # (or, "path (tensor N inside it)", to an object holding one).
    subs = [t for _, t in reach.tensors(graph) if type(t) is Sub]
    where = message.split(" is a ", 1)[0]
    inside = re.fullmatch(r"(.*) \\(tensor \\d+ inside it\\)", where)
    try:
        found = eval(inside[1] if inside else where, {{"batch": graph}})  # batch['a'].left
    except Exception:
        found = None
    held = [t for _, t in reach.tensors(found)] if inside and found is not None else [found]
    paths = ["batch" + "".join(path) for path, t in reach.tensors(graph) if type(t) is Sub]
    named = any(h is t for h in held for t in subs) or where in paths
    return named, (message, paths)


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(graphs.graphs(POOL, max_leaves=6))
def refused(graph):
    found = reach.tensors(graph)
    assume(any(type(t) is Sub for _, t in found) and not any(t.is_meta for _, t in found))
    taken = reach.snapshot(graph)
    try:
        out = tp.to_device(graph, SIM)
    except tp.UnsupportedBatchError as exc:
        message = str(exc)
    else:
        # Only where an object's own .to keeps it where it was (PyG's .to hands a value
        # it cannot move back as it is): the invariant holds, no Sub reached the device.
        reach.check_move(graph, taken, out, SIM)
        assert all(t.is_cpu for _, t in reach.tensors(out) if type(t) is Sub)
        count["left"] += 1
        return
    if "contains itself" in message or "cannot rebuild" in message:
        return  # refused first for another reason, before any copy
    named, why = _named(message, graph)
    assert named, why
    assert "Sub (torch.Tensor subclass)" in message and "plain tensor" in message, message
    assert reach.snapshot(graph) == taken, "the input changed"
    count["refused"] += 1
    try:
        next(iter(tp.DeviceLoader([graph], device=SIM)))
    except tp.UnsupportedBatchError as exc:
        named, why = _named(str(exc), graph)
        assert named, why
        count["loaded"] += 1
    else:
        raise AssertionError("DeviceLoader moved a Sub to the simulator")


refused()

# Subclasses whose .to gives a plain tensor move, and hold their values.
batch = {{"q": torch.arange(3.0).as_subclass(Quiet), "p": torch.nn.Parameter(torch.ones(2))}}
out = tp.to_device(batch, SIM)
for key in batch:
    assert out[key].device == SIM and out[key].cpu().tolist() == batch[key].tolist()
    count["kept"] += 1

# A module holding one: refused by its path, before anything moved.
model = torch.nn.Linear(2, 2)
model.register_buffer("codes", torch.ones(2).as_subclass(Sub))
try:
    tp.to_device(model, SIM)
except tp.UnsupportedBatchError as exc:
    assert "'codes'" in str(exc) and "subclass" in str(exc), str(exc)
    assert model.weight.device.type == "cpu" and type(model.codes) is Sub
    count["kept"] += 1
print(json.dumps(count))
"""


def test_a_tensor_subclass_is_refused_by_its_path_on_the_simulated_accelerator() -> None:
    count = run_isolated(_SUBCLASS_CHILD, timeout=600)
    assert count["refused"] >= 20 and count["loaded"] == count["refused"]
    assert count["kept"] == 3


# Sparse and other non-strided layouts cannot live on the simulated accelerator (it
# holds strided tensors only; on a real accelerator they can). The same promise as
# for subclasses: each such leaf is refused with an UnsupportedBatchError that names
# its path, by to_device, DeviceLoader and module moves alike, the input unchanged.
_LAYOUT_CHILD = """
import torchport as tp

SIM = simulate_accelerator()
found = []
for make in (lambda: torch.eye(3).to_sparse(), lambda: torch.eye(3).to_sparse_csr()):
    leaf = make()
    batch = {"ok": torch.ones(2), "graph": [torch.zeros(1), leaf]}
    for move in (
        lambda: tp.to_device(batch, SIM),
        lambda: next(iter(tp.DeviceLoader([batch], device=SIM))),
    ):
        try:
            move()
        except tp.UnsupportedBatchError as exc:
            found.append(str(exc).startswith("batch['graph'][1] is a "))
        else:
            found.append("moved")
        assert batch["graph"][1] is leaf and batch["ok"].is_cpu
    model = torch.nn.Linear(2, 2)
    model.register_buffer("adjacency", make())
    try:
        tp.to_device(model, SIM)
    except tp.UnsupportedBatchError as exc:
        found.append("'adjacency'" in str(exc) and model.weight.is_cpu)
    else:
        found.append("moved")
print(json.dumps(found))
"""


def test_a_sparse_tensor_is_refused_by_its_path_on_the_simulated_accelerator() -> None:
    assert run_isolated(_LAYOUT_CHILD) == [True] * 6
