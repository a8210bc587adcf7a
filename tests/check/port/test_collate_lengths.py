"""A dict batch's ``lengths`` reach ``pack_padded_sequence`` through the model's ``forward``.

The port moves a collate function's dict batch whole, less the keys the file hands to an
API that wants them on the CPU. ``pack_padded_sequence(x, batch["lengths"])`` was known;
``model(batch["ids"], batch["lengths"])`` (or ``lengths=``, or ``**batch``) with
``forward(self, ids, lengths)`` handing ``lengths`` on was not: the lengths went to the
device and the call raised "'lengths' argument should be a 1D CPU int64 tensor", with
nothing reported. The oracle runs the original on the CPU and the port on the simulated
accelerator, in this process, and compares the values.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import original_on_cpu_port_on_sim
from torchport.check.port import port_text

CALLS = {
    "positional": "model(batch['ids'], batch['lengths'])",
    "keyword": "model(batch['ids'], lengths=batch['lengths'])",
    "spread": "model(**batch)",
}
# A plain function of the file that takes the model and the lengths: the port moves the
# function's tensor parameters (`ids, lengths = ids.to(device), lengths.to(device)`).
FUNCTION = "encode(model, batch['ids'], batch['lengths'])"


def program(call: str) -> str:
    return (
        "import torch\nimport torch.nn as nn\n"
        "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence\n"
        "from torch.utils.data import DataLoader\n\n"
        "seqs = [torch.arange(1, n + 1) for n in (5, 3, 4, 2, 6, 3)]\n"
        "def collate(items):\n"
        "    lengths = torch.tensor([len(s) for s in items])\n"
        "    return {'ids': pad_sequence(items, batch_first=True), 'lengths': lengths}\n"
        "class Enc(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.emb = nn.Embedding(10, 3)\n"
        "    def forward(self, ids, lengths):\n"
        "        packed = pack_padded_sequence(self.emb(ids), lengths, batch_first=True,"
        " enforce_sorted=False)\n"
        "        return pad_packed_sequence(packed, batch_first=True)[0].sum(1)\n"
        "def encode(net, ids, lengths):\n"
        "    return pack_padded_sequence(net.emb(ids), lengths, batch_first=True,"
        " enforce_sorted=False).data.sum(0)\n"
        "torch.manual_seed(0)\n"
        "model = Enc()\n"
        "for batch in DataLoader(seqs, batch_size=3, collate_fn=collate):\n"
        f"    OUT.append({call}.detach())\n"
    )


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@settings(max_examples=len(CALLS), deadline=None)
@given(st.sampled_from(sorted(CALLS)))
def test_lengths_handed_to_the_model_stay_on_the_cpu(form: str) -> None:
    ported_runs_like_the_original(program(CALLS[form]))


def test_lengths_handed_to_a_function_of_the_file_stay_on_the_cpu() -> None:
    ported_runs_like_the_original(program(FUNCTION))


def ported_runs_like_the_original(source: str) -> None:
    ported = port_text(source)
    assert ported.source != source  # the model and the ids are moved
    got = original_on_cpu_port_on_sim(source, ported.source)
    assert got["same"] and set(got["devices"]) == {"sim:0"}, got


# Lengths made as tensors, not taken from a batch, handed to pack_padded_sequence
# directly or through a function of the file (x31c): the tensor meets the embedding's
# device output in that call, yet must stay on the CPU.
LENGTHS = {"literal": "torch.tensor([3, 2])", "name": "lens"}
HANDED = {
    "direct": "pack_padded_sequence(emb(ids), {lens}, batch_first=True, enforce_sorted=False)"
    ".data.sum(0)",
    "function": "packed(emb, ids, {lens})",
}


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@settings(max_examples=len(LENGTHS) * len(HANDED), deadline=None)
@given(st.sampled_from(sorted(LENGTHS)), st.sampled_from(sorted(HANDED)))
def test_lengths_made_as_tensors_stay_on_the_cpu(lengths: str, handed: str) -> None:
    source = (
        "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "torch.manual_seed(0)\nemb = torch.nn.Embedding(6, 3)\n"
        "ids = torch.tensor([[1, 2, 3], [4, 5, 0]])\nlens = torch.tensor([3, 2])\n"
        "def packed(net, ids, lengths):\n"
        "    return pack_padded_sequence(net(ids), lengths, batch_first=True,"
        " enforce_sorted=False).data.sum(0)\n"
        f"OUT.append({HANDED[handed].format(lens=LENGTHS[lengths])}.detach())\n"
    )
    ported_runs_like_the_original(source)
