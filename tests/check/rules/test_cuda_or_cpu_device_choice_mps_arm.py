"""TP109 leaves a CUDA choice alone whose ``else`` arm goes on to test MPS or XPU in the same
expression: ``"cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available()
else "cpu")`` (sample AE's N1, judged noise: live-gurbani-captioning's
``scripts/finetune_path_b.py``). It already chooses among several accelerators, as the
``if ...: elif torch.backends.mps...:`` chain the rule left alone before.

Programs are chains of conditional expressions: a CUDA test first, then zero to three further
arms, each a test from a table marked by hand (whether it asks for another accelerator), the
last ``else`` the CPU; written bare, inside ``torch.device(...)`` or as ``if``/``elif``
statements. The oracle: left alone exactly when some further arm asks for MPS or XPU; a chain
of other tests (a flag, a device count) stays reported.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# a further arm's test -> (the value it picks, whether it asks for another accelerator)
ARMS = {
    "torch.backends.mps.is_available()": ('"mps"', True),
    "torch.xpu.is_available()": ('"xpu"', True),
    'hasattr(torch, "xpu") and torch.xpu.is_available()': ('"xpu"', True),
    "getattr(torch.backends, 'mps', None) and torch.backends.mps.is_available()": ('"mps"', True),
    "args.cpu": ('"cpu"', False),  # near misses: no other accelerator asked for
    "torch.cuda.device_count() > 1": ('"cuda:1"', False),
    "os.environ.get('FORCE_CPU')": ('"cpu"', False),
}
CUDA = ("torch.cuda.is_available()", "use_cuda", "torch.cuda.is_available() and not args.cpu")
FORMS = ("bare", "device", "statements")


def expression(cuda: str, arms: list[str]) -> str:
    text = '"cpu"'
    for test in reversed(arms):
        text = f"({ARMS[test][0]} if {test} else {text})"
    return f'"cuda" if {cuda} else {text}'


def program(form: str, cuda: str, arms: list[str]) -> str:
    head = "import os\n\nimport torch\n\nuse_cuda = torch.cuda.is_available()\n\n\n"
    if form == "statements":
        lines = [f"    if {cuda}:", '        device = "cuda"']
        for test in arms:
            lines += [f"    elif {test}:", f"        device = {ARMS[test][0]}"]
        lines += ["    else:", '        device = "cpu"']
        body = "\n".join(lines)
    elif form == "device":
        body = f"    device = torch.device({expression(cuda, arms)})"
    else:
        body = f"    device = {expression(cuda, arms)}"
    return f"{head}def main(args):\n{body}\n    print(device)\n    return model.to(device)\n"


def reported(source: str) -> bool:
    findings = check_text(source, "train.py", ruleset_for(["TP109"], None)).findings
    return any(f.code == "TP109" for f in findings)


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(FORMS),
    st.sampled_from(CUDA),
    st.lists(st.sampled_from(sorted(ARMS)), max_size=3, unique=True),
)
def test_a_chain_asking_for_another_accelerator_is_left_alone(
    form: str, cuda: str, arms: list[str]
) -> None:
    looks_further = any(ARMS[test][1] for test in arms)
    assert reported(program(form, cuda, arms)) is not looks_further


def test_the_sampled_line() -> None:
    source = (
        "import torch\n\n\ndef main():\n"
        '    device = "cuda" if torch.cuda.is_available() else '
        '("mps" if torch.backends.mps.is_available() else "cpu")\n'
        '    print(f"training (device={device})")\n'
        "    write_run_card(device=device)\n"
    )
    assert not reported(source)


def test_near_miss_a_plain_cuda_or_cpu_choice_beside_it() -> None:
    source = (
        "import torch\n\n"
        'mps = "mps" if torch.backends.mps.is_available() else "cpu"\n'
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "model = model.to(device)\n"
    )
    assert reported(source)
