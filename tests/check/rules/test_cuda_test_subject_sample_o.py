"""Sample O's test-code classes: CUDA as a test's subject for TP406, TP113 in test code.

``rules/_test_code.py``: a test module named for the GPU (tnt's
``tests/utils/test_timer_gpu.py``, BigVGAN's ``tests/test_cuda_vs_torch_model.py``), a
test class named for it (``TimerGPUTest``), a test skipped without it
(``@skip_if_not_gpu``) or one that patches CUDA's API (``@patch("torch.cuda.is_available",
lambda: True)``, texar's) uses CUDA on purpose; TP406 now leaves such code as TP101 and
TP401 do, and TP113 leaves all test code (a test's device type decides what the test
exercises, as TP109's device choice does). Generated files draw the folder and file name,
the imports, the class, the function's name and decorator, and the CUDA line; the oracle
is the standard written out on those parts, apart from the code.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# A CUDA line and the rule that reports it outside a test of CUDA.
LINES = {
    "s = torch.cuda.current_stream()": "TP406",
    "e = torch.cuda.Event(enable_timing=True)": "TP406",
    "x = x.to('cuda')": "TP101",
    "n = torch.cuda.device_count()": "TP401",
    'scaler = torch.amp.GradScaler("cuda")': "TP113",
    'mock_autocast.assert_called_with(device_type="cuda", enabled=True)': "TP113",
}
# A file path, and whether its name names CUDA or the GPU.
PATHS = {
    "tests/utils/test_timer_gpu.py": True,
    "tests/test_cuda_vs_torch_model.py": True,
    "tests/utils/test_timer.py": False,
    "test_device.py": False,
    "test_device_gpu.py": True,  # a test of the GPU by its name, collected or run by hand
    "src/lib/timer_gpu.py": True,  # not named as a test: the name does not matter there
    "src/lib/timer.py": False,
}
CLASSES = {"": False, "TimerGPUTest": True, "TimerTest": False, "TestCudaOps": True}
FUNCTIONS = {"test_record": False, "test_record_on_gpu": True, "helper": False}
# A decorator, and whether it makes CUDA the subject (a gate named for it, or a patch of
# its API); a skip on `torch.cuda.is_available()` is a device guard everywhere.
DECORATORS = {
    "": False,
    "@skip_if_not_gpu": True,
    '@patch("torch.cuda.is_available", lambda: True)': True,
    '@mock.patch.object(torch.cuda, "synchronize")': True,
    '@patch("torch.distributed.barrier")': False,
    '@patch("os.environ", {"RANK": "0"})': False,
    "@pytest.mark.slow": False,
}


def _test_code(path: str, framework: bool, cls: str, function: str) -> bool:
    """The standard: a `tests` folder, a collected module, or a test function/class."""
    parts = path.split("/")
    if "tests" in parts[:-1]:
        return True
    name = parts[-1]
    collected = name.startswith("test_") or name.endswith("_test.py")
    return framework and (collected or function.startswith("test") or cls.startswith("Test"))


@given(
    line=st.sampled_from(sorted(LINES)),
    path=st.sampled_from(sorted(PATHS)),
    framework=st.booleans(),
    cls=st.sampled_from(sorted(CLASSES)),
    function=st.sampled_from(sorted(FUNCTIONS)),
    decorator=st.sampled_from(sorted(DECORATORS)),
)
@example(  # the class's name
    line="s = torch.cuda.current_stream()",
    path="tests/utils/test_timer.py",
    framework=True,
    cls="TimerGPUTest",
    function="test_record",
    decorator="",
)
@example(  # the module's name alone
    line="s = torch.cuda.current_stream()",
    path="tests/utils/test_timer_gpu.py",
    framework=True,
    cls="",
    function="test_record",
    decorator="",
)
@example(  # the module's name alone, TP101
    line="x = x.to('cuda')",
    path="test_device_gpu.py",
    framework=True,
    cls="",
    function="helper",
    decorator="",
)
@example(  # a patch of CUDA's API alone
    line="x = x.to('cuda')",
    path="tests/utils/test_timer.py",
    framework=True,
    cls="",
    function="test_record",
    decorator='@patch("torch.cuda.is_available", lambda: True)',
)
@example(  # a patch.object of torch.cuda alone
    line="e = torch.cuda.Event(enable_timing=True)",
    path="tests/utils/test_timer.py",
    framework=True,
    cls="TimerTest",
    function="test_record",
    decorator='@mock.patch.object(torch.cuda, "synchronize")',
)
@example(  # a patch of something else
    line="n = torch.cuda.device_count()",
    path="tests/utils/test_timer.py",
    framework=True,
    cls="",
    function="test_record",
    decorator='@patch("torch.distributed.barrier")',
)
@example(  # not test code: a GPU module name says nothing
    line="s = torch.cuda.current_stream()",
    path="src/lib/timer_gpu.py",
    framework=False,
    cls="",
    function="helper",
    decorator="",
)
@example(  # TP113 in any test code
    line='scaler = torch.amp.GradScaler("cuda")',
    path="tests/utils/test_timer.py",
    framework=False,
    cls="",
    function="helper",
    decorator="",
)
def test_cuda_in_a_test_of_cuda_is_left(
    line: str, path: str, framework: bool, cls: str, function: str, decorator: str
) -> None:
    code = LINES[line]
    imports = ["import torch"]
    if framework:
        imports += ["import pytest", "from unittest import mock", "from unittest.mock import patch"]
    else:  # the same names, from no test framework
        imports += ["import mocklib as mock", "from mocklib import patch"]
    body = [*([decorator] if decorator else []), f"def {function}(self, x, mock_autocast):"]
    body += [f"    {line}", "    return x"]
    if cls:
        body = [f"class {cls}:", *("    " + b for b in body)]
    source = "\n".join([*imports, "", "", *body]) + "\n"
    test_code = _test_code(path, framework, cls, function)
    subject = test_code and (
        PATHS[path] or CLASSES[cls] or FUNCTIONS[function] or DECORATORS[decorator]
    )
    # a file named as a test (pytest's pattern) and for the GPU is a test of it, collected or
    # a script run by hand (held-out sample AB); TP113 asks only whether it is test code
    file = path.rpartition("/")[2]
    named = (file.startswith("test_") or file.endswith("_test.py")) and PATHS[path]
    subject = subject or (named and code != "TP113")
    left = subject or (code == "TP113" and test_code)
    found = check_text(source, path, ruleset_for([code], None)).findings
    assert bool(found) != left, (path, source, found)
