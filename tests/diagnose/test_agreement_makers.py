"""The CPU prediction against the simulated device, on tensors made by calls no mode sees as
makers, and on moves that hand back a tensor the program still holds.

Oracle: the simulated accelerator (``sim:0``) runs each program with CUDA's device rules and
counts every copy and host wait it really makes; ``tp.audit()`` on the CPU predicts the same
run (see test_agreement.py for how the two are kept apart). Per source line they must count
the same, and neither run may leave a line unpredicted.

The programs make a tensor ``t`` by a legacy typed class (``torch.LongTensor(16)``,
``torch.FloatTensor(data)``, ``torch.Tensor(16)``), by ``x.new(...)``/``x.new_tensor(...)``
of a host or a device tensor, by a wrapper (``Variable(t)``, ``x.data``) and moves of those,
then assign into it, read it, index a device tensor with it, move it, and send it to the
device for one line only (``x[t.long().to(dev) % 16]``, ``_ = t.to(dev)``) while the
program still holds it: on this host that move hands back ``t`` itself, the device's copy
for the line and the host's tensor after it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sim.isolated import assert_predicted_as_measured, audit_counts

pytestmark = pytest.mark.needs_simulator

# x is copied to the device: a run that copies nothing is no measured run (report.measured)
SETUP = ["x = torch.randn(16).to(dev)", "hv = torch.zeros(16)"]

MAKERS = [
    "t = torch.LongTensor(16).zero_()",
    "t = torch.FloatTensor(16).fill_(0)",
    "t = torch.Tensor(16).zero_()",
    "t = torch.DoubleTensor([0.0] * 16)",
    "t = torch.IntTensor(16).zero_()",
    "t = torch.ByteTensor(torch.Size([16])).zero_()",
    "t = hv.new(16).zero_()",
    "t = x.new(16).zero_()",
    "t = x.new([0.0] * 16)",
    "t = hv.new([0.0] * 16)",
    "t = hv.new_tensor([0.0] * 16)",
    "t = x.new_tensor([0.0] * 16)",
    "t = hv.new_zeros(16)",
    "t = Variable(x * 1).to(dev)",
    "t = Variable(hv).to(dev)",
    "t = (x * 1).data.to(dev)",
    "t = Variable(torch.zeros(16)).to(dev)",
    "t = torch.FloatTensor([0.0] * 16).to(dev)",
    "t = torch.LongTensor(hv.long()).to(dev)",
    "t = torch.stack([torch.Tensor(hv).to(dev)]).squeeze(0).detach().to(dev)",
    "t = x.data",
    "t = Variable(x)",
    "t = hv.data",
    "t = Variable(hv)",
]
USES = [
    "t[3] = 1",
    "t[[1, 2]] = 2",
    "_ = float(t.sum())",
    "_ = int(t[0])",
    "_ = x[t.long() % 16]",
    "x[t.long() % 16] = 1.0",
    "_ = x[t.long().to(dev) % 16]",
    "x[t.long().to(dev) % 16] = 1.0",
    "_ = t.to(dev)",
    "t.to(dev)",
    "_ = Variable(t).to(dev)",
    "_ = t.data.to(dev)",
    "_ = float(Variable(t).sum())",
    "_ = float(t.data.sum())",
    "t = t.cpu()",
    "t = t.to(dev)",
    "u = t.new(4).zero_(); _ = float(u.sum())",
    "u = t.new([1.0, 2.0]); u[0] = 3.0",
    "u = t.new_tensor([1, 2]); _ = int(u[0])",
]


@st.composite
def programs(draw: st.DrawFn) -> list[str]:
    return [draw(st.sampled_from(MAKERS)), *draw(st.lists(st.sampled_from(USES), max_size=6))]


def _program(body: list[str]) -> str:
    lines = ["import torch", "from torch.autograd import Variable", "def prog(dev):"]
    return "\n".join(lines + [f"    {line}" for line in SETUP + body]) + "\n"


# A one-line move of ``t`` (on this host it hands back ``t`` itself) followed later by
# ``t = t.cpu()`` of a device tensor: the prediction then counts a wait (or a copy) at the
# next read (or write) of the host copy that the device does not make. One object of the
# CPU run stands for two tensors of the device run (``_`` the device's, ``t`` the host
# copy), and the audit follows objects, not names. Left out of the draw, and kept as the
# strict xfail below, so its fix announces itself (found by a clean-clone run's draw).
_ONE_LINE_MOVES = ("_ = t.to(dev)", "t.to(dev)", "_ = Variable(t).to(dev)", "_ = t.data.to(dev)")


def _moved_for_a_line_then_copied_back(body: list[str]) -> bool:
    moves = [i for i, line in enumerate(body) if line in _ONE_LINE_MOVES]
    return bool(moves) and "t = t.cpu()" in body[moves[0] + 1 :]


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        programs().filter(lambda body: not _moved_for_a_line_then_copied_back(body)),
        min_size=8,
        max_size=8,
    )
)
def test_tensors_made_by_legacy_constructors_and_wrappers_are_predicted_as_measured(
    batch: list[list[str]],
) -> None:
    sources = [_program(body) for body in batch]
    assert_predicted_as_measured(sources)


@pytest.mark.xfail(
    strict=True,
    reason="the audit's prediction: a device tensor moved for one line (`_ = t.to(dev)`), then "
    "copied back (`t = t.cpu()`) and read (`float(t.sum())`): a wait predicted at the read "
    "that the simulated device does not make (left out of the random draw above)",
)
def test_a_tensor_moved_for_a_line_then_copied_back_is_predicted_as_measured() -> None:
    # A read, not a write: torch 2.15 writes a Python scalar into a device tensor without a
    # copy (`t[3] = 1`), so a write misses on some torch versions only (a strict xfail that
    # passed on the newest torch); every version waits to read a device tensor's value.
    body = ["t = torch.zeros(16).to(dev)", "_ = t.to(dev)", "t = t.cpu()", "_ = float(t.sum())"]
    assert_predicted_as_measured([_program(body)])


def test_a_word_list_filled_into_a_legacy_long_tensor_copies_nothing() -> None:
    # L1aoXingyu/pytorch-beginner `data_utils.py` (and yunjey/pytorch-tutorial's): `ids =
    # torch.LongTensor(n)`, then `ids[i] = word_id` per word, then the batches are moved
    # with `Variable(...).cuda()`, and the LSTM state with `Variable(state.data).cuda()`.
    body = [
        "ids = torch.LongTensor(8)",
        "for i in range(8): ids[i] = i",
        "batch = Variable(ids[:4]).to(dev)",
        "state = Variable(torch.zeros(4)).to(dev)",
        "state = Variable(state.data).to(dev)",
        "_ = x[hv.long().to(dev)]; hv[1] = 2.0",
    ]
    (counted,) = audit_counts([_program(body)])
    first = len(SETUP) + 4  # the body's first line: after the imports, def and setup lines
    assert counted["measured"] == {
        f"{len(SETUP) + 2} copy": 1,  # x
        f"{first + 2} copy": 1,  # the batch
        f"{first + 3} copy": 1,  # the first state; its later moves copy nothing
        f"{first + 5} copy": 1,  # hv.long()'s copy; hv itself stays the host's
    }
    assert counted["predicted"] == counted["measured"]


def test_a_move_whose_receiver_starts_on_an_earlier_line_is_read_whole() -> None:
    # Python 3.11 gives `.to(dev)` of a receiver written across lines the span of
    # `.to(dev)` alone; the receiver (`Variable(...)`, a new tensor) is read from the file.
    # pytorch-beginner `language model.py:59-64` builds its LSTM state this way.
    body = [
        "s = (Variable(torch.zeros(1,",
        "                          4)).to(dev), 1)",
        "b = s[0].to(dev)",
        "c = [Variable(t.data).to(dev) for t in (b,",
        "                                        b)]",
    ]
    (counted,) = audit_counts([_program(body)])
    first = len(SETUP) + 4
    assert counted["measured"] == {f"{len(SETUP) + 2} copy": 1, f"{first + 1} copy": 1}
    assert counted["predicted"] == counted["measured"]


# A module of the program's imported before the audit starts, binding torch's makers by
# name (`from torch import from_numpy`): no mode of torch's sees those calls
_HELPER = """
import os, sys, tempfile
_folder = tempfile.mkdtemp()
with open(os.path.join(_folder, "host_makers.py"), "w") as _f:
    _f.write("from torch import from_numpy, frombuffer\\n"
             "make = from_numpy\\n")
sys.path.insert(0, _folder)
import host_makers
import numpy as np
"""


def test_host_makers_bound_by_name_before_the_audit_are_followed() -> None:
    body = [
        "h = host_makers.from_numpy(np.zeros(4, dtype=np.float32))",
        "h[0] = 1.0; _ = float(h.sum())",
        "g = host_makers.make(np.zeros(4, dtype=np.float32)); _ = g.tolist()",
        "b = host_makers.frombuffer(bytearray(16), dtype=torch.float32); _ = int(b[0])",
        "_ = x[host_makers.from_numpy(np.array([1, 2]))]",
        "_ = (h * 2).cpu()",
    ]
    source = _program(body).replace("import torch\n", "import torch\n" + _HELPER, 1)
    (counted,) = audit_counts([source])
    first = source.splitlines().index("    " + body[0]) + 1
    setup = source.splitlines().index("    " + SETUP[0]) + 1
    assert counted["measured"] == {f"{setup} copy": 1, f"{first + 4} copy": 1}, source
    assert counted["predicted"] == counted["measured"]
    assert counted["notes"] == {"predicted": [], "measured": []}


# A module's tensors a module move sent to the device, reached through what shares their
# data (RL-Adventure's NoisyLinear: `Variable(self.weight_epsilon)` under a `Variable` that
# ends in `.cuda()`): moving those again copies nothing on the device; copying a host
# tensor into them (its `reset_noise`: `self.weight_epsilon.copy_(torch.randn(n)...)`)
# copies it to the device, and a value computed from the device's tensors copies nothing
MODULE_TENSORS = ["m.weight", "m.bias", "m.running_mean", "m.weight_epsilon"]
SHARING = ["Variable({})", "{}.data", "{}.detach()", "Variable({}.data)", "{}.view(-1)"]
MODULE_USES = [
    "_ = {}.to(dev)",
    "_ = {}.cpu().to(dev)",
    "_ = float({}.sum())",
    "_ = {}.to(dev).cpu()",
    "with torch.no_grad(): {}.copy_(torch.randn(4).abs().sqrt())",
    "with torch.no_grad(): {}.copy_(x[:4] * 2)",
]
_MODULE = [
    "m = torch.nn.BatchNorm1d(4)",
    "m.register_buffer('weight_epsilon', torch.zeros(4))",
    "m = m.to(dev)",
]


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(MODULE_TENSORS),
                st.sampled_from(SHARING),
                st.sampled_from(MODULE_USES),
            ),
            min_size=1,
            max_size=5,
        ),
        min_size=6,
        max_size=6,
    )
)
def test_what_shares_a_moved_module_tensor_s_data_is_the_device_s(
    batch: list[list[tuple[str, str, str]]],
) -> None:
    sources = [
        _program(_MODULE + [use.format(share.format(name)) for name, share, use in uses])
        for uses in batch
    ]
    assert_predicted_as_measured(sources)


def test_a_backward_pass_s_waits_are_the_backward_call_s_line() -> None:
    # The device's backward runs on autograd's own thread for it (no frame of the
    # program's there); the CPU run charges its waits to `loss.backward()`, and so must
    # the measured run (pytorch-book Chapter11's `logit.flatten(0, 1)[mask.view(-1)]`,
    # whose backward is a boolean-mask index_put: a wait on CUDA).
    body = [
        "w = torch.randn(16, device=dev, requires_grad=True)",
        "loss = w[x > 0].sum() + w[x < 0].mean()",
        "loss.backward()",
        "torch.autograd.grad(w[x > 0].sum(), w)",
    ]
    (counted,) = audit_counts([_program(body)])
    first = len(SETUP) + 4
    assert counted["measured"].get(f"{first + 2} sync") == 2, counted
    assert counted["measured"].get(f"{first + 3} sync") == 2, counted
    assert counted["predicted"] == counted["measured"]
    assert counted["notes"] == {"predicted": [], "measured": []}
