"""TP101 leaves CUDA alone in a script named as a test of CUDA, run by hand or collected.

Held-out sample AB (judged low (b)): spatialconv's ``scripts/.../test_cuda_vs_cpu.py``
(module-level code comparing a CUDA run with a CPU one), upstageailab's
``scripts/troubleshooting/test_basic_cuda.py`` (a step-by-step hunt for a CUDA crash): no
test framework imported, so no test runner collects them, but their names say a test whose
subject is CUDA. The oracle is the table of names below, each marked by hand: named as pytest
names a test file (``test_*.py``, ``*_test.py``) and for CUDA or its hardware (``cuda``,
``gpu``, ``nccl`` in the name). The file's place, body and framework import are drawn; the
CUDA it names is reported exactly where the name is not such a test's.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

NAMES = {
    "test_cuda_vs_cpu.py": True,
    "test_basic_cuda.py": True,
    "cuda_test.py": True,
    "test_gpu.py": True,
    "test_multi_gpu_nccl.py": True,
    "test_model_cuda_test.py": True,
    "train_cuda.py": False,  # a program's CUDA variant: porting it lets it run elsewhere
    "cuda_utils.py": False,
    "multi_gpu_train.py": False,
    "test_model.py": False,
    "test-cuda.py": False,  # not a name pytest collects
    "test_cudnn_disabled.py": False,  # cuDNN, not a word this reads
    "cudatest.py": False,
    "bench_cuda.py": False,  # not named as a test
}
BODIES = {
    "a module-level move": "x = torch.zeros(3).cuda()\n",
    "a device in a function": 'def run(x):\n    return x.to("cuda")\n',
    "a main block": 'if __name__ == "__main__":\n    model = torch.nn.Linear(2, 2).to("cuda:0")\n',
}
FOLDERS = ("", "scripts/troubleshooting/", "experiments/")


@settings(max_examples=80)
@given(
    name=st.sampled_from(sorted(NAMES)),
    body=st.sampled_from(sorted(BODIES)),
    folder=st.sampled_from(FOLDERS),
    framework=st.booleans(),
)
def test_a_script_named_as_a_test_of_cuda_uses_cuda_on_purpose(
    name: str, body: str, folder: str, framework: bool
) -> None:
    source = "import torch\n" + ("import unittest\n" if framework else "") + "\n"
    source += BODIES[body]
    found = check_source(source, f"{folder}{name}", select=["TP101"])
    assert (not found) == NAMES[name], (name, source)


def test_every_name_of_the_table_alone() -> None:
    for name, marked in NAMES.items():
        source = "import torch\n\nx = torch.zeros(3).cuda()\n"
        found = check_source(source, f"scripts/{name}", select=["TP101"])
        assert (not found) == marked, name
