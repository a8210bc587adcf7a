"""TP101 leaves a CUDA runtime probe's own tensor: its subject is CUDA (held-out sample AD's
class B1, pos 67 and 93, judged low (b): robot_sf's ``classify_cuda_runtime`` and the
fake-video refactor's ``probe_cuda``; ``rules/_cuda_probes.py``).

A function is drawn: its name (:data:`NAMES`, each marked by hand whether it names a probe
of CUDA), its parameters (:data:`PARAMETERS`, whether its caller can hand it data), what it
makes on CUDA (:data:`MADE`, whether it is a tensor of the probe's own, of constants), where
it asks ``torch.cuda.is_available()`` (:data:`ASKS`, whether before the tensor), and how
torch is imported. The oracle: TP101 leaves the tensor exactly when every mark says probe.
(A probe's ``if torch.cuda.is_available():`` around its tensor is TP109's choice, which is
not narrowed here: none was in the sample.)
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

NAMES = {
    "probe_cuda": True,
    "classify_cuda_runtime": True,
    "checkCudaUsable": True,
    "cuda_smoke": True,
    "run_cuda": False,
    "probe_cudagraph": False,
    "probe_gpu": False,
    "train_step": False,
}
PARAMETERS = {"": True, "size=2": True, "self": True, "model": False, "*args": False}
MADE = {
    'x = torch.ones((2, 2), device="cuda")': True,
    'x = torch.zeros((1,), device="cuda")': True,
    'x = torch.full((2,), -1.0, dtype=torch.float32, device="cuda")': True,
    'x = torch.randn(size, 3, device="cuda")': False,  # sized by a value
    'x = torch.tensor(batch, device="cuda")': False,  # the caller's data
    'x = model.to("cuda")': False,  # a model moved
    'x = torch.empty_like(ref, device="cuda")': False,
}
ASKS = {
    "before_if": (  # the refactor's: a report's entry (a test TP109 does not take for CUDA's)
        True,
        'report = {{"cuda_available": bool(torch.cuda.is_available())}}\n'
        'if report["cuda_available"]:\n    {made}\n    torch.cuda.synchronize()',
    ),
    "before_return": (  # robot_sf's: the answer kept in a name, tried apart
        True,
        "try:\n    available = bool(torch.cuda.is_available())\n"
        "except Exception:\n    return None\nif not available:\n    return None\n"
        "{made}\ntorch.cuda.synchronize()",
    ),
    "after": (False, "{made}\nok = torch.cuda.is_available()"),
    "never": (False, "{made}"),
}
IMPORTS = {"plain": "import torch\n", "importlib": "import importlib\n"}


def program(name: str, parameters: str, made: str, asks: str, imports: str) -> str:
    body = ""
    if imports == "importlib":
        body += 'torch = importlib.import_module("torch")\n'
    body += ASKS[asks][1].format(made=made) + "\nreturn True\n"
    indent = "        " if parameters == "self" else "    "
    text = "".join(f"{indent}{line}\n" for line in body.splitlines())
    head = IMPORTS[imports] + "\n\n"
    if parameters == "self":
        return f"{head}class Probe:\n    def {name}(self):\n{text}"
    return f"{head}def {name}({parameters}):\n{text}"


@given(
    name=st.sampled_from(sorted(NAMES)),
    parameters=st.sampled_from(sorted(PARAMETERS)),
    made=st.sampled_from(sorted(MADE)),
    asks=st.sampled_from(sorted(ASKS)),
    imports=st.sampled_from(sorted(IMPORTS)),
)
def test_a_probes_own_tensor_is_left(
    name: str, parameters: str, made: str, asks: str, imports: str
) -> None:
    source = program(name, parameters, made, asks, imports)
    probe = NAMES[name] and PARAMETERS[parameters] and MADE[made] and ASKS[asks][0]
    # past `if not available: return` on a flag bound to torch's `is_available()`, the
    # checker knew CUDA is there already (a guard); torch from `importlib` it cannot resolve
    guarded = asks == "before_return" and imports == "plain"
    reported = bool(check_source(source, select=["TP101"]))
    assert reported == (not (probe or guarded)), source


@pytest.mark.parametrize("imports", sorted(IMPORTS))
def test_the_two_probes(imports: str) -> None:
    for name, made, asks in (
        ("classify_cuda_runtime", 'tensor = torch.zeros((1,), device="cuda")', "before_return"),
        ("probe_cuda", 'tensor = torch.ones((2, 2), device="cuda")', "before_if"),
    ):
        source = program(name, "", made, asks, imports)
        assert not check_source(source, select=["TP101"]), source


@pytest.mark.parametrize("made", ['x = model.to("cuda")', 'x = torch.tensor(model, device="cuda")'])
@pytest.mark.parametrize("asks", ["before_if", "before_return"])
def test_a_probe_doing_the_models_work_keeps_the_finding(made: str, asks: str) -> None:
    source = program("probe_cuda", "model", made, asks, "importlib")
    assert len(check_source(source, select=["TP101"])) == 1, source
