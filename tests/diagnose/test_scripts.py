"""The audit against a hand count, on three training scripts written the way real ones are.

The scripts (``tests/diagnose/scripts/``) follow pytorch/examples' mnist (a map-style
dataset with transforms), a streaming ``IterableDataset`` fed through
``torchport.DeviceLoader``, and HuggingFace's ``run_clm_no_trainer.py`` (tokenized
batches, a collator, tied embeddings). Each runs on the CPU inside ``tp.audit()``; the
expected numbers below were counted by hand from the scripts' sizes, with the
derivation beside each, and describe the run on an accelerator: copies the program
makes there, points where the host waits there, and, apart, the host work its data
loading does on every machine. A line is named by the ``# audit: NAME`` comment it
ends with.
"""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

import torchport as tp
from torchport.diagnose import AuditEntry

SCRIPTS = Path(__file__).parent / "scripts"


def _markers(path: Path) -> dict[int, str]:
    """Line number -> NAME for every line ending in ``# audit: NAME``."""
    found = {}
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        match = re.search(r"# audit: (\w+)$", text)
        if match:
            found[number] = match.group(1)
    return found


def _run(name: str, monkeypatch: pytest.MonkeyPatch, *args: str) -> tp.AuditReport:
    # the CPU run on every machine: pick_device() picks the CPU here as on a machine
    # without an accelerator (on one with a GPU it would pick it, and copy for real)
    monkeypatch.setenv("TORCHPORT_DEVICE", "cpu")
    monkeypatch.setattr(sys, "argv", [name, *args])
    with tp.audit() as report:
        runpy.run_path(str(SCRIPTS / name), run_name="__main__")
    return report


def _counts(entries: list[AuditEntry], path: Path) -> dict[tuple[str, str, bool], int]:
    """(line NAME, kind, would_sync) -> count; an entry on an unmarked line is named by its
    number, so an unexpected one shows up in the comparison."""
    marks = _markers(path)
    counted: dict[tuple[str, str, bool], int] = {}
    for e in entries:
        name = marks.get(e.line, f"{Path(e.file).name}:{e.line}")
        key = (name, e.kind, e.would_sync)
        counted[key] = counted.get(key, 0) + e.count
    return counted


def test_mnist_style_map_dataset_with_transforms(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _run("mnist_style.py", monkeypatch)
    path = SCRIPTS / "mnist_style.py"
    # Sizes: 64 training and 32 test examples, batches of 16, 2 epochs, a log line
    # every 2nd batch. Train batches: 64 / 16 = 4 per epoch, 8 in all; test: 2, 4 in all.
    assert _counts(report.entries, path) == {
        # Net: conv1, conv2, fc1, fc2, each a weight and a bias: 8 tensors copied once
        ("model_to", "transfer", True): 8,
        # data and target of each batch: 2 x 8 training batches
        ("train_to", "transfer", True): 16,
        # batch_idx 0 and 2 of each epoch log loss.item(): 2 x 2
        ("log_loss", "sync", True): 4,
        # 2 x 4 test batches
        ("test_to", "transfer", True): 8,
        # one .item() each per test batch: 4 and 4
        ("test_loss", "sync", True): 4,
        ("correct", "sync", True): 4,
    }
    # Data loading: every example fetched (64 + 32 per epoch, 2 epochs: 192) reads its
    # target with int(), its image with .numpy(), and Normalize builds mean and std with
    # torch.as_tensor(..., device=tensor.device): 4 host events per example, none of them
    # device work (the sampler's own permutation is torch's host bookkeeping: left out).
    assert _counts(report.data_loading, path) == {
        ("target", "sync", False): 192,
        ("numpy", "sync", False): 192,
        ("mean", "transfer", False): 192,
        ("std", "transfer", False): 192,
    }
    assert report.total_bytes == 0 and report.dropped == 0
    # 8 training batches of 16 float 1x12x12 images (9,216 B) and 16 int64 targets (128 B)
    assert sum(e.bytes for e in report.entries if e.line in _lines(path, "train_to")) == 8 * (
        16 * 144 * 4 + 16 * 8
    )
    capsys.readouterr()


def _lines(path: Path, name: str) -> set[int]:
    return {line for line, mark in _markers(path).items() if mark == name}


# Python 3.12+ warns that forking a multi-threaded process may deadlock; DataLoader does it
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_mnist_style_with_worker_processes_counts_no_worker_work(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _run("mnist_style.py", monkeypatch, "--workers", "2")
    path = SCRIPTS / "mnist_style.py"
    # The same training loop as above; the examples are fetched in two worker processes,
    # whose work the audit of this process neither sees nor counts.
    assert _counts(report.entries, path) == {
        ("model_to", "transfer", True): 8,
        ("train_to", "transfer", True): 16,
        ("log_loss", "sync", True): 4,
        ("test_to", "transfer", True): 8,
        ("test_loss", "sync", True): 4,
        ("correct", "sync", True): 4,
    }
    assert report.data_loading == []
    capsys.readouterr()


def test_stream_style_iterable_dataset_fed_by_device_loader(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _run("stream_style.py", monkeypatch)
    path = SCRIPTS / "stream_style.py"
    # 48 examples in batches of 8: 6 batches per pass; 2 training passes and 1 for
    # predictions. Each batch is a dict of 2 tensors (features, label).
    assert _counts(report.entries, path) == {
        # Linear(10, 16) and Linear(16, 1): 2 weights and 2 biases
        ("model_to", "transfer", True): 4,
        # DeviceLoader hands each batch over: 2 tensors x 6 batches x 2 epochs
        ("train_feed", "transfer", True): 24,
        ("predict_feed", "transfer", True): 12,
        # loss.item() once per training batch: 12; the progress line formats floats only
        ("loss_item", "sync", True): 12,
        # probs.squeeze(1).cpu().numpy(): one device-to-host copy per batch, no sync
        ("to_numpy", "transfer", True): 6,
    }
    # every example of every pass computes its label with float(tensor): 48 x 3
    assert _counts(report.data_loading, path) == {("label", "sync", False): 144}
    capsys.readouterr()


def test_hf_style_tokenized_batches_with_tied_embeddings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _run("hf_style.py", monkeypatch)
    path = SCRIPTS / "hf_style.py"
    # 4 sentences; training repeats them 4 times (16 examples, batches of 4: 4 batches
    # per epoch), evaluation once (1 batch per epoch); 2 epochs: 8 + 2 = 10 batches.
    assert _counts(report.entries, path) == {
        # embed (tied with lm_head: one tensor), mix weight and bias, norm weight and bias
        ("model_to", "transfer", True): 5,
        # BatchEncoding.to: input_ids, attention_mask, labels of 10 batches
        ("batch_to", "transfer", True): 30,
        # an optimizer step every 2 batches (2 per epoch, 4 in all); every 2nd one logs
        # the loss through an f-string: steps 2 and 4
        ("log", "sync", True): 2,
        # two boolean-mask selections per evaluation batch, 2 batches
        ("masked", "shape sync", True): 4,
        # math.exp(tensor) and int(tensor) read once per epoch
        ("perplexity", "sync", True): 2,
        ("correct", "sync", True): 2,
    }
    # the collator masks the labels of each of the 10 batches with a Python number: ATen
    # runs that as masked_fill_ (no nonzero, no wait), on the host as on a device
    assert _counts(report.data_loading, path) == {}
    capsys.readouterr()


def test_the_quickstart_counts_the_batches_its_device_loader_hands_over(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    quickstart = Path(__file__).parents[2] / "examples" / "quickstart.py"
    monkeypatch.setenv("TORCHPORT_DEVICE", "cpu")  # the CPU run on every machine (see _run)
    monkeypatch.setattr(sys, "argv", [str(quickstart)])
    with tp.audit() as report:
        runpy.run_path(str(quickstart), run_name="__main__")
    capsys.readouterr()
    # 4096 examples in batches of 128: 32 batches per epoch, 5 epochs, 2 tensors each
    counted = {(e.op, e.kind): e.count for e in report.entries}
    assert counted == {
        ("torchport.DeviceLoader", "transfer"): 32 * 5 * 2,
        # Linear(32, 64) and Linear(64, 1): 2 weights and 2 biases
        ("Tensor.to", "transfer"): 4,
        # the epoch's mean loss read once per epoch
        ("Tensor.item", "sync"): 5,
    }
    # x: 128 x 32 floats, y: 128 x 1 floats, per batch
    loader_bytes = sum(e.bytes for e in report.entries if e.op == "torchport.DeviceLoader")
    assert loader_bytes == 32 * 5 * (128 * 32 * 4 + 128 * 4)
