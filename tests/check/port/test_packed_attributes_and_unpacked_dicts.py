"""``pack_padded_sequence`` kept on an attribute, and lengths handed in a dict unpacked: on the CPU.

p31n followed the API through a name bound to it (``Resolver.called``); two ways on were
still silent, the port moving the lengths to the device and the program stopping at the
call ("'lengths' argument should be a 1D CPU int64 tensor"; issue 31):

* the API kept on an attribute: ``self.pack = nn.utils.rnn.pack_padded_sequence`` in
  ``__init__`` (or a partial of it), a class body's ``pack = staticmethod(...)`` (or a
  partial), then ``self.pack(emb, lengths)`` in ``forward``;
* the lengths handed in a dict unpacked into keywords, ``encode(emb, gru, **d)`` with
  ``d = {"ids": ids, "lengths": ...}`` (a literal, ``dict(...)``, a copy, inline).

The invariant: such a call is the API's where the file binds the attribute once, in the
class of the method reading ``self.X`` (``Resolver.called``; any other binding of an
attribute of that name anywhere: not followed), and a dict literal unpacked into a call of
the file's own function hands each item to the parameter of its key (``_call_flow``);
TP511's CPU lengths are then seen there as at a plain call. Oracle (``no_cuda_sim``): the
original on the CPU, the port on the simulated accelerator: the same values on ``sim:0``,
or a finding left. Idempotent.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said
from torchport.check.port import port_text

pytest.importorskip("torch")

_API = "nn.utils.rnn.pack_padded_sequence"
KEPT = {  # (imports, a line of `__init__` or None, a line of the class body or None, fixed)
    "in __init__": ("", f"self.pack = {_API}", None, ()),
    "an import, in __init__": (
        "from torch.nn.utils.rnn import pack_padded_sequence as pps",
        "self.pack = pps",
        None,
        (),
    ),
    "a partial, in __init__": (
        "import functools",
        f"self.pack = functools.partial({_API}, batch_first=True)",
        None,
        ("batch_first",),
    ),
    "a staticmethod, in the class": ("", None, f"pack = staticmethod({_API})", ()),
    "a partial, in the class": (
        "from functools import partial",
        None,
        f"pack = partial({_API}, enforce_sorted=False)",
        ("enforce_sorted",),
    ),
}


def _rest(fixed: tuple[str, ...]) -> str:
    pairs = (("batch_first", "True"), ("enforce_sorted", "False"))
    return ", ".join(f"{k}={v}" for k, v in pairs if k not in fixed)


def _kept_program(kept: str, *, handed: bool, keyword: bool) -> str:
    imports, init, body, fixed = KEPT[kept]
    lengths = "lengths=lengths" if keyword else "lengths"
    params = "ids, lengths" if handed else "ids"
    lines = ["import torch", "import torch.nn as nn", *([imports] if imports else []), ""]
    lines += ["class Encoder(nn.Module):", *([f"    {body}", ""] if body else [])]
    lines += ["    def __init__(self):", "        super().__init__()"]
    lines += ["        self.emb = nn.Embedding(10, 4)"]
    lines += ["        self.rnn = nn.GRU(4, 3, batch_first=True)"]
    lines += [f"        {init}"] if init else []
    lines += ["", f"    def forward(self, {params}):"]
    lines += [] if handed else ["        lengths = ids.ne(0).sum(-1)"]
    lines += [
        f"        out, h = self.rnn(self.pack(self.emb(ids), {lengths}, {_rest(fixed)}))",
        "        return h[-1]",
        "",
        "torch.manual_seed(0)",
        "model = Encoder()",
        "ids = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0], [6, 7, 8, 9]])",
        f"OUT.append(model({'ids, ids.ne(0).sum(-1)' if handed else 'ids'}))",
    ]
    return "\n".join(lines) + "\n"


UNPACKED = {  # (statements before the call, the call's arguments after `emb, gru`)
    "a literal": (['d = {"ids": ids, "lengths": ids.ne(0).sum(-1)}'], "**d"),
    "dict()": (["d = dict(ids=ids, lengths=ids.ne(0).sum(-1))"], "**d"),
    "a copy": (['d = {"ids": ids}', 'e = {**d, "lengths": ids.ne(0).sum(-1)}'], "**e"),
    "inline": ([], '**{"ids": ids, "lengths": ids.ne(0).sum(-1)}'),
    "beside a keyword": (['d = {"lengths": ids.ne(0).sum(-1)}'], "ids=ids, **d"),
    "stored by key": (['d = {"ids": ids}', 'd["lengths"] = ids.ne(0).sum(-1)'], "**d"),
}


def _unpacked_program(form: str, *, in_main: bool) -> str:
    before, given = UNPACKED[form]
    body = [
        "ids = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0], [6, 7, 8, 9]])",
        *before,
        f"OUT.append(encode(emb, gru, {given}))",
    ]
    lines = [
        "import torch",
        "import torch.nn as nn",
        "",
        "def encode(emb, gru, ids, lengths):",
        f"    out, h = gru({_API}(emb(ids), lengths, batch_first=True, enforce_sorted=False))",
        "    return h[-1]",
        "",
        "torch.manual_seed(0)",
        "emb = nn.Embedding(10, 4)",
        "gru = nn.GRU(4, 3, batch_first=True)",
    ]
    if in_main:
        lines += ["def main():", *("    " + b for b in body), "", "main()"]
    else:
        lines += body
    return "\n".join(lines) + "\n"


_KEPT = st.tuples(st.sampled_from(sorted(KEPT)), st.booleans(), st.booleans())
_UNPACKED = st.tuples(st.sampled_from(sorted(UNPACKED)), st.booleans())


# (each example is one simulated-accelerator child: a few, in the default run's budget)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kept=st.lists(_KEPT, min_size=3, max_size=3), unpacked=st.lists(_UNPACKED, max_size=3))
@example(kept=[(k, False, False) for k in KEPT], unpacked=[(u, False) for u in UNPACKED])
@example(kept=[(k, True, True) for k in KEPT], unpacked=[(u, True) for u in UNPACKED])
def test_packed_lengths_through_an_attribute_or_a_dict_stay_on_the_cpu_or_are_said(
    kept: list[tuple[str, bool, bool]], unpacked: list[tuple[str, bool]]
) -> None:
    sources = [_kept_program(k, handed=h, keyword=kw) for k, h, kw in kept]
    sources += [_unpacked_program(u, in_main=m) for u, m in unpacked]
    placed_or_said(sources)
    for source in sources:  # said: at the call that wants the lengths on the CPU
        port = port_text(source, "p.py")
        lines = port.source.splitlines()
        packs = {i + 1 for i, line in enumerate(lines) if "pack" in line and "lengths" in line}
        assert not port.remaining or any(f.line in packs for f in port.remaining), (
            port.source,
            port.remaining,
        )


def test_an_attribute_bound_twice_is_not_followed() -> None:
    """Soundness: ``self.pack`` bound to the API in ``__init__`` and to another function in
    another method is no alias of either: what it is given is not rewritten as lengths."""
    source = _kept_program("in __init__", handed=False, keyword=False)
    source = source.replace(
        "\n    def forward", "\n    def reset(self):\n        self.pack = print\n\n    def forward"
    )
    port = port_text(source)
    assert 'device="cpu"' not in port.source and ".cpu()" not in port.source, port.source


def test_an_attribute_of_that_name_bound_elsewhere_is_not_followed() -> None:
    """Soundness: another object's ``pack`` set anywhere in the file (``other.pack = f``)
    may be this one's: not followed."""
    source = _kept_program("in __init__", handed=False, keyword=False)
    source = source.replace("torch.manual_seed(0)\n", "torch.manual_seed(0)\nEncoder.pack = 1\n")
    port = port_text(source)
    assert 'device="cpu"' not in port.source and ".cpu()" not in port.source, port.source
