"""TP112, TP401, TP102 and TP108 in test code, by the one test-code standard.

``rules/_test_code.py``: a test whose subject is an accelerator (named, marked or
skipped for it, or asserting it is there before the line) uses that accelerator on
purpose (pytorch/ignite's ``test_create_supervised_trainer_on_tpu`` with ``"xla"``, its
Horovod test that sets the wrong CUDA device after ``assert torch.cuda.is_available()``,
sample J); a CUDA query in a test's skip condition decides where the test runs; float64
in a test file that never names MPS never reaches MPS. Generated files draw the folder,
the imports, the function's name, a decorator, a statement before the line and the
line itself; the oracle is the standard written out on those parts, apart from the code.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# A statement, the rule that reports it outside test code, and the accelerator it names.
STATEMENTS = {
    'trainer_device = "xla"': ("TP112", "xla"),
    'x = x.to("xla:0")': ("TP112", "xla"),
    'y = x.to("mps")': ("TP112", "mps"),
    "n = torch.cuda.device_count()": ("TP401", "cuda"),
    "torch.cuda.set_device(0)": ("TP102", "cuda"),
}
STATEMENTS_J = ("torch.cuda.set_device(0)", 'trainer_device = "xla"')
# A function name, and the accelerators it names.
NAMES = {
    "test_step": (),
    "test_trainer_on_tpu": ("xla",),
    "test_xla_step": ("xla",),
    "test_step_cuda": ("cuda",),
    "_test_multi_gpu": ("cuda",),
    "helper": (),
    "run_on_mps": ("mps",),
}
# A decorator, the accelerators it marks the test for, and whether it is a device guard
# for CUDA anywhere (the guard analysis, in test code or not).
DECORATORS = {
    "": ((), False),
    "@pytest.mark.tpu": (("xla",), False),
    "@pytest.mark.skipif(not idist.has_xla_support, reason='no xla')": (("xla",), False),
    "@pytest.mark.slow": ((), False),
    "@skipifnocuda": (("cuda",), False),
    "@requires_tpu": (("xla",), False),
    "@only_once": ((), False),
    "@profile_gpu_memory": ((), False),  # named for the GPU, but no gate
    "@pytest.mark.parametrize('device', ['cpu', 'xla', 'cuda', 'mps'])": ((), False),
}
# A statement before (or after) the line, and the accelerators it makes the subject when
# it comes first (it asserts the accelerator is there, or ends the test without it).
GUARDS = {
    "": (),
    "assert torch.cuda.is_available()": ("cuda",),
    "assert idist.has_xla_support": ("xla",),
    "if not idist.has_xla_support:\n    pytest.skip('no xla')": ("xla",),
    "if not idist.has_xla_support:\n    print('no xla')": (),
    "assert x is not None": (),
}
IMPORTS = {"": False, "import pytest": True, "import unittest": True}
# A module pytest collects (``test_*.py``) importing a test framework is test code throughout.
FILES = ("test_trainer.py", "trainer.py")


@given(
    folder=st.sampled_from(("src", "tests")),
    imports=st.sampled_from(sorted(IMPORTS)),
    name=st.sampled_from(sorted(NAMES)),
    decorator=st.sampled_from(sorted(DECORATORS)),
    guard=st.sampled_from(sorted(GUARDS)),
    guard_after=st.booleans(),
    statement=st.sampled_from(sorted(STATEMENTS)),
    file=st.sampled_from(FILES),
)
# sample J's two: ignite's Horovod test of the wrong CUDA index, its TPU trainer test
@example(
    "tests", "", "helper", "", "assert torch.cuda.is_available()", False, STATEMENTS_J[0], FILES[0]
)
@example(
    "tests", "", "test_trainer_on_tpu", "@pytest.mark.tpu", "", False, STATEMENTS_J[1], FILES[0]
)
@example(
    "src",
    "import pytest",
    "helper",
    "",
    "assert idist.has_xla_support",
    False,
    STATEMENTS_J[1],
    FILES[1],
)
def test_a_test_whose_subject_is_the_accelerator_is_left(
    folder: str,
    imports: str,
    name: str,
    decorator: str,
    guard: str,
    guard_after: bool,
    statement: str,
    file: str,
) -> None:
    guard_lines = guard.splitlines()
    body = [statement, *guard_lines] if guard_after else [*guard_lines, statement]
    function = [*([decorator] if decorator else []), f"def {name}(x, idist):"]
    function += ["    " + line for line in body]
    source = "\n".join(["import torch", imports, "", "", *function]) + "\n"
    code, accelerator = STATEMENTS[statement]
    test_code = folder == "tests" or (
        IMPORTS[imports] and (name.startswith("test") or file.startswith("test_"))
    )
    subject = (
        accelerator in NAMES[name]
        or accelerator in DECORATORS[decorator][0]
        or (accelerator in GUARDS[guard] and not guard_after)
    )
    path = f"{folder}/{file}"
    line = source.splitlines().index("    " + statement) + 1
    found = check_text(source, path, ruleset_for([code], None)).findings
    # (the guard's own `assert torch.cuda.is_available()` is TP401's, on its own line)
    assert any(f.line == line for f in found) != (test_code and subject), (path, source)


@given(
    folder=st.sampled_from(("src", "tests")),
    imports=st.sampled_from(sorted(IMPORTS)),
    name=st.sampled_from(("test_launch", "launch")),
    query=st.sampled_from(("torch.cuda.device_count() < 1", "not torch.cuda.is_available()")),
    file=st.sampled_from(("test_launcher.py", "launcher.py")),
)
def test_a_cuda_query_in_a_test_s_skip_condition_is_left(
    folder: str, imports: str, name: str, query: str, file: str
) -> None:
    decorator = (
        "@pytest.mark.parametrize('backend', ['gloo', pytest.param('nccl', "
        f"marks=pytest.mark.skipif({query}, reason='no gpu'))])"
    )
    source = "\n".join(
        ["import torch", imports, "", "", decorator, f"def {name}(backend):", "    run(backend)"]
    )
    test_code = folder == "tests" or (
        IMPORTS[imports] and (name.startswith("test") or file.startswith("test_"))
    )
    path = f"{folder}/{file}"
    found = check_text(source + "\n", path, ruleset_for(["TP401"], None)).findings
    # `is_available()` outside an assert is a CUDA-or-CPU choice (TP109's): never TP401's.
    reported = "device_count" in query and not test_code
    assert bool(found) == reported, (path, source)


@given(
    folder=st.sampled_from(("src", "tests")),
    imports=st.sampled_from(sorted(IMPORTS)),
    name=st.sampled_from(("test_adjoint", "solve")),
    names_mps=st.sampled_from(
        (
            "",
            "ON_MPS = torch.backends.mps.is_available()",
            "# MPS too",
            "DEVICES = ['cpu', 'mps']",
            "text = json.dumps(timestamps)",  # "mps" inside words: not MPS
        )
    ),
    statement=st.sampled_from(
        (
            "t = torch.linspace(0, 1, 5, dtype=torch.float64, device=device)",
            "y = x.double().to(device)",
            "y = x.to(device).double()",
        )
    ),
    file=st.sampled_from(("test_solver.py", "solver.py")),
)
def test_float64_in_a_test_that_never_runs_on_mps_is_left(
    folder: str, imports: str, name: str, names_mps: str, statement: str, file: str
) -> None:
    function = [f"def {name}(x, device):", f"    {statement}", "    return t"]
    source = "\n".join(["import torch", imports, names_mps, "", "", *function]) + "\n"
    test_code = folder == "tests" or (
        IMPORTS[imports] and (name.startswith("test") or file.startswith("test_"))
    )
    path = f"{folder}/{file}"
    found = check_text(source, path, ruleset_for(["TP108"], None)).findings
    mps = names_mps and "dumps" not in names_mps
    assert bool(found) != (test_code and not mps), (path, source)
