"""``pack_padded_sequence`` called through a name bound to it: its lengths stay on the CPU.

``pack = nn.utils.rnn.pack_padded_sequence`` (or ``functools.partial`` of it, or ``R =
nn.utils.rnn`` then ``R.pack_padded_sequence``), then ``pack(emb(ids), lengths)``: TP511
and the port's flow knew the call by its torch name only, so lengths made from the moved
ids reached it on the device ("0 left"; the port stopped: "'lengths' argument should be a
1D CPU int64 tensor"). The invariant: a call is the API's wherever its callee is a name
bound once (module level or in the function) to the API, to a dotted name reaching it, or
to a ``functools.partial`` of either (``Resolver.called``; the engine dispatches the call
by the alias's last part), and the partial's own arguments count before the call's.

Programs are generated: how the name is bound (eight forms), where (module level or in the
function), how the lengths are given (by position or keyword, made from the ids or handed
in), and who calls (a module's ``forward`` or a plain function). The oracle
(``no_cuda_sim``) runs the original on the CPU and the port on the simulated accelerator:
the same values on ``sim:0``, or a finding left. The port is idempotent.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said
from torchport.check.port import port_text

pytest.importorskip("torch")

# how the name is bound: (import lines, binding line, the callee as called, its fixed keywords)
_BOUND = {
    "dotted": ("", "pack = nn.utils.rnn.pack_padded_sequence", "pack", ()),
    "torch dotted": ("", "pack = torch.nn.utils.rnn.pack_padded_sequence", "pack", ()),
    "an import renamed": (
        "from torch.nn.utils.rnn import pack_padded_sequence as pps",
        "pack = pps",
        "pack",
        (),
    ),
    "a module bound": ("", "R = nn.utils.rnn", "R.pack_padded_sequence", ()),
    "a submodule imported": (
        "from torch.nn.utils import rnn",
        "R = rnn",
        "R.pack_padded_sequence",
        (),
    ),
    "a partial": (
        "import functools",
        "pack = functools.partial(nn.utils.rnn.pack_padded_sequence, batch_first=True)",
        "pack",
        ("batch_first",),
    ),
    "partial imported": (
        "from functools import partial",
        "pack = partial(torch.nn.utils.rnn.pack_padded_sequence, enforce_sorted=False)",
        "pack",
        ("enforce_sorted",),
    ),
    "a partial of a bound module": (
        "import functools\nR = nn.utils.rnn",
        "pack = functools.partial(R.pack_padded_sequence, batch_first=True, enforce_sorted=False)",
        "pack",
        ("batch_first", "enforce_sorted"),
    ),
}


def _program(bound: str, *, local: bool, keyword: bool, handed: bool, method: bool) -> str:
    imports, binding, callee, fixed = _BOUND[bound]
    rest = [f"{k}={v}" for k, v in (("batch_first", True), ("enforce_sorted", False))]
    rest = [r for r in rest if r.split("=")[0] not in fixed]
    lengths = "lengths=lengths" if keyword else "lengths"
    call = f"{callee}(emb(ids), {', '.join([lengths, *rest])})"
    body = [] if handed else ["lengths = ids.ne(0).sum(-1)"]
    body += [f"out, h = gru({call})", "return h[-1]"]
    if local:
        body.insert(0, binding)
    params = "ids, lengths" if handed else "ids"
    head = ["import torch", "import torch.nn as nn", *([imports] if imports else [])]
    if not local:
        head.append(binding)
    lines = [*head, ""]
    if method:
        lines += [
            "class Encoder(nn.Module):",
            "    def __init__(self):",
            "        super().__init__()",
            "        self.emb = nn.Embedding(10, 4)",
            "        self.rnn = nn.GRU(4, 3, batch_first=True)",
            "",
            f"    def forward(self, {params}):",
            "        emb, gru = self.emb, self.rnn",
            *("        " + b for b in body),
            "",
            "torch.manual_seed(0)",
            "model = Encoder()",
        ]
        caller = "model"
    else:
        lines += [
            f"def encode(emb, gru, {params}):",
            *("    " + b for b in body),
            "",
            "torch.manual_seed(0)",
            "emb = nn.Embedding(10, 4)",
            "gru = nn.GRU(4, 3, batch_first=True)",
        ]
        caller = "encode"
    lines.append("ids = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0], [6, 7, 8, 9]])")
    given = "ids, ids.ne(0).sum(-1)" if handed else "ids"
    if method:
        lines.append(f"OUT.append({caller}({given}))")
    else:
        lines.append(f"OUT.append({caller}(emb, gru, {given}))")
    return "\n".join(lines) + "\n"


_CASE = st.tuples(st.sampled_from(sorted(_BOUND)), *[st.booleans()] * 4)


# (each example is one simulated-accelerator child: a few, in the default run's budget)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_CASE, min_size=4, max_size=4))
@example(cases=[(b, False, False, False, True) for b in _BOUND])
@example(cases=[(b, True, True, True, False) for b in _BOUND])
def test_packed_lengths_through_a_bound_name_stay_on_the_cpu_or_are_said(
    cases: list[tuple[str, bool, bool, bool, bool]],
) -> None:
    sources = [
        _program(b, local=local, keyword=kw, handed=handed, method=method)
        for b, local, kw, handed, method in cases
    ]
    placed_or_said(sources)


def test_a_name_bound_twice_is_not_followed() -> None:
    """Soundness: ``pack`` bound to the API and to another function is no alias of either;
    the port does not rewrite what it is given as the API's lengths."""
    source = _program("dotted", local=False, keyword=False, handed=False, method=False)
    source = source.replace(
        "\n\ndef encode", "\nif __name__ == 'x':\n    pack = print\n\ndef encode"
    )
    port = port_text(source)
    assert 'torch.as_tensor(lengths, device="cpu")' not in port.source
    assert ".cpu()" not in port.source
