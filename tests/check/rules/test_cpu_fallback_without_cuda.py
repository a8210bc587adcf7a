"""TP120: a one-armed fallback to the CPU taken wherever CUDA is missing.

Held-out recall round 5e (fishaudio/fish-speech: ``if not torch.cuda.is_available():
args.device = "cpu"`` after a ``--device`` option defaulting to ``"cuda"``; one port later the
same line overwrote the MPS arm added above it). The oracle is written apart from the rule,
from what the program does on a machine that has MPS and no CUDA: the statement is reported
when, there, its body runs (its test is true whenever CUDA is missing: ``not`` of a CUDA
availability answer, alone or ``or``-ed with anything) and it puts a CPU device in the
program's device (a CPU value assigned), unless the statement itself already decides for
another accelerator (its test or body names MPS, or it is the ``elif`` after an MPS arm),
or there is an ``else`` (a two-armed choice, TP109's).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (the availability test, True when it is true wherever CUDA is missing -- whatever the rest)
TESTS = (
    ("not torch.cuda.is_available()", True),
    ("not cuda_ok", True),  # cuda_ok = torch.cuda.is_available()
    ("not (torch.cuda.is_available() and args.gpu)", True),
    ("not torch.cuda.is_available() or args.cpu", True),
    ("args.cpu or not torch.cuda.is_available()", True),
    ("not torch.cuda.is_available() and not torch.backends.mps.is_available()", False),
    ("not args.cuda", False),  # the user's flag: not where CUDA is missing
    ("torch.cuda.is_available()", False),
    ("not torch.accelerator.is_available()", False),
    ("args.device == 'cpu'", False),
)
# (the body's statement, True when it puts the CPU in a device, False when it does not,
# None when it names another accelerator itself)
BODIES = (
    ("args.device = 'cpu'", True),
    ("self.device = torch.device('cpu')", True),
    ("device = 'cpu'", True),
    ("cfg['device'] = 'cpu'", True),
    ("device: str = 'cpu'", True),
    ("raise SystemExit('needs a GPU')", False),
    ("args.cuda = False", False),
    ("print('no GPU')", False),
    ("device = 'mps' if torch.backends.mps.is_available() else 'cpu'", None),
)
# (what comes before the statement, whether it makes the statement the `elif` of an MPS arm)
BEFORE = (
    ("", False),
    ("if torch.backends.mps.is_available():\n    args.device = 'mps'\n", False),
    ("if torch.backends.mps.is_available():\n    args.device = 'mps'\nel", True),
)


def _program(test: str, body: str, before: str, with_else: bool) -> str:
    stmt = f"{before}if {test}:\n    {body}\n"
    if with_else:
        stmt += "else:\n    args.device = 'cuda'\n"
    return f"import torch\n\ncuda_ok = torch.cuda.is_available()\n{stmt}"


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(TESTS),
    st.sampled_from(BODIES),
    st.sampled_from(BEFORE),
    st.booleans(),
)
def test_a_fallback_is_reported_when_it_forces_the_cpu_where_cuda_is_missing(
    test: tuple[str, bool],
    body: tuple[str, bool | None],
    before: tuple[str, bool],
    with_else: bool,
) -> None:
    source = _program(test[0], body[0], before[0], with_else)
    runs_without_cuda = test[1]
    sets_the_cpu = body[1] is True
    decides_elsewhere = body[1] is None or before[1] or "mps" in test[0]
    expected = runs_without_cuda and sets_the_cpu and not decides_elsewhere and not with_else
    found = check_source(source, "run.py", select=["TP120"])
    assert bool(found) == expected, source
    if found:
        (finding,) = found
        assert (
            finding.line
            == source.splitlines().index(f"{'el' if before[1] else ''}if {test[0]}:") + 1
        )
        assert finding.fix is None


def test_test_code_and_benchmarks_choose_their_own_device() -> None:
    source = "import torch\n\nif not torch.cuda.is_available():\n    device = 'cpu'\n"
    assert check_source(source, "tests/test_run.py", select=["TP120"]) == []
    assert check_source(source, "bm_speed.py", select=["TP120"]) == []
    assert len(check_source(source, "serve.py", select=["TP120"])) == 1


def test_the_fallback_is_off_in_a_default_run() -> None:
    source = "import torch\n\nif not torch.cuda.is_available():\n    device = 'cpu'\n"
    assert check_source(source, "serve.py") == []
    assert [f.code for f in check_source(source, "serve.py", extend_select=["TP120"])] == ["TP120"]
