"""TP101, TP102, TP109 and TP401 leave benchmark code: it times one device on purpose.

Sample M (pytorch3d's ``tests/benchmarks/bm_*.py``, its test files' ``bm_*`` helpers and
timing closures): a benchmark's device and its timing syncs are where the benchmark
runs, its choice (low value). A folder or file named ``benchmark`` is not enough: PARL's
``benchmark/`` holds its training programs (samples A-I judged their rows real).
Generated files draw the folder, the file name, a test framework import, the function's
name, whether it returns a function defined in it (a timing closure) and where the
statement sits. The oracle, written here: left exactly when the file or the function is
named ``bm_*``, or the code is test code in a function that returns its inner function
(TP109 also leaves all test code, as before).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

STATEMENTS = {
    "TP101": "x = x.cuda()",
    "TP102": "torch.cuda.set_device(0)",
    "TP109": 'device = "cuda" if torch.cuda.is_available() else "cpu"; x.to(device)',
    "TP401": "torch.cuda.synchronize()",
}
FOLDERS = {
    "src": False,
    "tests": False,
    "benchmarks": False,  # PARL's `benchmark/` holds training programs
    "benchmark": False,
}
FILES = {
    "render.py": False,
    "bm_render.py": True,
    "bench_render.py": False,
    "benchmark.py": False,
    "benchmarking.py": False,
    "test_render.py": False,
    "bmx.py": False,
}
NAMES = {
    "bm_render": True,
    "bm_": True,
    "benchmark_forward": False,
    "bm": False,
    "benchmarking_suite": False,
    "bmx": False,
    "make_inputs": False,
    "test_render": False,
}


@given(
    code=st.sampled_from(sorted(STATEMENTS)),
    folder=st.sampled_from(sorted(FOLDERS)),
    file=st.sampled_from(sorted(FILES)),
    framework=st.booleans(),
    name=st.sampled_from(sorted(NAMES)),
    closure=st.booleans(),
    inner=st.booleans(),
)
def test_benchmark_code_is_left(
    code: str, folder: str, file: str, framework: bool, name: str, closure: bool, inner: bool
) -> None:
    statement = STATEMENTS[code]
    outer_line = "    pass" if inner else f"    {statement}"
    inner_line = f"        {statement}" if inner else "        pass"
    source = "\n".join(
        [
            "import torch",
            "import pytest" if framework else "",
            "",
            "",
            f"def {name}(x):",
            outer_line,
            "",
            "    def work():",
            inner_line,
            "",
            "    return work" if closure else "    return x",
            "",
        ]
    )
    path = f"{folder}/{file}"
    test_code = (
        folder == "tests"
        or (file.startswith("test_") and framework)
        or (name.startswith("test") and framework)
    )
    left = FOLDERS[folder] or FILES[file] or NAMES[name] or (closure and test_code)
    if code == "TP109":
        left = left or test_code
    found = check_text(source, path, ruleset_for([code], None)).findings
    assert bool(found) != left, (path, source, found)


CASES = ("cuda", "CUDA", "Cuda", "cUdA", "cuda:0", "CUDA:1", "MPS", "Cpu", "xpu")
NOT_DEVICES = ("GPU", "gpu", "cudax", "CUDA_", "", "nvidia")


@given(
    spelled=st.sampled_from(CASES + NOT_DEVICES),
    subject=st.sampled_from(("device", "x.device.type", "dev", "str(device)")),
    op=st.sampled_from(("==", "!=")),
)
def test_a_device_type_compared_in_any_case_is_a_device_test(
    spelled: str, subject: str, op: str
) -> None:
    """``if device == "CUDA":`` (torchdrug's tests) tests the device's type like ``"cuda"``.

    The oracle: the string names a device type written here ({cuda, cpu, mps, xpu}) in
    any case, with or without an index, exactly when TP101 leaves the arm's ``.cuda()``
    (a device test around the move: ported code), except the arm of ``!= "CUDA"``, where
    the device is not CUDA (round 5f: the move runs on the CPU, MPS, XPU).
    """
    source = f'import torch\n\n\ndef run(x, device, dev):\n    if {subject} {op} "{spelled}":\n'
    source += "        x = x.cuda()\n    return x\n"
    kind = spelled.partition(":")[0].lower()
    left = kind in {"cuda", "cpu", "mps", "xpu"} and not (kind == "cuda" and op == "!=")
    found = check_text(source, "src/run.py", ruleset_for(["TP101"], None)).findings
    assert bool(found) != left, source
