"""Sample Q's gate classes: a test gated on a GPU architecture, or through a named mark.

xformers and flash-attention gate their kernel tests on the GPU's architecture, not on
``torch.cuda.is_available()``: ``@pytest.mark.skipif(COMPUTE_CAPABILITY != 9)``, ``if not
IS_SM100: pytest.skip()`` at a test's first line, a module ``pytestmark`` on the compute
capability, and marks bound to a name once (``requires_sp24 = pytest.mark.skipif(
compute_capability < (8, 0))``, in the test module or imported from the project's
``tests/utils.py``) then used as ``@requires_sp24``. Such a test runs only on that GPU: its
CUDA is its subject (TP101 leaves it). A mark naming neither CUDA nor its architecture
(``skipif(sys.platform == "win32")``, ``skipif(not HAS_SCIPY)``) gates nothing of CUDA's.
The oracle is the table of conditions below, each marked by hand.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths
from torchport.check._engine import check_text, ruleset_for

# A skip condition, and whether it names CUDA or its GPU architecture (marked by hand).
CONDITIONS = {
    "COMPUTE_CAPABILITY != 9": True,
    "compute_capability < (8, 0)": True,
    "not IS_SM100": True,
    "not is_sm90": True,
    "torch.version.hip is None": True,
    "not torch.cuda.is_available()": True,
    "sys.platform == 'win32'": False,
    "not HAS_SCIPY": False,
    "SMALL < (8, 0)": False,
    "not IS_SMOKE": False,
    "not shipping": False,
}
# Module-level set-up both files hold (each name a condition reads is bound).
SET_UP = [
    "import sys",
    "import pytest",
    "import torch",
    "COMPUTE_CAPABILITY = 0",
    "compute_capability = (0, 0)",
    "if torch.cuda.is_available():",
    "    COMPUTE_CAPABILITY = torch.cuda.get_device_capability()[0]",
    "    compute_capability = torch.cuda.get_device_capability()",
    "IS_SM100 = COMPUTE_CAPABILITY == 10",
    "is_sm90 = COMPUTE_CAPABILITY == 9",
    "HAS_SCIPY = False",
    "SMALL = (1, 0)",
    "IS_SMOKE = False",
    "shipping = False",
]
LINES = ['x = torch.ones(3, device="cuda")', "x = x.cuda()", 'm.to("cuda")']
# Where the gate is: (the test module's lines, the project's tests/utils.py lines, the test).
FORMS = {
    "skipif": ([], [], ["@pytest.mark.skipif({c}, reason='r')", "def test_run(x, m):"]),
    "first line": ([], [], ["def test_run(x, m):", "    if {c}:", "        pytest.skip('r')"]),
    "pytestmark": (
        ["pytestmark = pytest.mark.skipif({c}, reason='r')"],
        [],
        ["def test_run(x, m):"],
    ),
    "named mark": (
        ["requires_it = pytest.mark.skipif({c}, reason='r')"],
        [],
        ["@requires_it", "def test_run(x, m):"],
    ),
    "imported mark": (
        ["from .utils import requires_it"],
        ["requires_it = pytest.mark.skipif({c}, reason='r')"],
        ["@requires_it", "def test_run(x, m):"],
    ),
}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    condition=st.sampled_from(sorted(CONDITIONS)),
    form=st.sampled_from(sorted(FORMS)),
    line=st.sampled_from(LINES),
)
@example(condition="COMPUTE_CAPABILITY != 9", form="skipif", line=LINES[0])
@example(condition="not IS_SM100", form="first line", line=LINES[0])
@example(condition="compute_capability < (8, 0)", form="named mark", line=LINES[1])
@example(condition="compute_capability < (8, 0)", form="imported mark", line=LINES[1])
@example(condition="not HAS_SCIPY", form="imported mark", line=LINES[1])
@example(condition="COMPUTE_CAPABILITY != 9", form="pytestmark", line=LINES[2])
@example(condition="not shipping", form="first line", line=LINES[0])
def test_a_gate_on_the_gpu_architecture_makes_cuda_the_subject(
    condition: str, form: str, line: str, tmp_path: Path
) -> None:
    here, utils, test = FORMS[form]
    root = Path(tempfile.mkdtemp(dir=tmp_path)) / "tests"  # one folder per drawn project
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "utils.py").write_text("\n".join([*SET_UP, *utils]).format(c=condition) + "\n")
    body = [*SET_UP, *here, *test, f"    {line}"]
    (root / "test_kernel.py").write_text("\n".join(body).format(c=condition) + "\n")
    found = check_paths([root], select=["TP101"], jobs=1).findings
    assert bool(found) != CONDITIONS[condition], (form, condition, line, found)


def test_a_helper_only_architecture_gated_tests_call_is_about_cuda() -> None:
    """xformers' ``_workaround_cusparselt_internal_error``: called only by ``@requires_sp24``
    tests; one ungated caller more and it runs without CUDA (reported)."""
    gated = [
        *SET_UP,
        "requires_sp24 = pytest.mark.skipif(compute_capability < (8, 0), reason='sm80')",
        "def warm_up():",
        '    x0 = torch.randn([128, 128], device="cuda")',
        "@requires_sp24",
        "def test_gemm():",
        "    warm_up()",
    ]
    rules = ruleset_for(["TP101"], None)
    assert not check_text("\n".join(gated) + "\n", "tests/test_sp24.py", rules).findings
    ungated = [*gated, "def test_plain():", "    warm_up()"]
    assert check_text("\n".join(ungated) + "\n", "tests/test_sp24.py", rules).findings


def test_cuda_under_a_fake_tensor_mode_in_a_test_is_the_subject() -> None:
    """flash-attention's ``with FakeTensorMode(): q = torch.empty(..., device="cuda")``: fake
    CUDA tensors test the CUDA path (its arch forwarding) on any machine; outside a test, or
    outside the ``with``, the CUDA is reported."""
    head = ["import torch", "from torch._subclasses.fake_tensor import FakeTensorMode"]
    test = [
        "def test_arch():",
        "    with FakeTensorMode():",
        '        q = torch.empty(1, device="cuda")',
    ]
    rules = ruleset_for(["TP101"], None)
    assert not check_text("\n".join([*head, *test]) + "\n", "tests/test_fa.py", rules).findings
    outside = ["def test_arch():", '    q = torch.empty(1, device="cuda")']
    assert check_text("\n".join([*head, *outside]) + "\n", "tests/test_fa.py", rules).findings
    assert check_text("\n".join([*head, *test]) + "\n", "src/fa.py", rules).findings
