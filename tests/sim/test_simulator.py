"""The simulated accelerator: PyTorch's accelerator, real values, CUDA's rules and hazards.

Each test runs its program in a child interpreter (see ``isolated.py``). The
oracle for values is the same program on the CPU: the simulated device runs the
CPU's kernels, so anything it computes must match the CPU run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator


def test_pytorch_reports_it_as_the_accelerator_and_pick_device_picks_it() -> None:
    got = run_isolated(
        """
        import torchport as tp
        from torchport.errors import DeviceError, TorchportError
        device = simulate_accelerator()
        again = simulate_accelerator()
        try:
            simulate_accelerator(memory_limit="1GiB")
            other = None
        except TorchportError as error:
            other = str(error)
        try:
            torch.ones(2, device="sim:1")
            second = None
        except DeviceError as error:
            second = str(error)
        print(json.dumps({
            "device": str(device), "again": str(again),
            "available": torch.accelerator.is_available(),
            "current": str(torch.accelerator.current_accelerator()),
            "picked": str(tp.pick_device()), "reason": tp.pick_device_with_reason()[1],
            "other": other, "second": second,
        }))
        """
    )
    assert got["device"] == got["again"] == "sim:0"
    assert got["available"] is True
    assert got["current"] == "sim"
    assert got["picked"] == "sim:0"
    assert "sim" in got["reason"]
    assert "already installed" in got["other"]
    assert "one device" in got["second"]


_TRAIN = """
import torch.nn as nn
def train(device, optimizer_name):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Dropout(0.1),
        nn.Flatten(), nn.Linear(4 * 6 * 6, 3),
    ).to(device)
    kind = getattr(torch.optim, optimizer_name)
    opt = kind(model.parameters(), lr=0.01)
    x = torch.randn(8, 1, 8, 8)
    y = torch.randint(0, 3, (8,))
    losses = []
    for _ in range(3):
        xb, yb = x.to(device), y.to(device)
        def closure():
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            return loss
        loss = opt.step(closure) if optimizer_name == "LBFGS" else closure()
        if optimizer_name != "LBFGS":
            opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        accuracy = (model(x.to(device)).argmax(1) == y.to(device)).float().mean().item()
    state = {k: v.cpu().tolist() for k, v in model.state_dict().items()}
    return losses, accuracy, state
"""


def test_what_it_cannot_be_is_refused_with_a_message() -> None:
    got = run_isolated(
        """
        import os
        from torchport.errors import TorchportError
        torch.utils.rename_privateuse1_backend("othernpu")
        try:
            simulate_accelerator()
            taken = None
        except TorchportError as error:
            taken = str(error)
        print(json.dumps({"taken": taken}))
        """
    )
    assert "already named 'othernpu'" in got["taken"]
    compiled = run_isolated(
        """
        from torchport.errors import TorchportError
        device = simulate_accelerator()
        try:
            torch.compile(lambda a: a * 2 + 1)(torch.ones(2, device=device))
            message = None
        except Exception as error:
            message = str(error)
        print(json.dumps({"message": message}))
        """
    )
    assert "torch.compile cannot trace the simulated accelerator" in compiled["message"]


def test_every_optimizer_trains_to_the_cpu_values() -> None:
    got = run_isolated(
        _TRAIN,
        """
        device = simulate_accelerator()
        names = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
                 "RAdam", "ASGD", "Rprop", "LBFGS"]
        out = {}
        for name in names:
            on_cpu, on_sim = train("cpu", name), train(device, name)
            close = all(
                torch.allclose(torch.tensor(on_cpu[2][k]).double(),
                               torch.tensor(on_sim[2][k]).double(), rtol=1e-4, atol=1e-6)
                for k in on_cpu[2]
            )
            losses = torch.allclose(torch.tensor(on_cpu[0]), torch.tensor(on_sim[0]), rtol=1e-4)
            out[name] = [close, losses, on_cpu[1] == on_sim[1]]
        print(json.dumps(out))
        """,
    )
    assert got == {name: [True, True, True] for name in got}
    assert len(got) == 12


def test_mixed_devices_fail_as_on_cuda() -> None:
    got = run_isolated(
        """
        from torch.nn.utils.rnn import pack_padded_sequence
        device = simulate_accelerator()
        x = torch.ones(2, 3, device=device)
        def error(thunk):
            try:
                thunk()
            except (RuntimeError, TypeError) as caught:
                return [type(caught).__name__, str(caught)]
            return None
        print(json.dumps({
            "mixed": error(lambda: x + torch.ones(2, 3)),
            "matmul": error(lambda: torch.ones(3, 2) @ x),
            "scalar_ok": error(lambda: x * torch.tensor(2.0)),
            "numpy": error(lambda: x.numpy()),
            "host_index_ok": error(lambda: x[torch.tensor([0, 1])]),
            "device_index": error(lambda: torch.ones(3)[torch.tensor([0], device=device)]),
            "lengths": error(lambda: pack_padded_sequence(
                torch.ones(2, 3, 4, device=device), torch.tensor([3, 2], device=device),
                batch_first=True)),
            "lengths_ok": error(lambda: pack_padded_sequence(
                torch.ones(2, 3, 4, device=device), torch.tensor([3, 2]), batch_first=True)),
            "cpu_copy_is_cpu": str(x.cpu().device), "print": repr(x[0]),
        }))
        """
    )
    assert got["mixed"][0] == "RuntimeError"
    assert "Expected all tensors to be on the same device" in got["mixed"][1]
    assert "sim:0 and cpu" in got["mixed"][1]
    assert got["matmul"][0] == "RuntimeError"
    assert got["scalar_ok"] is None
    assert got["numpy"] == [
        "TypeError",
        "can't convert sim:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
        "tensor to host memory first.",
    ]
    assert got["host_index_ok"] is None
    assert "indices should be either on cpu" in got["device_index"][1]
    assert "'lengths' argument should be a 1D CPU int64 tensor" in got["lengths"][1]
    assert got["lengths_ok"] is None
    assert got["cpu_copy_is_cpu"] == "cpu"
    assert got["print"] == "tensor([1., 1., 1.], device='sim:0')"


def test_values_on_the_host_are_refused_by_index_put_unless_cuda_takes_them() -> None:
    # What CUDA does (TensorAdvancedIndexing.cpp, _index_put_impl_): a one-element host
    # value with a lone mask on the device runs as masked_fill_(mask, value.item()); a
    # 0-dim host value is moved to the device; any other host value reaches
    # make_index_put_iterator, whose TensorIterator takes host tensors only as 0-dim
    # scalars and raises "Expected all tensors to be on the same device, ... cuda:0 and
    # cpu!". Basic indexing (a slice) copies into the view instead: allowed.
    got = run_isolated(
        """
        device = simulate_accelerator()
        x = torch.zeros(4, device=device)
        hi, mask = torch.tensor([1, 2]), x >= 0
        def error(source):
            try:
                exec(source)
            except RuntimeError as caught:
                return str(caught)
            return None
        cases = [
            "x[hi] = torch.tensor([1.0, 2.0])",
            "x[hi.to(device)] = torch.tensor([1.0, 2.0])",
            "x[[0, 1]] = torch.tensor([1.0, 2.0])",
            "x.index_put_((hi,), torch.tensor([1.0]))",
            "x[mask, None] = torch.zeros(4, 1)",
            "x[hi] = torch.tensor(1.0)",
            "x[mask] = torch.tensor([1.0])",
            "x[0:2] = torch.tensor([1.0, 2.0])",
            "x[hi] = torch.tensor([1.0, 2.0], device=device)",
        ]
        print(json.dumps([error(case) for case in cases]))
        """
    )
    refused = "Expected all tensors to be on the same device, but found at least two devices, "
    assert got[:5] == [refused + "sim:0 and cpu!"] * 5
    assert got[5:] == [None] * 4


def test_data_built_on_the_host_reaches_the_device_under_strict_and_audit() -> None:
    got = run_isolated(
        """
        import torchport as tp
        device = simulate_accelerator()
        x = torch.arange(8.0, device=device).reshape(2, 4)
        out = []
        for watch in (tp.strict, tp.audit):
            with watch():
                made = torch.tensor([[1.0, 2.0]], device=device)  # built on the host, copied
                picked = x[:, [-1]]  # a list index: an index tensor built on the host
                out.append([str(made.device), made.cpu().tolist(), picked.cpu().tolist()])
        print(json.dumps(out))
        """
    )
    assert got == [["sim:0", [[1.0, 2.0]], [[3.0], [7.0]]]] * 2


def test_audit_on_sim_reports_what_crossed_not_a_prediction() -> None:
    got = run_isolated(
        """
        import torchport as tp
        device = simulate_accelerator()
        x = torch.randn(8, 4, device=device)
        host = torch.tensor([1.0, 2.0])
        with tp.audit() as report:
            for _ in range(3):
                host[0].item()            # a host tensor's read: no wait on any device
                x.to(device)              # already there: nothing crosses
                x[:, [-1]]                # the list index is built on the host and copied
                x.sum().item()            # the one wait per iteration
        rows = sorted((e.kind, e.label.split(" (")[0], e.count, e.bytes) for e in report.entries)
        print(json.dumps({"measured": report.measured, "rows": rows}))
        """
    )
    assert got["measured"] is True
    assert got["rows"] == [
        ["sync", "scalar read", 3, 12],
        ["transfer", "copy to the device", 3, 24],
    ]


def test_shapes_sharing_and_rules_hold_where_ops_resize_alias_or_take_scalars() -> None:
    got = run_isolated(
        """
        import io
        device = simulate_accelerator()
        def error(thunk):
            try:
                thunk()
            except Exception as caught:
                return type(caught).__name__
            return None
        x = torch.arange(4, device=device)
        out = torch.empty(0, device=device)
        torch.cat([torch.ones(2, device=device), torch.zeros(3, device=device)], out=out)
        grown = torch.zeros(3, device=device)
        grown.resize_(6)
        p = torch.nn.Parameter(torch.zeros(2, device=device))
        p.data = torch.arange(3.0, device=device)
        z = torch.tensor([1 + 2j, 3 - 1j], device=device)
        b = torch.arange(6.0, device=device)
        buffer = io.BytesIO()
        torch.save([b, b[2:]], buffer)
        buffer.seek(0)
        loaded = torch.load(buffer)
        loaded[1].add_(100)
        print(json.dumps({
            "arange": [list(x.shape), x[2].item()],
            "eye": list(torch.eye(3, device=device).T.shape),
            "out": list(out.shape), "resize": list(grown.shape),
            "data": p.tolist(), "conj": [str(v) for v in (z * z.conj()).tolist()],
            "shared": loaded[0].tolist(),
            "index_select_0d": error(
                lambda: torch.arange(5.0, device=device).index_select(0, torch.tensor(1))),
            "embedding_0d": error(lambda: torch.nn.Embedding(5, 2).to(device)(torch.tensor(3))),
            "host_output": error(lambda: torch.tensor(1.0).add_(torch.tensor(2.0, device=device))),
            "scalar_input": error(lambda: torch.ones(2, device=device) * torch.tensor(2.0)),
            "sparse": error(lambda: torch.sparse_coo_tensor([[0]], [1.0], (2,)).to(device)),
            "parameter": repr(p).splitlines()[0],
        }))
        """
    )
    assert got["arange"] == [[4], 2]
    assert got["eye"] == [3, 3]
    assert got["out"] == [5]
    assert got["resize"] == [6]
    assert got["data"] == [0.0, 1.0, 2.0]
    assert got["conj"] == ["(5+0j)", "(10+0j)"]
    assert got["shared"] == [0.0, 1.0, 102.0, 103.0, 104.0, 105.0]
    assert got["index_select_0d"] == got["embedding_0d"] == got["host_output"] == "RuntimeError"
    assert got["scalar_input"] is None
    assert got["sparse"] == "NotImplementedError"
    assert got["parameter"] == "Parameter containing:"


def test_recurrent_layers_train_to_the_cpu_values() -> None:
    got = run_isolated(
        """
        device = simulate_accelerator()
        out = {}
        for cls in (torch.nn.LSTM, torch.nn.GRU, torch.nn.LSTMCell, torch.nn.GRUCell):
            runs = []
            for where in ("cpu", device):
                torch.manual_seed(0)
                cell = cls in (torch.nn.LSTMCell, torch.nn.GRUCell)
                model = (cls(3, 4) if cell else cls(3, 4, num_layers=2)).to(where)
                x = torch.randn(2, 3) if cell else torch.randn(5, 2, 3)
                y = model(x.to(where))
                y = y[0] if isinstance(y, tuple) else y
                y.pow(2).sum().backward()
                grads = [p.grad.cpu() for p in model.parameters()]
                runs.append((y.detach().cpu(), grads))
            same_out = torch.allclose(runs[0][0], runs[1][0], atol=1e-6)
            pairs = zip(runs[0][1], runs[1][1])
            same_grads = all(torch.allclose(a, b, atol=1e-5) for a, b in pairs)
            out[cls.__name__] = [same_out, same_grads]
        print(json.dumps(out))
        """
    )
    assert got == {name: [True, True] for name in ("LSTM", "GRU", "LSTMCell", "GRUCell")}


def test_an_asynchronous_copy_to_the_host_reads_wrong_until_a_sync() -> None:
    got = run_isolated(
        """
        device = simulate_accelerator()
        x = torch.arange(6, dtype=torch.float32, device=device)
        n = torch.arange(6, device=device)
        early = x.to("cpu", non_blocking=True)
        early_int = n.to("cpu", non_blocking=True)
        before = [early.tolist(), early_int.tolist()]
        torch.accelerator.synchronize()
        after = [early.tolist(), early_int.tolist()]
        out = torch.empty(6)
        out.copy_(x * 2, non_blocking=True)
        differs = out.tolist() != [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        (x.sum()).item()  # a value read waits for the device too
        print(json.dumps({"before": before, "after": after, "differs": differs,
                          "landed": out.tolist(), "blocking": x.cpu().tolist()}))
        """
    )
    real = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert got["before"][0] != real
    assert got["before"][1] != [0, 1, 2, 3, 4, 5]
    assert got["after"] == [real, [0, 1, 2, 3, 4, 5]]
    assert got["differs"] is True
    assert got["landed"] == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert got["blocking"] == real


def test_a_memory_limit_runs_out_as_cuda_does() -> None:
    got = run_isolated(
        """
        import torchport as tp
        device = simulate_accelerator(memory_limit="1MiB")
        kept = torch.zeros(128 * 1024, device=device)  # 512 KiB
        allocated = torch.accelerator.memory_allocated()
        try:
            torch.zeros(256 * 1024, device=device)  # 1 MiB more
            message = None
        except torch.OutOfMemoryError as error:
            message = str(error)
        del kept
        freed = torch.accelerator.memory_allocated()
        report = tp.memory_report(device)
        print(json.dumps({"allocated": allocated, "message": message, "freed": freed,
                          "total": report.total}))
        """
    )
    assert got["allocated"] == 512 * 1024
    assert got["message"].startswith("SIM out of memory. Tried to allocate 1.00 MiB.")
    assert "total capacity of 1.00 MiB" in got["message"]
    assert got["freed"] == 0


def test_save_and_load_keep_map_location() -> None:
    got = run_isolated(
        """
        import io
        device = simulate_accelerator()
        model = torch.nn.Linear(3, 2).to(device)
        buffer = io.BytesIO()
        torch.save({"model": model.state_dict(), "step": 3}, buffer)
        def load(**kwargs):
            buffer.seek(0)
            loaded = torch.load(buffer, **kwargs)
            return sorted({str(v.device) for v in loaded["model"].values()})
        def _cpu_checkpoint():
            saved = io.BytesIO()
            torch.save(torch.nn.Linear(3, 2).state_dict(), saved)
            return saved.getvalue()
        restored = torch.nn.Linear(3, 2).to(device)
        buffer.seek(0)
        restored.load_state_dict(torch.load(buffer)["model"])
        same = torch.equal(restored.weight.cpu(), model.weight.cpu())
        print(json.dumps({
            "plain": load(), "cpu": load(map_location="cpu"),
            "dict": load(map_location={"sim:0": "cpu"}),
            "callable": load(map_location=lambda storage, location: storage),
            "to_sim": load(map_location="sim"), "same": same,
            "cpu_checkpoint_to_sim": sorted({str(v.device) for v in torch.load(
                io.BytesIO(_cpu_checkpoint()), map_location=device).values()}),
        }))
        """
    )
    assert got == {
        "plain": ["sim:0"],
        "cpu": ["cpu"],
        "dict": ["cpu"],
        "callable": ["cpu"],
        "to_sim": ["sim:0"],
        "same": True,
        "cpu_checkpoint_to_sim": ["sim:0"],
    }


def test_copies_and_syncs_are_counted_by_the_users_line() -> None:
    got = run_isolated(
        """
        from torchport._crossings import listening
        device = simulate_accelerator()
        seen = []
        data = torch.utils.data.TensorDataset(torch.ones(8, 4), torch.zeros(8))
        loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True)
        model = torch.nn.Linear(4, 1).to(device)
        with listening(seen.append):
            for x, y in loader:
                x, y = x.to(device, non_blocking=True), y.to(device)
                loss = model(x).sum()
                value = loss.item()
            mask = model.weight > 0
            kept = model.weight[mask]
            model.weight.cpu()
        print(json.dumps([[c.kind.value, c.nbytes, c.pinned, c.non_blocking,
                           c.filename == "<string>", c.lineno] for c in seen]))
        """
    )
    kinds = [entry[0] for entry in got]
    assert kinds.count("host to device") == 4  # two batches of x and y
    assert kinds.count("sync") == 3  # two .item(), one boolean-mask index
    assert kinds.count("device to host") == 1
    h2d = [entry for entry in got if entry[0] == "host to device"]
    assert [entry[1] for entry in h2d] == [64, 16, 64, 16]
    assert all(entry[2] for entry in h2d)  # the loader pinned every batch
    assert [entry[3] for entry in h2d] == [True, False, True, False]
    assert all(entry[4] for entry in got), got  # attributed to the user's code, not torch's
    assert len({entry[5] for entry in h2d}) == 1


def test_a_pinning_loader_works_where_a_real_gpu_was_the_accelerator_first() -> None:
    # The GPU machine: CUDA is the accelerator until the simulator registers; from then on
    # PyTorch reports the simulator first (a PrivateUse1 backend wins), so a bare
    # pin_memory() asks it, and it must still pin (it once failed NotImplementedError there).
    got = run_isolated(
        """
        from torchport import hardware
        from torchport._crossings import listening
        hardware.accelerator_type = lambda: "cuda"  # what the GPU machine answers before
        device = simulate_accelerator()
        assert torch.accelerator.current_accelerator().type == device.type
        seen = []
        data = torch.utils.data.TensorDataset(torch.ones(8, 4))
        loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True)
        with listening(seen.append):
            pinned = [x.is_pinned() for (x,) in loader for _ in [x.to(device, non_blocking=True)]]
        print(json.dumps([pinned, [c.pinned for c in seen]]))
        """
    )
    assert got == [[True, True], [True, True]]


def test_torchport_moves_batches_and_loaders_onto_it_with_values() -> None:
    got = run_isolated(
        """
        import torchport as tp
        device = simulate_accelerator()
        batch = {"x": torch.arange(4.0), "nested": [torch.ones(2, 2), (torch.zeros(3),)], "n": 3}
        moved = tp.to_device(batch, device)
        loader = tp.DeviceLoader([{"x": torch.full((2,), float(i))} for i in range(3)], device)
        batches = [b["x"] for b in loader]
        print(json.dumps({
            "devices": sorted({str(t.device) for t in [moved["x"], moved["nested"][0],
                                                        moved["nested"][1][0]]}),
            "values": moved["x"].cpu().tolist(), "n": moved["n"],
            "loader": [b.cpu().tolist() for b in batches],
            "loader_devices": sorted({str(b.device) for b in batches}),
        }))
        """
    )
    assert got["devices"] == ["sim:0"]
    assert got["values"] == [0.0, 1.0, 2.0, 3.0]
    assert got["n"] == 3
    assert got["loader"] == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    assert got["loader_devices"] == ["sim:0"]


_UNARY = ["neg", "abs", "exp", "tanh", "sigmoid", "relu", "sqrt", "sin", "floor"]
_BINARY = ["add", "sub", "mul", "maximum", "minimum"]
_REDUCE = ["sum", "mean", "amax", "cumsum", "softmax"]


@st.composite
def _programs(draw: st.DrawFn) -> list[tuple[str, ...]]:
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["unary", "binary", "reduce", "matmul", "index", "view"]))
        if kind == "unary":
            steps.append(("unary", draw(st.sampled_from(_UNARY))))
        elif kind == "binary":
            steps.append(("binary", draw(st.sampled_from(_BINARY))))
        elif kind == "reduce":
            steps.append(("reduce", draw(st.sampled_from(_REDUCE))))
        else:
            steps.append((kind,))
    return steps


_EVAL = """
def evaluate(steps, device):
    torch.manual_seed(0)
    x = torch.randn(4, 4).to(device)
    other = torch.randn(4, 4).to(device)
    for step in steps:
        kind = step[0]
        if kind == "unary":
            x = getattr(torch, step[1])(x.abs() + 0.5 if step[1] == "sqrt" else x)
        elif kind == "binary":
            x = getattr(torch, step[1])(x, other)
        elif kind == "reduce":
            x = getattr(torch, step[1])(x, dim=-1, keepdim=True).expand(4, 4) \\
                if step[1] in ("sum", "mean", "amax") else getattr(torch, step[1])(x, dim=-1)
        elif kind == "matmul":
            x = x @ other
        elif kind == "index":
            x = x[torch.tensor([3, 2, 1, 0])]
            x[x > 0] = 0.25
        elif kind == "view":
            x = x.t().contiguous().view(16).view(4, 4)
            x.add_(1)
    return x.cpu().tolist()
"""


@settings(max_examples=3, deadline=None)
@given(st.lists(_programs(), min_size=8, max_size=8))
def test_generated_programs_compute_what_the_cpu_computes(
    programs: list[list[tuple[str, ...]]],
) -> None:
    got = run_isolated(
        _EVAL,
        f"""
        device = simulate_accelerator()
        programs = {programs!r}
        print(json.dumps([evaluate(p, "cpu") == evaluate(p, device) for p in programs]))
        """,
    )
    assert got == [True] * len(programs)


_CUDA_ONLY = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4).cuda(), torch.randn(16, 1).cuda()
for _ in range(5):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.6f}")
"""

_PLANTED = """
import torch, torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x):
        mask = torch.ones(x.shape[0], 2)
        return self.fc(x) * mask
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(Net().to(device)(torch.randn(3, 4).to(device)).sum().item())
"""


_CUDA_STREAMS = """
import torch
side = torch.cuda.Stream()
x = torch.ones(4).cuda(non_blocking=True)
with torch.cuda.stream(side):
    y = x * 2
torch.cuda.current_stream().wait_stream(side)
y.record_stream(torch.cuda.current_stream())
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
total = y.sum()
end.record()
torch.cuda.synchronize()
print(total.item(), start.elapsed_time(end) >= 0, y.device)
"""


def test_run_device_sim_runs_cuda_streams_and_events_in_order(tmp_path: Path) -> None:
    script = tmp_path / "streams.py"
    script.write_text(textwrap.dedent(_CUDA_STREAMS))
    done = _torchport_run("sim", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "8.0 True sim:0"


def _torchport_run(device: str, script: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", "run", "--quiet", "--device", device, str(script)],
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.slow  # whole scripts under torchport run --device sim
def test_run_device_sim_runs_a_cuda_only_script_and_stops_a_planted_cpu_tensor(
    tmp_path: Path,
) -> None:
    cuda_only = tmp_path / "cuda_only.py"
    cuda_only.write_text(textwrap.dedent(_CUDA_ONLY))
    planted = tmp_path / "planted.py"
    planted.write_text(textwrap.dedent(_PLANTED))
    on_sim, on_cpu = _torchport_run("sim", cuda_only), _torchport_run("cpu", cuda_only)
    assert on_sim.returncode == 0, on_sim.stderr
    assert on_sim.stdout == on_cpu.stdout
    assert on_sim.stdout.startswith("loss ")
    stopped = _torchport_run("sim", planted)
    assert stopped.returncode != 0
    assert f'File "{planted}", line 9, in forward' in stopped.stderr
    assert "Expected all tensors to be on the same device" in stopped.stderr
    # strict() is on under --device sim: the message names the module and each tensor's device
    assert "device mismatch: inside Net" in stopped.stderr
    assert "mask on cpu, x on sim:0" in stopped.stderr
    # The same planted tensor runs silently on the CPU: only the simulated device catches it.
    assert _torchport_run("cpu", planted).returncode == 0


def test_the_device_fixture_runs_a_users_tests_on_sim(
    tmp_path: Path, child_pytest_env: dict[str, str]
) -> None:
    (tmp_path / "test_user.py").write_text(
        textwrap.dedent(
            """
            import torch

            def test_model_on_device(device):
                model = torch.nn.Linear(2, 1).to(device)
                assert model(torch.ones(1, 2, device=device)).device == device

            def test_planted_cpu_tensor(device):
                x = torch.ones(2, device=device)
                try:
                    x + torch.ones(2)
                except RuntimeError:
                    assert device.type != "cpu"
                else:
                    assert device.type == "cpu"
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**child_pytest_env, "TORCHPORT_TEST_DEVICES": "cpu,sim"},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout


def test_a_cpu_generator_for_a_device_random_op_is_refused_as_cuda_refuses_it() -> None:
    """ATen's check_generator (ATen/core/Generator.h): the generator's device type must be
    the kernel's, with CUDA's words ("Expected a 'cuda' device type for generator but found
    'cpu'", pytorch/pytorch#62152) and the simulated device's name in place of cuda."""
    got = run_isolated(
        """
        device = simulate_accelerator()
        host = torch.Generator().manual_seed(0)
        x = torch.empty(4, device=device)
        half = torch.full((3,), 0.5, device=device)
        calls = {
            "randn": lambda: torch.randn(3, device=device, generator=host),
            "randint": lambda: torch.randint(0, 5, (3,), device=device, generator=host),
            "randperm": lambda: torch.randperm(5, device=device, generator=host),
            "normal_": lambda: x.normal_(generator=host),
            "uniform_": lambda: x.uniform_(generator=host),
            "bernoulli": lambda: torch.bernoulli(half, generator=host),
            "multinomial": lambda: torch.multinomial(half, 2, generator=host),
        }
        refused = {}
        for name, call in calls.items():
            try:
                call()
                refused[name] = None
            except RuntimeError as caught:
                refused[name] = str(caught)
        on_host = torch.randn(3, generator=host)  # the host's own random ops still take it
        no_generator = torch.randn(3, device=device)
        print(json.dumps({"refused": refused, "host": str(on_host.device),
                          "plain": str(no_generator.device)}))
        """
    )
    for name, message in got["refused"].items():
        assert message == "Expected a 'sim' device type for generator but found 'cpu'", name
    assert (got["host"], got["plain"]) == ("cpu", "sim:0")


def test_ctc_loss_takes_lengths_on_the_host_as_cuda_does() -> None:
    """CUDA's ctc_loss reads tensor lengths on the host (LossCTC.cpp: input_lengths.to(kCPU,
    kLong)) and moves host targets to log_probs' device, so every placement of targets and
    lengths beside a device log_probs runs and gives the CPU's loss and gradient."""
    got = run_isolated(
        """
        import itertools
        import torch.nn.functional as F
        device = simulate_accelerator()
        T, N, C, S = 12, 3, 6, 4
        torch.manual_seed(0)
        raw = torch.randn(T, N, C)
        targets = torch.randint(1, C, (N, S))
        input_lengths = torch.tensor([12, 10, 9])
        target_lengths = torch.tensor([4, 3, 2])
        def run(where, reduction):
            logits = (raw.to(device) if where[0] else raw.clone()).requires_grad_()
            place = lambda t, on: t.to(device) if on else t
            loss = F.ctc_loss(
                logits.log_softmax(2), place(targets, where[1]),
                place(input_lengths, where[2]), place(target_lengths, where[3]),
                reduction=reduction,
            )
            loss.sum().backward()
            return loss.detach().cpu(), logits.grad.cpu(), str(loss.device)
        results = {}
        for reduction in ("mean", "sum", "none"):
            reference = run((False, False, False, False), reduction)
            for where in itertools.product((True, False), repeat=4):
                try:
                    loss, grad, on = run(where, reduction)
                except RuntimeError as caught:
                    results[f"{reduction} {where}"] = str(caught)
                    continue
                same = torch.allclose(loss, reference[0]) and torch.allclose(grad, reference[1])
                results[f"{reduction} {where}"] = [same, on]
        try:
            lengths = input_lengths.float()
            F.ctc_loss(raw.to(device).log_softmax(2), targets, lengths, target_lengths)
            results["float lengths"] = None
        except RuntimeError as caught:
            results["float lengths"] = str(caught)
        print(json.dumps(results))
        """
    )
    assert got.pop("float lengths") == "input_lengths must be integral"
    assert len(got) == 3 * 16
    for case, result in got.items():
        assert isinstance(result, list), (case, result)
        same, on = result
        assert same, case
        log_probs_on_device = case.split("(")[1].startswith("True")
        assert on == ("sim:0" if log_probs_on_device else "cpu"), case
