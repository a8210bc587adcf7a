"""TP101 leaves the CUDA in CUDA's own arm of a dispatch on a device-type string whose function
also has another accelerator's arm (held-out sample AD's F7, judged low (f):
spacecraft-telemetry-anomaly-detection's ``resolve_device(setting)``: ``if setting == "cuda":
... return torch.device("cuda")`` beside ``if setting == "mps": return torch.device("mps")``).
At that arm the name holds CUDA's type: the literal says what the name says.

Programs are a function of one parameter (its name drawn without ``dev`` in it: the device
guard reads those already) made of zero to three further arms drawn from a table (each marked
by hand: whether it compares the parameter with another accelerator's type), CUDA's arm
(``if NAME == "cuda":`` in three spellings, the same test of another parameter, or a near
miss: a plain flag) holding one of three CUDA statements, and a CPU fallback. The oracle: left
alone exactly when CUDA's arm compares a name with CUDA's type and some arm compares the same
name with another accelerator's (``"cpu"``, ``"auto"`` or ``.startswith`` do not count).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

NAMES = ("setting", "backend", "kind", "accel")
# a further arm (NAME stands for the parameter) -> the name it compares with another
# accelerator's type (None: no such comparison)
ARMS = {
    'if NAME == "mps":\n        return torch.device("mps")': "NAME",
    'if "xpu" == NAME:\n        return torch.device("xpu")': "NAME",
    'if NAME in ("mps", "xpu"):\n        return torch.device(NAME)': "NAME",
    'if NAME != "hpu":\n        pass': "NAME",
    'if NAME == "cpu":\n        return torch.device("cpu")': None,  # near misses
    'if other == "mps":\n        return torch.device("mps")': "other",
    'if NAME == "auto":\n        pass': None,
    'if NAME.startswith("mps"):\n        return torch.device("mps")': None,
}
# CUDA's arm's test -> the name it compares with CUDA's type (None: not such a test)
CUDA_TESTS = {
    'NAME == "cuda"': "NAME",
    '"cuda" == NAME': "NAME",
    'NAME == "cuda:0"': "NAME",
    'other == "cuda"': "other",
    "flag": None,
}
STATEMENTS = ('return torch.device("cuda")', "return x.cuda()", 'return model.to("cuda")')


def program(name: str, arms: list[str], cuda_test: str, statement: str, after: bool) -> str:
    body = [arm.replace("NAME", name) for arm in arms]
    arm = f"if {cuda_test.replace('NAME', name)}:\n        {statement}"
    body.insert(len(body) // 2, arm)
    if after:  # CUDA outside the arm: always reported
        body.append('y = torch.zeros(2, device="cuda")')
    body.append('return torch.device("cpu")')
    lines = "".join(f"    {s}\n" for s in body)
    return f"import torch\n\n\ndef resolve({name}, other, flag, x, model):\n{lines}"


def findings(source: str) -> list[int]:
    found = check_text(source, "device.py", ruleset_for(["TP101"], None)).findings
    return sorted(f.line for f in found if f.code == "TP101")


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(NAMES),
    st.lists(st.sampled_from(sorted(ARMS)), max_size=3, unique=True),
    st.sampled_from(sorted(CUDA_TESTS)),
    st.sampled_from(STATEMENTS),
    st.booleans(),
)
def test_cuda_s_arm_of_a_dispatch_naming_another_accelerator_is_left_alone(
    name: str, arms: list[str], cuda_test: str, statement: str, after: bool
) -> None:
    source = program(name, arms, cuda_test, statement, after)
    lines = source.splitlines()
    arm_line = next(i for i, s in enumerate(lines, 1) if s.strip() == statement)
    tested = CUDA_TESTS[cuda_test]
    left = tested is not None and any(ARMS[a] == tested for a in arms)
    found = findings(source)
    assert (arm_line in found) is not left, source
    if after:  # the CUDA after the arms stays reported
        assert any(lines[i - 1].strip().startswith("y = ") for i in found), source


def test_the_sampled_resolver() -> None:
    source = (
        "import torch\n\n\ndef resolve_device(setting):\n"
        '    if setting == "auto":\n'
        "        if torch.cuda.is_available():\n"
        '            return torch.device("cuda")\n'
        '        return torch.device("cpu")\n'
        '    if setting == "cuda":\n'
        "        if not torch.cuda.is_available():\n"
        '            raise ValueError("CUDA requested but not available")\n'
        '        return torch.device("cuda")\n'
        '    if setting == "mps":\n'
        '        return torch.device("mps")\n'
        '    return torch.device("cpu")\n'
    )
    assert 12 not in findings(source)
    assert 12 in findings(source.replace('"mps":', '"cpu":'))
