"""A device chain that tests some accelerators and falls back to the CPU (held-out set b31ah).

argonne-lcf/ALCF_Hands_on_HPC_Workshop's ``pytorch_xpu.py`` picks ``cuda``, else ``xpu``, else
the CPU with an ``if``/``elif``/``else`` chain of ``is_available()`` tests, and trains its
transformer there. On any other accelerator (MPS, or the simulated one) it trains on the CPU;
main e403c4bf's port said "0 left" of it, and of the CUDA-or-MPS chains below: TP109 leaves a
chain that also tests another accelerator alone, and TP120 took only ``if not
torch.cuda.is_available():``.

The generator draws which accelerators the chain tests and in what order (CUDA, MPS, XPU, at
least one left out), how each is asked (the call, ``hasattr(...) and`` the call, a name bound to
it first) and the form (an ``if`` chain binding ``device``, the nested conditional inside
``torch.device(...)``, a helper returning the device). The oracle is the simulated accelerator,
seen as MPS or XPU are seen (``torch.cuda.is_available()`` False, and neither MPS nor XPU there):
the original on the CPU against its port, which must put every output on ``sim:0`` with the same
values or leave a finding. Near forms stay silent: a chain testing CUDA, MPS and XPU each (the
fallback TP120 advises), one choosing a dtype or only printing, one asking ``torch.accelerator``,
and an MPS-or-CPU choice made where CUDA is missing. (A chain testing no CUDA, ``"mps" if
torch.backends.mps.is_available() else "cpu"`` alone, is not taken: see RESULTS, b31ah.)
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said
from torchport.check import check_source
from torchport.check.port import port_text

_TAIL = (
    "model = torch.nn.Linear(3, 2).to(device)\n"
    "x = torch.ones(4, 3).to(device)\n"
    "OUT.append(model(x))\n"
)
_CALLS = {
    "cuda": "torch.cuda.is_available()",
    "mps": "torch.backends.mps.is_available()",
    "xpu": "torch.xpu.is_available()",
}
_GUARDS = {"cuda": "torch", "mps": "torch.backends", "xpu": "torch"}
_ASKED = ("the call", "hasattr and the call", "a name bound to it")
_FORMS = ("if chain", "expression", "helper")
_PARTIAL = (
    ("cuda", "mps"),
    ("cuda", "xpu"),
    ("mps", "cuda"),
    ("xpu", "cuda"),
)


def _test(device: str, asked: str) -> tuple[str, str]:
    """(a line binding a flag, or nothing; the test)."""
    call = _CALLS[device]
    if asked == "hasattr and the call":
        return "", f'hasattr({_GUARDS[device]}, "{device}") and {call}'
    if asked == "a name bound to it":
        return f"has_{device} = {call}\n", f"has_{device}"
    return "", call


def _program(devices: tuple[str, ...], asked: str, form: str) -> str:
    setup, tests = "", []
    for device in devices:
        line, test = _test(device, asked)
        setup, tests = setup + line, [*tests, test]
    if form == "expression":
        chain = "".join(f'"{d}" if {t} else ' for d, t in zip(devices, tests, strict=True))
        return f'import torch\n\n{setup}device = torch.device({chain}"cpu")\n{_TAIL}'
    word = "return" if form == "helper" else "device ="
    lines = [
        f'{"if" if i == 0 else "elif"} {t}:\n    {word} torch.device("{d}")\n'
        for i, (d, t) in enumerate(zip(devices, tests, strict=True))
    ]
    chain = "".join(lines) + f'else:\n    {word} torch.device("cpu")\n'
    if form == "helper":
        inner = "".join(f"    {line}\n" for line in (setup + chain).splitlines())
        return f"import torch\n\n\ndef pick():\n{inner}\n\ndevice = pick()\n{_TAIL}"
    return f"import torch\n\n{setup}{chain}{_TAIL}"


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(_PARTIAL), st.sampled_from(_ASKED), st.sampled_from(_FORMS))
def test_a_chain_leaving_an_accelerator_out_is_placed_or_said(
    devices: tuple[str, ...], asked: str, form: str
) -> None:
    source = _program(devices, asked, form)
    outcome = port_text(source, "train.py")
    assert not outcome.failures, outcome.failures
    assert outcome.source == source  # the program's own choice is kept
    placed_or_said([source])  # the oracle: on sim (seen as MPS/XPU), placed or reported


def test_every_partial_chain_is_reported_at_its_head() -> None:
    """The whole table (the test above draws from it): one TP120 at the chain's first line,
    naming what it leaves out."""
    for devices in _PARTIAL:
        for asked in _ASKED:
            for form in _FORMS:
                source = _program(devices, asked, form)
                left = [f for f in port_text(source, "train.py").remaining if f.code == "TP120"]
                assert len(left) == 1, source
                head = next(
                    n
                    for n, text in enumerate(source.splitlines(), 1)
                    if text.lstrip().startswith("if ") or "torch.device(" in text
                )
                assert left[0].line == head, source
                out = [d.upper() for d in ("cuda", "mps", "xpu") if d not in devices]
                assert all(d in left[0].message for d in out), left[0].message


def test_the_argonne_xpu_chain_is_reported() -> None:
    """b31ah's alcf-xpu, reduced: the CUDA, then XPU, else CPU chain before a training loop."""
    source = (
        "import torch\n\n"
        "if torch.cuda.is_available():\n    device = torch.device('cuda')\n"
        "elif torch.xpu.is_available():\n    device = torch.device('xpu')\n"
        "else: \n    device = torch.device('cpu')\n"
        "print(device)\n"
        "src = torch.rand((8, 1, 16))\n"
        "model = torch.nn.Linear(16, 4)\n"
        "model = model.to(device)\n"
        "for x in torch.utils.data.DataLoader(src, batch_size=4):\n"
        "    out = model(x.to(device))\n"
    )
    found = [(f.code, f.line) for f in port_text(source, "pytorch_xpu.py").remaining]
    assert ("TP120", 3) in found, found


def test_near_chains_stay_silent() -> None:
    """Each accelerator tested (TP120's advice), a dtype, a print, MPS where CUDA is missing,
    `torch.accelerator`: no TP120 (and the CUDA-alone chain stays TP109's)."""
    for source in (
        _program(("cuda", "mps", "xpu"), "the call", "if chain"),
        _program(("xpu", "cuda", "mps"), "a name bound to it", "expression"),
        "import torch\n\ndt = torch.bfloat16 if torch.cuda.is_available() else "
        "torch.float16 if torch.backends.mps.is_available() else torch.float32\n",
        "import torch\n\nif torch.cuda.is_available():\n    print('cuda')\n"
        "elif torch.backends.mps.is_available():\n    print('mps')\nelse:\n    print('cpu')\n",
        "import torch\n\nif not torch.cuda.is_available():\n"
        "    device = 'mps' if torch.backends.mps.is_available() else 'cpu'\n",
        "import torch\n\nif torch.accelerator.is_available():\n"
        "    device = torch.accelerator.current_accelerator()\n"
        "elif torch.backends.mps.is_available():\n    device = 'mps'\nelse:\n    device = 'cpu'\n",
    ):
        assert check_source(source, "train.py", select=["TP120"]) == [], source
    cuda_alone = _program(("cuda",), "the call", "if chain")
    codes = [f.code for f in port_text(cuda_alone, "train.py").remaining]
    assert codes == ["TP109"], codes
