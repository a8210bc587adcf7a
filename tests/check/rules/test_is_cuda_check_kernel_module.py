"""Sample Q: ``x.is_cuda`` in a module written around a GPU-only kernel (TP103 leaves it).

flash-attention's ``fused_mlp_func`` takes its fused CUDA kernel when ``x.is_cuda`` and torch
ops otherwise; its CuTe interface asserts ``tensor.is_cuda`` before launching a kernel. In
such a module the test is the kernel's precondition: ``x.device.type != "cpu"`` would send
MPS tensors to it (judged noise). Not so around a Triton kernel alone: Triton compiles for
ROCm and XPU too, and ``x.is_cuda`` there turns XPU away (``test_recall.py``'s Triton
wrapper, reported). Generated modules draw the module's imports (the same
kinds as `test_cuda_kernel_tests.py`, marked by hand) and the ``is_cuda`` use; the oracle:
reported exactly where the module is not written around such a kernel.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# A module's imports, and whether they make it a kernel module (marked by hand).
IMPORTS = {
    "import triton": False,  # Triton compiles for ROCm and XPU too: `is_cuda` turns XPU away
    "import cutlass.cute as cute": True,
    "import fused_dense_lib as fused_dense_cuda": True,
    "import flash_attn_2_cuda": True,
    "if USE_ROCM:\n    import aiter.ops.triton.k as gpu\nelse:\n    import attn_cuda as gpu": True,
    "try:\n    import triton\nexcept ImportError:\n    triton = None": False,
    "import numpy as np": False,
    "from torch.utils._triton import has_triton": False,
    "import fused_dense_lib": False,
}
USES = [
    "def mlp(x, w):\n    if x.is_cuda and w.is_cuda:\n        return fused(x, w)\n"
    "    return torch.mm(x, w)\n",
    "def combine(t):\n    assert t.is_cuda, 'must be on CUDA'\n    return run(t)\n",
    "def pick(x):\n    return x.pin_memory() if not x.is_cuda else x\n",
]


@given(imports=st.sampled_from(sorted(IMPORTS)), use=st.sampled_from(USES))
@example(imports="import fused_dense_lib as fused_dense_cuda", use=USES[0])
@example(imports="import fused_dense_lib", use=USES[0])
@example(imports="import cutlass.cute as cute", use=USES[1])
def test_is_cuda_in_a_kernel_module_is_the_kernels_precondition(imports: str, use: str) -> None:
    source = f"import torch\nUSE_ROCM = False\n{imports}\n\n\n{use}"
    found = check_text(source, "pkg/ops/fused.py", ruleset_for(["TP103"], None)).findings
    assert bool(found) != IMPORTS[imports], (source, found)
