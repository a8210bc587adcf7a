"""A CUDA-or-CPU choice made by the device count, or from the CPU's side (held-out set h31af).

lonePatient/chinese-word2vec-pytorch's ``pyw2v/common/tools.py`` (victoresque's pytorch-template
``prepare_device``) picks ``f"cuda:{n_gpu_use[0]}"`` and falls back with ``n_gpu =
torch.cuda.device_count()`` / ``if len(n_gpu_use) > 0 and n_gpu == 0: device_type = 'cpu'``. On
MPS or XPU the word2vec model trains on the CPU; main d69151ea's port said nothing of it (its
10 findings left were all elsewhere), and "0 left" for the single-file shapes below: TP109 took
``torch.cuda.is_available()`` on CUDA's side only, and the port did not run TP120 (the fallback
``if not torch.cuda.is_available(): device = "cpu"``, off in ``check``'s default run).

The generator draws the test (the count compared, truthy, bound to a name first, in an ``and``;
``not torch.cuda.is_available()``), the form (an ``if`` statement falling back to the CPU, or
the conditional expression) and a helper function around it. The oracle is the simulated
accelerator seen as MPS or XPU are (``torch.cuda.is_available()`` False): the original on the
CPU against its port, which must either put every output on ``sim:0`` with the same values or
leave a finding. Near forms that choose nothing stay silent: more than one GPU
(``DataParallel``), a count only printed.
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
_ARGS = "class Args:\n    pass\n\nargs = Args()\nargs.n_gpu = torch.cuda.device_count()\n"
# (setup lines, the test true only WITH CUDA); each is used as is or negated below
_WITH_CUDA = {
    "count > 0": ("", "torch.cuda.device_count() > 0"),
    "count >= 1": ("", "torch.cuda.device_count() >= 1"),
    "count != 0": ("", "torch.cuda.device_count() != 0"),
    "0 < count": ("", "0 < torch.cuda.device_count()"),
    "count, truthy": ("", "torch.cuda.device_count()"),
    "n_gpu > 0": ("n_gpu = torch.cuda.device_count()\n", "n_gpu > 0"),
    "n_gpu, in an and": ("n_gpu = torch.cuda.device_count()\n", "use_gpu and n_gpu > 0"),
    "args.n_gpu > 0": (_ARGS, "args.n_gpu > 0"),  # transformers' examples: `args.n_gpu`
    "is_available() == True": ("", "torch.cuda.is_available() == True"),
    "bool(count)": ("", "bool(torch.cuda.device_count())"),
}
_WITHOUT_CUDA = {
    "count == 0": ("", "torch.cuda.device_count() == 0"),
    "count < 1": ("", "torch.cuda.device_count() < 1"),
    "not count": ("", "not torch.cuda.device_count()"),
    "n_gpu == 0, in an and": ("n_gpu = torch.cuda.device_count()\n", "use_gpu and n_gpu == 0"),
    "not is_available()": ("", "not torch.cuda.is_available()"),
    "not a flag bound to it": ("ok = torch.cuda.is_available()\n", "not ok"),
    "args.n_gpu == 0": (_ARGS, "args.n_gpu == 0"),
    "is_available() is False": ("", "torch.cuda.is_available() is False"),
    "is_available() != True": ("", "torch.cuda.is_available() != True"),
}
_FORMS = ("expression", "if statement")


def _program(setup: str, test: str, with_cuda: bool, form: str, helper: bool) -> str:
    if form == "expression":
        arms = ('"cuda:0"', '"cpu"') if with_cuda else ('"cpu"', '"cuda:0"')
        body = f"{setup}device = torch.device({arms[0]} if {test} else {arms[1]})\n"
    elif with_cuda:
        body = f'{setup}device = "cpu"\nif {test}:\n    device = "cuda:0"\n'
    else:
        body = f'{setup}device = "cuda:0"\nif {test}:\n    device = "cpu"\n'
    if helper:
        inner = "".join(f"    {line}\n" for line in body.splitlines())
        body = f"def pick(use_gpu):\n{inner}    return device\n\n\ndevice = pick(True)\n"
    else:
        body = f"use_gpu = True\n{body}"
    return f"import torch\n\n{body}{_TAIL}"


_CASES = st.one_of(
    st.tuples(st.sampled_from(sorted(_WITH_CUDA)), st.just(True)),
    st.tuples(st.sampled_from(sorted(_WITHOUT_CUDA)), st.just(False)),
)


@settings(max_examples=12, deadline=None)
@given(_CASES, st.sampled_from(_FORMS), st.booleans())
def test_a_choice_by_the_count_or_from_the_cpus_side_is_placed_or_said(
    case: tuple[str, bool], form: str, helper: bool
) -> None:
    name, with_cuda = case
    setup, test = (_WITH_CUDA if with_cuda else _WITHOUT_CUDA)[name]
    source = _program(setup, test, with_cuda, form, helper)
    outcome = port_text(source, "train.py")
    assert not outcome.failures, outcome.failures
    assert outcome.source == source  # the program's own choice is kept
    placed_or_said([source])  # the oracle: on sim (seen as MPS/XPU), placed or reported


def test_every_form_is_reported_at_the_choice() -> None:
    """The whole table at once (the test above draws from it): TP109 at the choice's line (TP120,
    which the port now reports, for ``if not torch.cuda.is_available(): device = "cpu"``)."""
    sources = []
    for table, with_cuda in ((_WITH_CUDA, True), (_WITHOUT_CUDA, False)):
        for setup, test in table.values():
            for form in _FORMS:
                for helper in (False, True):
                    sources.append(_program(setup, test, with_cuda, form, helper))
    for source in sources:
        left = port_text(source, "train.py").remaining
        lines = [f.line for f in left if f.code in ("TP109", "TP120")]
        assert len(lines) == 1, source
        assert _choice_line(source) == lines[0], source
        assert port_text(source, "train.py").source == source  # kept: same on the CPU


def _choice_line(source: str) -> int:
    """The line of the choice: the ``if`` or the ``device = torch.device(...)`` line."""
    return next(
        n
        for n, text in enumerate(source.splitlines(), 1)
        if text.lstrip().startswith("if ") or "torch.device(" in text
    )


def test_the_word2vec_helper_is_reported() -> None:
    """h31af's lpw-train, reduced: the flag's CUDA device, the count's fallback to the CPU."""
    source = (
        "import torch\n\n"
        "def prepare_device(n_gpu_use):\n"
        "    if not n_gpu_use:\n"
        '        device_type = "cpu"\n'
        "    else:\n"
        '        n_gpu_use = n_gpu_use.split(",")\n'
        '        device_type = f"cuda:{n_gpu_use[0]}"\n'
        "    n_gpu = torch.cuda.device_count()\n"
        "    if len(n_gpu_use) > 0 and n_gpu == 0:\n"
        '        device_type = "cpu"\n'
        "    return torch.device(device_type)\n\n"
        'device = prepare_device("0")\n'
        "model = torch.nn.Linear(3, 2).to(device)\n"
    )
    found = [(f.code, f.line) for f in port_text(source, "tools.py").remaining]
    assert ("TP109", 10) in found, found


def test_more_than_one_gpu_or_a_printed_count_chooses_nothing() -> None:
    for source in (
        "import torch\n\nn_gpu = torch.cuda.device_count()\n"
        "if n_gpu > 1:\n    model = torch.nn.DataParallel(model)\n",
        "import torch\n\nif torch.cuda.device_count() > 0:\n    print(torch.cuda.device_count())\n",
        "import torch\n\nif not torch.cuda.is_available():\n    raise SystemExit('no GPU')\n",
        'import torch\n\nmode = "cpu" if torch.cuda.device_count() > 1 else "ddp"\n',
    ):
        assert check_source(source, "train.py", select=["TP109"]) == [], source
