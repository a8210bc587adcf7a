"""A device choice that falls back to the CPU by unpacking: read as the CPU, like a plain one.

``else: device, n = "cpu", 0`` (a pair, a list, either position, a helper's ``return "cpu",
0``, the nested conditional ``("cuda", 1) if ... else ("cpu", 0)``) was not read as the CPU:
a chain testing CUDA and MPS or XPU only, or ``if not torch.cuda.is_available():`` with no
``else``, was silent (TP120), and the program ran on the CPU wherever the accelerator it left
out is there (issue 31, k31ah's strict xfail). The invariant (``rules/_partial_chains``'s
``sets_the_cpu``, the one reading of "binds the CPU" both TP120 forms ask): the CPU bound to a
name of its own, by a plain binding or one item of an unpacked tuple, is the CPU. Branch k31ak
added the nested (``(device, n), m = ("cpu", 0), 0``) and starred (``device, *rest = "cpu", 0,
0``) unpackings and ``torch.device(type="cpu")``, each silent before.

The oracle (``no_cuda_sim.placed_or_said``, written apart from the port): the simulated
accelerator seen as MPS or XPU are (``torch.cuda.is_available()`` False, neither MPS nor XPU
there): the original on the CPU against its port, which must put every output on ``sim:0``
with the same values or leave a finding. Near forms: the same unpacking in a chain testing all
three accelerators stays silent.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said
from torchport.check import check_source
from torchport.check.port import port_text

_TAIL = "model = torch.nn.Linear(3, 2).to(device)\nOUT.append(model(torch.ones(4, 3).to(device)))\n"
_CALLS = {
    "cuda": "torch.cuda.is_available()",
    "mps": "torch.backends.mps.is_available()",
    "xpu": "torch.xpu.is_available()",
}
_PARTIAL = (("cuda", "mps"), ("cuda", "xpu"), ("mps", "cuda"), ("xpu", "cuda"))
_BINDINGS = {  # how a branch binds its device `{d}` beside a count `{n}`
    "a pair": "device, n = torch.device({d!r}), {n}",
    "a pair, device second": "n, device = {n}, torch.device({d!r})",
    "a list": "[device, n] = [{d!r}, {n}]",
    "a returned pair": "return torch.device({d!r}), {n}",
    # k31ak: nested, starred and the keyword spelling were not read (silent on be62ecb8)
    "a nested pair": "(device, n), m = (torch.device({d!r}), {n}), {n}",
    "a starred rest": "device, *rest = torch.device({d!r}), {n}, {n}",
    "the type keyword": "device = torch.device(type={d!r})",
}
_FORMS = ("if chain", "expression", "one-armed")


def _program(devices: tuple[str, ...], binding: str, form: str) -> str:
    if form == "expression":  # (a pair unpacked from the nested conditional)
        chain = "".join(f'("{d}", 1) if {_CALLS[d]} else ' for d in devices)
        return f'import torch\n\ndevice, n = {chain}("cpu", 0)\n{_TAIL}'
    if form == "one-armed":  # CUDA's default, the CPU where CUDA is missing
        first = _BINDINGS[binding if "return" not in binding else "a pair"]
        head = first.format(d="cuda", n=1)
        return (
            f"import torch\n\n{head}\nif not torch.cuda.is_available():\n"
            f"    {first.format(d='cpu', n=0)}\n{_TAIL}"
        )
    bind = _BINDINGS[binding]
    lines = [
        f"{'if' if i == 0 else 'elif'} {_CALLS[d]}:\n    {bind.format(d=d, n=1)}\n"
        for i, d in enumerate(devices)
    ]
    chain = "".join(lines) + f"else:\n    {bind.format(d='cpu', n=0)}\n"
    if "return" in bind:
        inner = "".join(f"    {line}\n" for line in chain.splitlines())
        return f"import torch\n\n\ndef pick():\n{inner}\n\ndevice, n = pick()\n{_TAIL}"
    return f"import torch\n\n{chain}{_TAIL}"


CASE = st.tuples(
    st.sampled_from(_PARTIAL), st.sampled_from(sorted(_BINDINGS)), st.sampled_from(_FORMS)
)
_EACH = [(_PARTIAL[i % 4], b, "if chain") for i, b in enumerate(sorted(_BINDINGS))]
_EACH += [(("cuda", "mps"), "a pair", "expression"), (("cuda",), "a pair", "one-armed")]
_EACH += [
    (("xpu", "cuda"), "a nested pair", "one-armed"),
    (("cuda", "xpu"), "a starred rest", "if chain"),
]


# the default run: the explicit cases only (each example is a child's run on `sim`); the
# whole table, every case drawn here, is the slow test below (`-m slow`)
@settings(deadline=None, phases=(Phase.explicit,))
@given(st.lists(CASE, min_size=2, max_size=5))
@example(_EACH)
def test_a_cpu_fallback_bound_by_unpacking_is_placed_or_said(
    cases: list[tuple[tuple[str, ...], str, str]],
) -> None:
    sources = [_program(*case) for case in cases]
    for source in sources:
        assert port_text(source, "train.py").source == source  # the program's choice is kept
    placed_or_said(sources)


@pytest.mark.parametrize("binding", sorted(_BINDINGS))
def test_each_unpacked_fallback_is_one_tp120_at_the_chain_s_head(binding: str) -> None:
    for devices in _PARTIAL:
        for form in _FORMS:
            source = _program(devices, binding, form)
            found = [f for f in check_source(source, "train.py", select=["TP120"])]
            assert len(found) == 1, (form, source, found)


def test_an_unpacked_chain_testing_each_accelerator_stays_silent() -> None:
    for binding in sorted(_BINDINGS):
        source = _program(("cuda", "mps", "xpu"), binding, "if chain")
        assert check_source(source, "train.py", select=["TP120"]) == [], source
    source = _program(("xpu", "cuda", "mps"), "a pair", "expression")
    assert check_source(source, "train.py", select=["TP120"]) == [], source


@pytest.mark.slow  # every chain x binding x form (48 programs) in one child
def test_every_unpacked_cpu_fallback_is_placed_or_said() -> None:
    table = [(d, b, f) for d in _PARTIAL for b in sorted(_BINDINGS) for f in _FORMS]
    placed_or_said([_program(*case) for case in table])
