"""The CPU prediction against the simulated device's own count, on generated programs.

Oracle: the simulated accelerator (``sim:0``) runs each program with real device rules and
publishes every copy and host wait it makes (``torchport._crossings``); ``tp.audit()`` on
the CPU predicts the same run from the CPU run. The two are written apart (the simulator
asks ``diagnose._on_device`` with the real devices of real arguments; the prediction
follows :mod:`torchport.diagnose._host_held` and the op table from a run where every
tensor is on the CPU), and per source line they must count the same copies and the same
waits.

The programs index and assign: masks, index tensors, lists, ints and slices, on a tensor
of the device and on tensors the program made on the host (``torch.zeros(n)``,
``torch.tensor(0.5)``, what is computed from them alone), with Python numbers, host
one-element tensors and device values, and they read values back; they move what they
computed from device or host tensors (``x.double().to(dev)``, ``hv.cpu()``). Copies to the
host and their later reads are generated in test_agreement_host_copies.py.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sim.isolated import assert_predicted_as_measured, audit_counts
from torchport import hardware

pytestmark = pytest.mark.needs_simulator

SETUP = [
    "x = torch.randn(16, device=dev)",
    "hv = torch.zeros(16)",
    "mask = x > 0",
    "hmask = hv >= 0",
    "idx = torch.tensor([1, 2], device=dev)",
    "h = torch.tensor(0.5)",
    "d0 = x.sum()",
    "hidx = torch.tensor([0, 3])",
]

_HOST_VALUES = ["0.5", "torch.tensor(0.5)", "h", "h * 2", "torch.full((), 2.0)"]
_DEVICE_VALUES = ["torch.tensor(0.5, device=dev)", "d0", "x.mean()"]


# Moves of what the program computed: on CUDA an op with a tensor on the device runs there
# (a host tensor beside it is a 0-dim scalar), so its result's .to(dev) returns it (no
# copy); what is computed from host tensors alone is the host's, and its .cpu() returns it.
MOVES = [
    "_ = x.double().to(dev)",
    "_ = (x * h).to(dev)",
    "_ = x[mask].to(dev)",
    "_ = x[[1, 2]].to(dev)",
    "_ = x.new_zeros(2).to(dev)",
    "_ = torch.randn(2, device=dev).float().to(dev)",
    "_ = hv.double().to(dev)",
    "_ = (hv * 2).to(dev)",
    "hc = hv.cpu(); hv = hc + hv",
    "hc = torch.randn(16, device=dev).cpu(); hv = hv + hc.cpu()",
    "hc = (x * 2).cpu(); hv = hv + hc",
    "hc = torch.from_numpy(hv.numpy()); hv = hv + hc.cpu()",
]


@st.composite
def statements(draw: st.DrawFn) -> str:
    target = draw(st.sampled_from(["x", "hv"]))
    on_device = target == "x"
    values = _HOST_VALUES + (_DEVICE_VALUES if on_device else [])
    index = draw(
        st.sampled_from(
            ["mask" if on_device else "hmask", "[1, 2]", "[True, False] * 8", "0", "slice(0, 2)"]
            + ["torch.tensor([1, 2])"]  # on the host: a device x gets it copied
            + (["idx", "hidx"] if on_device else [])
        )
    )
    form = draw(st.sampled_from(["assign", "read_index", "read_value", "move"]))
    if form == "move":
        return draw(st.sampled_from(MOVES))
    if form == "assign":
        value = draw(st.sampled_from(values))
        return f"{target}[{index}] = {value}"
    if form == "read_index":
        return f"_ = {target}[{index}]"
    read = draw(st.sampled_from(["float({t}.sum())", "{t}.max().item()", "{t}.tolist()"]))
    return "_ = " + read.format(t=target)


programs = st.lists(statements(), min_size=1, max_size=6)


def _program(body: list[str]) -> str:
    lines = ["import torch", "def prog(dev):"] + [f"    {line}" for line in SETUP + body]
    return "\n".join(lines) + "\n"


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(programs, min_size=8, max_size=8))
def test_the_prediction_counts_what_the_simulated_device_counts(
    batch: list[list[str]],
) -> None:
    sources = [_program(body) for body in batch]
    results = audit_counts(sources)
    for source, counted in zip(sources, results, strict=True):
        assert counted["predicted"] == counted["measured"], source
        # every line here is one the prediction claims to know, and a measured run
        # predicts nothing: neither leaves a line unpredicted
        assert counted["notes"] == {"predicted": [], "measured": []}, source


def test_a_mask_assignment_of_a_host_scalar_tensor_is_masked_fill_on_the_device() -> None:
    # The case of issue 32: `x[mask] = torch.tensor(0.5)` is index_put_ with a 0-dim host
    # value, which CUDA runs as masked_fill_ (no wait); a device value waits.
    body = [
        "x[mask] = torch.tensor(0.5)",
        "x[mask] = torch.tensor(0.5, device=dev)",
        "x[[1, 2]] = 1.0",
        "_ = float(hv.sum())",
    ]
    (counted,) = audit_counts([_program(body)])
    first = len(SETUP) + 3  # the body's first line: after the import, def and setup lines
    assert counted["measured"] == {
        "7 copy": 1,  # idx = torch.tensor([1, 2], device=dev)
        f"{first + 1} sync": 1,
        f"{first + 1} copy": 1,  # torch.tensor(0.5, device=dev)
        # the list index, and the number where torch wraps it for index_put_ (newer torch
        # runs a lone advanced index as index_fill_, the number a kernel argument)
        f"{first + 2} copy": 1 if hardware.setitem_number_fills_by_index() else 2,
    }
    assert counted["predicted"] == counted["measured"]


# x[index] = number, every index form: the number CUDA wraps on the host is copied into a
# 0-dim view and filled into any other (ATen/TensorIndexing.h, copy_to; see
# diagnose._indexing.assigned_number_bytes), and index_put_ copies it for an advanced index
_NUMBER_SETUP = [
    "m = torch.randn(4, 4, device=dev)",
    "t3 = torch.randn(2, 3, 4, device=dev)",
    "s = torch.randn((), device=dev)",
    "t1 = torch.tensor(1, device=dev)",
    "idx = torch.tensor([0, 1], device=dev)",
    "xmask = torch.randn(16, device=dev) > 0",
]
_PARTS = ["0", "-1", "1:3", "None", "...", "t1", "idx", "[0, 1]"]
_LONE = [
    "s[...]",
    "s[()]",
    "s[None]",
    "m[True]",
    "m[False]",
    "m[1][2]",
    "x[xmask]",
    "x[5]",
    "x[[True, False] * 8]",
    "m[:, [True, False, True, False]]",
    "m[[True, False, True, False], [0, 1]]",
]


@st.composite
def number_assignments(draw: st.DrawFn) -> str:
    number = draw(st.sampled_from(["1.0", "2", "True", "-0.5"]))
    if draw(st.booleans()):
        return f"{draw(st.sampled_from(_LONE))} = {number}"
    target = draw(st.sampled_from(["m", "t3"]))
    parts = draw(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=2))
    if parts.count("...") > 1:
        parts = ["..."]
    index = ", ".join(parts) + ("," if len(parts) == 1 and draw(st.booleans()) else "")
    return f"{target}[{index}] = {number}"


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(number_assignments(), min_size=1, max_size=6), min_size=8, max_size=8))
def test_a_number_assigned_through_any_index_is_predicted_as_the_device_counts(
    batch: list[list[str]],
) -> None:
    sources = [_program(_NUMBER_SETUP + body) for body in batch]
    assert_predicted_as_measured(sources, notes_allowed=True)


def test_a_number_is_copied_into_a_zero_dim_view_and_filled_into_any_other() -> None:
    # Expected counts written from TensorIndexing.h (torch 2.13), apart from both sides:
    # copy_to() copies a 0-dim host value into a view of equal sizes and fills the rest.
    # Torch 2.15 fills the 0-dim view too (seen by dispatch on the CPU: fill_, no copy_).
    view = int(hardware.setitem_number_copies_into_a_zero_dim_view())
    cases = {
        "x[0] = 1.0": view,  # 0-dim view: dst.copy_(src), one element crosses (2.13)
        "x[-1] = 2": view,
        "x[3] = True": view,
        "m[0, 1] = 1.0": view,
        "s[...] = 1.0": view,
        "m[0] = 1.0": 0,  # a 1-dim view: dst.fill_(src) reads the host value, nothing crosses
        "x[0:2] = 1.0": 0,
        "x[None] = 1.0": 0,
        "x[True] = 1.0": 0,
        "x[False] = 1.0": 0,  # set_item returns at once
        "x[mask] = 1.0": 0,  # masked_fill_ (canDispatchToMaskedFill)
    }
    body = list(cases)
    (counted,) = audit_counts([_program(_NUMBER_SETUP + body)])
    first = len(SETUP) + len(_NUMBER_SETUP) + 3
    for number, (line, copies) in enumerate(cases.items()):
        seen = counted["measured"].get(f"{first + number} copy", 0)
        assert seen == copies, line
        assert f"{first + number} sync" not in counted["measured"], line
    assert counted["predicted"] == counted["measured"]


def test_index_tensors_made_on_the_host_are_copied_to_the_indexed_device() -> None:
    # CUDA copies each index tensor on the host to the indexed tensor's device (make_info
    # in TensorAdvancedIndexing.cpp), one copy per tensor; a moved tensor whose dtype
    # changes is the device's, and reading it waits.
    body = [
        "hi = torch.tensor([1, 2])",
        "_ = x[hi]",
        "_ = m[hi, hi]",
        "x[hi] = 1.0",
        "x.index_put_((hi,), torch.tensor(1.0))",
        "h2 = torch.zeros(3).to(dev, dtype=torch.float64)",
        "_ = h2.sum().item()",
    ]
    (counted,) = audit_counts([_program(["m = torch.randn(4, 4, device=dev)", *body])])
    first = len(SETUP) + 4  # hi: after the import, def, setup lines and m
    expected = {
        "7 copy": 1,  # idx = torch.tensor([1, 2], device=dev)
        f"{first + 1} copy": 1,  # hi
        f"{first + 2} copy": 2,  # hi, twice
        # hi, and the number: index_put_ on every torch, for index_fill_ (2.15) takes
        # only an index on the indexed tensor's device (see the test below)
        f"{first + 3} copy": 2,
        f"{first + 4} copy": 2,  # hi and the one-element value
        f"{first + 5} copy": 1,
        f"{first + 6} sync": 1,
    }
    assert counted["measured"] == expected
    assert counted["predicted"] == expected


def test_a_number_is_index_fill_s_only_for_an_int64_index_on_the_device() -> None:
    # What CUDA does, from torch 2.15's ATen/TensorIndexing.h (set_item, lines 856-927;
    # try_dispatch_index_fill_, 720-753): `x[index] = number` with one advanced index runs
    # as index_fill_ (the number a kernel argument, nothing crosses) only for an int64
    # index on x's device, 1-dim or contiguous; any other goes to index_put_, which copies
    # the number THPVariable_setitem wrapped on the host. A list is built on x's device as
    # int64 (sequenceToVariable). Older torch (2.13, 2.6) runs index_put_ for all of them.
    fills = hardware.setitem_number_fills_by_index()
    cases = {
        "x[idx] = 1.0": 0 if fills else 1,  # the number
        "x[idx.int()] = 1.0": 1,  # int32: index_put_
        "x[[1, 2]] = 1.0": 1 if fills else 2,  # the list, and the number before 2.15
        "m[idx.view(2, 1).expand(2, 2).t()] = 1.0": 1,  # non-contiguous 2-dim: index_put_
        "m[:, idx] = 1.0": 0 if fills else 1,
        "m[:, hi] = 1.0": 2,  # hi is the host's: index_put_, hi and the number cross
        "x[hi.to(dev)] = 1.0": 1 if fills else 2,  # the move of hi
    }
    body = ["m = torch.randn(4, 4, device=dev)", "hi = torch.tensor([0, 3])", *cases]
    (counted,) = audit_counts([_program(body)])
    first = len(SETUP) + 5  # the first case: after the import, def, setup lines, m and hi
    for number, (line, copies) in enumerate(cases.items()):
        assert counted["measured"].get(f"{first + number} copy", 0) == copies, line
    assert counted["predicted"] == counted["measured"]


def test_a_mask_made_on_the_host_is_expanded_there_and_its_positions_copied() -> None:
    # A host mask indexing a device tensor: nonzero runs on the host (no wait), its
    # positions are copied; index_put_ cannot run as masked_fill_ with it, so the value
    # made on the host is copied too. An empty copy is none (copy_impl returns early).
    body = [
        "hm = torch.arange(16) > 9",
        "hm4 = torch.arange(4) > 1",
        "_ = x[hm]",
        "x[hm] = 1.0",
        "x[hm] = torch.tensor(0.5)",
        "_ = m[hm4, torch.tensor([1])]",
        "_ = x[[]]",
        "_ = torch.zeros(0).to(dev)",
        "_ = x[torch.arange(16) > 99]",
    ]
    (counted,) = audit_counts([_program(["m = torch.randn(4, 4, device=dev)", *body])])
    first = len(SETUP) + 4  # hm: after the import, def, setup lines and m
    expected = {
        "7 copy": 1,  # idx = torch.tensor([1, 2], device=dev)
        f"{first + 2} copy": 1,  # the positions
        f"{first + 3} copy": 2,  # the positions and the number
        f"{first + 4} copy": 2,  # the positions and the value
        f"{first + 5} copy": 2,  # the positions and the index tensor
    }
    assert counted["measured"] == expected
    assert counted["predicted"] == expected


def test_a_zero_dim_index_tensor_beside_a_list_or_advanced_index_is_read() -> None:
    # handleDimInMultiDimIndexing selects by a 0-dim integer tensor's .item() (a wait
    # when it is the device's) even where another part is advanced (found by the
    # generator above: m[t1, idx] = 1.0)
    body = [
        "t1 = torch.tensor(1, device=dev)",
        "m[t1, idx] = 1.0",
        "_ = m[t1, [0, 1]]",
        "m[t1, [0, 1]] = 2.0",
        "m[torch.tensor(1), [0, 1]] = 2.0",
    ]
    (counted,) = audit_counts([_program(["m = torch.randn(4, 4, device=dev)", *body])])
    first = len(SETUP) + 4  # t1: after the import, def, setup lines and m
    for line in range(first + 1, first + 4):
        assert counted["measured"].get(f"{line} sync") == 1, line
    assert f"{first + 4} sync" not in counted["measured"]  # read on the host
    assert counted["predicted"] == counted["measured"]


def test_a_move_of_a_tensor_made_on_the_device_copies_nothing() -> None:
    # .to() of a tensor already on its target returns it (or converts it there): no copy.
    # On CUDA an op with a device tensor among its arguments runs on the device (a host
    # tensor beside it must be a 0-dim scalar), so what it computes is there too.
    body = [
        "y = torch.zeros(3, device=dev)",
        "_ = y.to(dev)",
        "_ = x.to(x.device)",
        "_ = x.to(dev, torch.float64)",
        "_ = x.to(device=dev, non_blocking=True)",
        "_ = x.to(x)",
        "_ = x.double().to(dev)",
        "_ = (y * h).to(dev)",
        "_ = x[mask].to(dev)",
        "_ = x[[0, 1]].to(dev)",  # (the list index is a copy of its own: line + 9)
        "_ = torch.zeros(3).to(dev)",  # the only move that copies
    ]
    (counted,) = audit_counts([_program(body)])
    first = len(SETUP) + 3  # y: after the import, def and setup lines
    expected = {
        "7 copy": 1,
        f"{first + 8} sync": 1,
        f"{first + 9} copy": 1,
        f"{first + 10} copy": 1,
    }
    assert counted["measured"] == expected
    assert counted["predicted"] == expected
