"""``port --verify`` says host work: the classes the static report leaves silent, said by the run.

``test_silent_classes_left.py`` holds what the STATIC report still misses (strict
xfails). Here each of those classes is a whole ``port --verify`` run (the ported
program on the simulated accelerator, the child watching torch's calls): each is
reported at the user's line, and the summary never says "verified". The oracle
is the program text: the lines that compute on the CPU are marked ``# host`` by
hand (written apart from the watch). A program that is placed but does its
bookkeeping on the host (metrics on ``.cpu()`` results, data prep in a
``Dataset`` and a ``collate_fn``, ``.item()``, ``.numpy()``, lengths) is verified.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchport.check.port._verify import verify_entry
from torchport.cli._main import main

# Whole programs, each run twice on the simulated accelerator in a child (~10 s apiece): with
# the slow tests (`-m slow`, run by .ci/run); tests/cli/test_host_watch.py holds the watch's
# rule in the default run.
pytestmark = pytest.mark.slow

_RAW_PARAMETER = """\
import torch

start = torch.tensor([0.5, 0.25]).float()
for name in ["SGD", "Adam"]:
    x = start.clone().requires_grad_()
    opt = getattr(torch.optim, name)([x], lr=0.1)
    for _ in range(3):
        loss = (x * x).sum()  # host
        opt.zero_grad()
        loss.backward()  # host
        opt.step()  # host
    print(x.detach().tolist())
"""

# A model the program itself puts on the CPU, its inputs made there: said, as maybe deliberate.
_CHOSEN_CPU = """\
import torch
from torch import nn

if __name__ == "__main__":
    model = nn.Sequential(nn.Linear(1, 4), nn.ReLU(), nn.Linear(4, 1)).cpu()
    x = torch.linspace(0, 1, 8).unsqueeze(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        loss = ((model(x) - x) ** 2).mean()  # host
        opt.zero_grad()
        loss.backward()  # host
        opt.step()  # host
    print(loss.item())
"""

# Placed, with the host bookkeeping a correct program does: never a host-work finding.
_PLACED_WITH_HOST_BOOKKEEPING = """\
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

device = torch.accelerator.current_accelerator() or torch.device("cpu")


class Rows(Dataset):
    def __init__(self):
        raw = torch.randn(32, 6)
        self.x = (raw - raw.mean(0)) / raw.std(0)  # data prep on the host
        self.w = torch.randn(6, 4)
        self.y = (self.x.sum(1) > 0).long()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i] @ self.w, self.y[i]  # a projection in the dataset (loading)


def collate(items):
    xs, ys = zip(*items)
    lengths = torch.tensor([len(items)] * len(items))
    return torch.stack(xs), torch.stack(ys), lengths


model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
loader = DataLoader(Rows(), batch_size=8, collate_fn=collate)
seen, correct, losses, probs = 0, 0, [], []
for xb, yb, lengths in loader:
    xb, yb = xb.to(device), yb.to(device)
    out = model(xb)
    loss = nn.functional.cross_entropy(out, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
    pred = out.detach().cpu()
    correct += int((pred.argmax(1) == yb.cpu()).sum())
    seen += int(lengths[0])
    probs.append(out.softmax(1).cpu())  # still requires grad: a metric, not training
confusion = torch.bincount(torch.cat([p.argmax(1) for p in probs]) * 2, minlength=4)
print(seen, correct, np.mean(losses), confusion.numpy().tolist(), torch.tensor(losses).max().item())
"""


# Put on the CPU to save, then back on the device: nothing left there, no finding, no refusal
# (a mark kept with a weakref made the simulator's module move refuse the swap).
_THERE_AND_BACK = """\
import torch
from torch import nn

device = torch.accelerator.current_accelerator() or torch.device("cpu")
model = nn.Linear(4, 2).to(device)
model.cpu()
torch.save(model.state_dict(), "weights.pt")
model.to(device)
loss = model(torch.ones(3, 4, device=device)).sum()
loss.backward()
print(loss.item())
"""


def _host_lines(text: str) -> set[int]:
    return {i for i, line in enumerate(text.splitlines(), 1) if line.endswith("# host")}


@pytest.mark.needs_simulator  # runs the script on sim:0: needs torch 2.7+
def test_a_raw_parameter_trained_on_the_cpu_is_said_by_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """h31's optimiser visualisation: the whole optimisation on the CPU. The run says it of
    the program as written (the static port once left it: "nothing to port"); the port now
    places it, and the run of the port verifies."""
    script = tmp_path / "opt.py"
    script.write_text(_RAW_PARAMETER)
    result = verify_entry([str(script)], [], timeout=240)
    assert result.status == "verified" and not result.verified, result.summary()
    assert {w.line for w in result.host_work} == _host_lines(_RAW_PARAMETER), result.summary()
    summary = result.summary()
    assert "opt.py:10: verify: host work: `Tensor.backward`" in summary
    assert "(6 calls)" in summary  # two optimisers, three steps each
    assert "move its inputs to the device" in summary and "may be deliberate" not in summary
    assert main(["port", "--no-progress", str(script), "--verify"]) == 0
    assert "Verified on the simulated accelerator" in capsys.readouterr().out


@pytest.mark.needs_simulator  # runs the script on sim:0: needs torch 2.7+
def test_a_model_the_program_puts_on_the_cpu_is_said_as_maybe_deliberate(tmp_path: Path) -> None:
    """Not ported: the run alone sees a deliberate CPU choice and says it may be one."""
    script = tmp_path / "chosen.py"
    script.write_text(_CHOSEN_CPU)
    result = verify_entry([str(script)], [], timeout=240)
    assert result.status == "verified" and not result.verified, result.summary()
    assert {w.line for w in result.host_work} == _host_lines(_CHOSEN_CPU), result.summary()
    assert all(w.chosen for w in result.host_work), result.summary()
    # on the CPU seen as CUDA too: the program's choice, not a CUDA test's
    assert not any(w.cuda_test for w in result.host_work), result.summary()
    assert "it may be deliberate" in result.summary()
    assert "only where CUDA is missing" not in result.summary()
    assert "Verified on" not in result.summary()


@pytest.mark.needs_simulator  # runs the script on sim:0: needs torch 2.7+
def test_a_weight_set_to_a_cpu_tensor_after_placement_is_said_by_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """h31's tiket Conv2d.py: the weight goes back to the CPU after the layer was placed."""
    script = tmp_path / "conv.py"
    script.write_text(
        "import torch\n\nx = torch.ones(1, 1, 5, 5)\n"
        "conv = torch.nn.Conv2d(1, 1, kernel_size=3, bias=False)\n"
        "conv.weight.data = torch.arange(9.0).view(1, 1, 3, 3)\n"
        "print(conv(x).sum().item())\n"
    )
    lines = script.read_text().splitlines()
    data = next(i for i, t in enumerate(lines, 1) if "weight.data" in t)
    forward = next(i for i, t in enumerate(lines, 1) if "conv(x)" in t)
    # The program as written, placed by hand the way the static port once left it: the layer
    # on the device, the new weight made on the host. sim refuses the CPU `.data` of a
    # placed weight (CUDA takes it, then runs the convolution on the CPU).
    placed = tmp_path / "placed.py"
    placed.write_text(
        script.read_text()
        .replace("torch.ones(1, 1, 5, 5)", "torch.ones(1, 1, 5, 5).to('cuda')")
        .replace("bias=False)", "bias=False).to('cuda')")
    )
    result = verify_entry([str(placed)], [], timeout=240)
    assert not result.verified, result.summary()
    said = {w.line for w in result.host_work} | ({result.line} if result.line else set())
    assert said and said <= {data, forward}, result.summary()
    # The port now moves the new weight where it is made: the run of the port verifies.
    assert main(["port", "--no-progress", str(script), "--verify"]) == 0
    assert "Verified on the simulated accelerator" in capsys.readouterr().out


@pytest.mark.needs_simulator  # runs the script on sim:0: needs torch 2.7+
def test_a_placed_program_with_host_bookkeeping_is_verified(tmp_path: Path) -> None:
    """Metrics, data prep, a dataset's projection, collate and lengths: no false alarm."""
    script = tmp_path / "train.py"
    script.write_text(_PLACED_WITH_HOST_BOOKKEEPING)
    result = verify_entry([str(script)], [], timeout=240)
    assert result.host_work == (), result.summary()
    assert result.verified, result.summary()


def _findings(out: str, name: str) -> list[str]:
    return re.findall(rf"{re.escape(name)}:(\d+): verify: host work", out)


@pytest.mark.needs_simulator  # runs the script on sim:0: needs torch 2.7+
def test_a_model_moved_to_the_cpu_and_back_is_verified(tmp_path: Path) -> None:
    script = tmp_path / "back.py"
    script.write_text(_THERE_AND_BACK)
    result = verify_entry([str(script)], [], timeout=240)
    assert result.verified, result.summary()


# The program's own CUDA-or-CPU choice (h31n's ins and ash 08): on a CUDA machine on the
# device, where CUDA is missing (MPS, XPU) on the CPU. The port keeps it and reports it.
_CUDA_OR_CPU = """\
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(1, 4), nn.ReLU(), nn.Linear(4, 1)).to(device)
x = torch.linspace(0, 1, 8, device=device).unsqueeze(1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = ((model(x) - x) ** 2).mean()  # host
    opt.zero_grad()
    loss.backward()  # host
    opt.step()  # host
print(loss.item())
"""


@pytest.mark.needs_simulator  # runs the script on sim:0: needs torch 2.7+
def test_host_work_of_a_kept_cuda_or_cpu_choice_names_the_choice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Host work seen only where CUDA is missing is the program's CUDA test's doing: the run
    says so (not "it may be deliberate"), and the port's summary names the choice's line."""
    script = tmp_path / "choice.py"
    script.write_text(_CUDA_OR_CPU)
    result = verify_entry([str(script)], [], timeout=240)
    assert result.status == "verified" and not result.verified, result.summary()
    assert {w.line for w in result.host_work} == _host_lines(_CUDA_OR_CPU), result.summary()
    assert all(w.cuda_test for w in result.host_work), result.summary()
    assert main(["port", "--no-progress", str(script), "--verify"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"choice\.py:4:\d+: TP109", out), out  # kept, and reported by the port
    assert f"CUDA-or-CPU choice at {script}:4" in out or "CUDA-or-CPU choice at choice.py:4" in out
    assert "only where CUDA is missing" in out and "may be deliberate" not in out
