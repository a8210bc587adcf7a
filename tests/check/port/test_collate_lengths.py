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
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import original_on_cpu_port_on_sim, ports_on_sim_or_stops
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


# Lengths whose packed sequence goes on into a recurrent model, made in each way a program
# makes them (x31d): the port moves the ids and the model, and the lengths stay on the CPU,
# or are brought there (TP511) where they are computed from the moved ids: `.cpu()` of a
# tensor, `torch.as_tensor(lengths, device="cpu")` where a list reaches the same call from
# another caller, or in a module's `forward` (its inputs go to the device with it; b26's c1a).
# The oracle: the original on the CPU, the port on `sim`.
MADE = {  # how the lengths are made: (expression, computed from the ids)
    "tensor": ("torch.tensor([3, 2])", False),
    "long tensor": ("torch.LongTensor([3, 2])", False),
    "list": ("[3, 2]", False),
    "from the ids": ("(ids != 0).sum(1)", True),
    "from the ids, on the host": ("(ids != 0).sum(1).cpu()", False),
}
PACKS = {  # where pack_padded_sequence gets them: the recurrent model's (output, state)
    "direct": "rnn(pack_padded_sequence(emb(ids), {lens}, batch_first=True, enforce_sorted=False))",
    "keyword": "rnn(pack_padded_sequence(emb(ids), lengths={lens}, batch_first=True))",
    "attribute": "rnn(torch.nn.utils.rnn.pack_padded_sequence(emb(ids), {lens}, batch_first=True))",
    "function": "rnn(packed(emb, ids, {lens}))",
    "module": "enc(ids, {lens})",
}
_ENC = (
    "class Enc(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.emb, self.rnn = emb, torch.nn.GRU(3, 4, batch_first=True)\n"
    "    def forward(self, ids, lengths):\n"
    "        return self.rnn(pack_padded_sequence(self.emb(ids), lengths, batch_first=True,"
    " enforce_sorted=False))\n"
    "enc = Enc()\n"
)


def _recurrent(made: str, packs: str, in_main: bool, list_too: bool) -> str:
    call = PACKS[packs].format(lens="lens")
    body = [
        f"lens = {MADE[made][0]}",
        f"out, _ = {call}",
        "OUT.append(out.data.sum(0).detach())",
    ]
    if list_too:  # another caller of the same function hands a list
        body += ["out, _ = rnn(packed(emb, ids, [3, 2]))", "OUT.append(out.data.sum(0).detach())"]
    head = (
        "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "torch.manual_seed(0)\nemb = torch.nn.Embedding(6, 3)\n"
        "rnn = torch.nn.GRU(3, 4, batch_first=True)\n"
    )
    if packs == "function":  # (defined only where called: one called nowhere is TP520's)
        head += (
            "def packed(net, ids, lengths):\n"
            "    return pack_padded_sequence(net(ids), lengths, batch_first=True,"
            " enforce_sorted=False)\n"
        )
    if packs == "module":
        head += _ENC
    if in_main:
        lines = ["def main():", "    ids = torch.tensor([[1, 2, 3], [4, 5, 0]])"]
        return head + "\n".join([*lines, *("    " + b for b in body), "main()"]) + "\n"
    return head + "\n".join(["ids = torch.tensor([[1, 2, 3], [4, 5, 0]])", *body]) + "\n"


# (no shrinking: each example is a child's run, ~10 s; a failure prints its whole table)
@settings(max_examples=2, deadline=None, phases=(Phase.explicit, Phase.generate))
@example(  # b26's c1d: called through `nn.utils.rnn`, the CPU lengths were moved (and copied back)
    [("tensor", "attribute", False, False), ("from the ids", "attribute", True, False)]
)
@example(  # b26's c1a and c1g (a module's forward), and a list beside device lengths
    [
        ("from the ids", "module", False, False),
        ("tensor", "module", True, False),
        ("from the ids", "function", False, True),
        ("list", "module", False, False),
    ]
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(MADE)),
            st.sampled_from(sorted(PACKS)),
            st.booleans(),
            st.booleans(),
        ),
        min_size=4,
        max_size=8,
    )
)
def test_lengths_of_a_sequence_the_model_reads_stay_on_the_cpu(
    cases: list[tuple[str, str, bool, bool]],
) -> None:
    cases = [(m, p, main, list_too and p == "function") for m, p, main, list_too in cases]
    sources = [_recurrent(*case) for case in cases]
    ports = [port_text(source) for source in sources]
    runs = ports_on_sim_or_stops([(s, p.source) for s, p in zip(sources, ports, strict=True)])
    for case, ported, run in zip(cases, ports, runs, strict=True):
        made, packs = case[0], case[1]
        on_device = MADE[made][1]  # computed from the ids the port moves
        left = [f.code for f in ported.remaining]
        assert port_text(ported.source).source == ported.source, case  # idempotent
        assert left == [], (case, ported.remaining)
        # brought to the CPU where they may be on the device: computed from the ids, or a
        # module's `forward` parameter (its inputs go with it)
        assert ported.fixed["TP511"] == int(on_device or packs == "module"), (case, ported)
        assert run.get("same") and set(run["devices"]) == {"sim:0"}, (case, run, ported.source)
