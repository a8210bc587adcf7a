"""Sample Q's largest class: an ungated test of a CUDA kernel (`rules/_cuda_kernels.py`).

flash-attention's CuTe, Triton and compiled-extension tests put their inputs on
``"cuda"`` with no gate: the kernel under test exists only for the GPU, so the CUDA is
the test's by nature (judged low), not a porting bug. Generated projects draw how a
module gets its kernel (a top-level import of Triton, CUTLASS or a ``*_cuda`` extension,
both arms of an ``if``/``else`` importing one, ``load_inline`` of CUDA sources; or an
optional import, a third-party or torch-internal module, a ``_C`` extension that may have
CPU kernels too), where that module is (the test file, a project module it imports, the
module a package's ``__init__`` re-exports the name from, or one import further), and the
TP101 line. The oracle: the table of forms marked by hand and the reach written out.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths

# How a module may get a kernel, and whether it cannot import without a CUDA-only one.
FORMS = {
    "import triton": True,
    "import triton.language as tl": True,
    "import cutlass.cute as cute": True,
    "import flash_attn_2_cuda as flash_attn_gpu": True,
    "from aiter.ops.triton.kernels import attn as attn_gpu": True,
    "if USE_ROCM:\n    from aiter.ops.triton.kernels import attn as gpu\n"
    "else:\n    import attn_2_cuda as gpu": True,
    "from torch.utils.cpp_extension import load_inline\n"
    "k = load_inline(name='k', cpp_sources=[''], cuda_sources=[SRC])": True,
    "from torch.utils.cpp_extension import load\n"
    "k = load(name='k', sources=['k.cpp', 'k.cu'])": True,
    "try:\n    import triton\nexcept ImportError:\n    triton = None": False,
    "if USE_ROCM:\n    import attn_2_cuda as gpu": False,
    "from torch.utils._triton import has_triton": False,
    "from pytorch3d import _C": False,
    "import vision_C": False,
    "import numpy": False,
    "import pycuda.gl": False,  # CUDA interop, no kernel under test (pytorch3d's, sample M)
    "from torch.utils.cpp_extension import load\nk = load(name='k', sources=['k.cpp'])": False,
}
# Where the module with the form is, and whether the test's reach includes it.
PLACES = {"test": True, "imported": True, "re-exported": True, "two steps": False}
LINES = ['q = torch.randn(2, 8, device="cuda")', "q = torch.randn(2, 8).cuda()"]
HEAD = ["import torch", "USE_ROCM = False", "SRC = ''"]


def _write(root: Path, form: str, place: str, line: str, folder: str) -> Path:
    pkg = root / "kern"
    pkg.mkdir()
    (pkg / "core.py").write_text("\n".join([*HEAD, form if place == "two steps" else ""]) + "\n")
    kernel = form if place in ("imported", "re-exported") else "from kern.core import SRC as S"
    (pkg / "ops.py").write_text("\n".join([*HEAD, kernel, "def attn(q):", "    return q"]) + "\n")
    (pkg / "__init__.py").write_text("from kern.ops import attn\n")
    imports = "from kern import attn" if place == "re-exported" else "from kern.ops import attn"
    tests = root / folder
    tests.mkdir()
    own = form if place == "test" else ""
    test = [*HEAD, imports, own, "def test_attn():", f"    {line}", "    attn(q)"]
    (tests / "test_attn.py").write_text("\n".join(test) + "\n")
    return tests / "test_attn.py"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    form=st.sampled_from(sorted(FORMS)),
    place=st.sampled_from(sorted(PLACES)),
    line=st.sampled_from(LINES),
)
@example(form="import cutlass.cute as cute", place="imported", line=LINES[0])
@example(form="import triton", place="test", line=LINES[1])
@example(form="import flash_attn_2_cuda as flash_attn_gpu", place="re-exported", line=LINES[0])
@example(form="import triton", place="two steps", line=LINES[0])
@example(form="from pytorch3d import _C", place="imported", line=LINES[1])
@example(
    form="try:\n    import triton\nexcept ImportError:\n    triton = None",
    place="test",
    line=LINES[0],
)
def test_a_test_of_a_cuda_kernel_leaves_its_cuda(
    form: str, place: str, line: str, tmp_path: Path
) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))  # one folder per drawn project
    test = _write(root, form, place, line, "tests")
    found = check_paths([test], select=["TP101"], jobs=1).findings
    assert bool(found) != (FORMS[form] and PLACES[place]), (form, place, line, found)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(form=st.sampled_from(sorted(f for f, kernel in FORMS.items() if kernel)))
def test_the_same_code_outside_tests_is_reported(form: str, tmp_path: Path) -> None:
    """A program (not collected by a test runner) that moves to CUDA is reported whatever
    it imports: where a library's caller runs is the program's choice (TP101's standard)."""
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    program = _write(root, form, "test", LINES[0], "scripts")
    program = program.rename(program.with_name("run_attn.py"))
    assert check_paths([program], select=["TP101"], jobs=1).findings
