"""Samples K and M's multi-GPU tests: TP101 leaves CUDA in a test that uses several GPUs.

``rules/_test_code.py`` (``several_devices``, ``_starts_nccl``): a test function naming
two or more CUDA devices by index (pytorch3d's EGL context per device, ``cuda:0`` beside
``cuda:1``; captum's sort of ``torch.device("cuda:13")``, ``"cuda:0"``, ...; a
synchronized BatchNorm under ``DataParallelWithCallback(..., device_ids=[0, 1])``) and a
test module that starts an NCCL process group (torchdrug's
``comm.init_process_group("nccl")`` reduce test) use CUDA's several devices on purpose:
one MPS or XPU device cannot stand in. A test naming one device, however often, is not
this (pytorch3d's ``cuda:0`` tests, judged real).

Generated files draw the path and whether a test framework is imported, the reported
line, and the other device mentions of the function; the oracle counts the distinct
indices written in the function, apart from the code under test.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# A line TP101 reports, with the CUDA indices it writes itself.
LINES = {
    'x = x.to("cuda:0")': {0},
    "sync_bn.cuda()": set(),
    'key = torch.device("cuda:13")': {13},
    'out = model(x.to(device="cuda:1"))': {1},
}
# Other statements of the same function, with the CUDA indices they write.
MENTIONS = {
    'a = torch.device("cuda:1")': {1},
    'b = torch.device("cuda", 2)': {2},
    'c = torch.device("cuda:0")': {0},
    "m = DataParallel(m, device_ids=[0, 1])": {0, 1},
    "m = DataParallel(m, device_ids=[3])": {3},
    'd = torch.device("cpu")': set(),
    'e = "cuda:x"': set(),  # not an index
    'f = torch.device("mps", 1)': set(),  # another accelerator's
    "g = [0, 1]": set(),  # numbers, no device
}
PATHS = {"tests/test_render.py": True, "src/render.py": False, "test_render.py": None}


@given(
    path=st.sampled_from(sorted(PATHS)),
    framework=st.booleans(),
    line=st.sampled_from(sorted(LINES)),
    mentions=st.lists(st.sampled_from(sorted(MENTIONS)), max_size=3),
)
@example(  # pytorch3d's EGL contexts: cuda:0 and cuda:1
    path="tests/test_render.py",
    framework=True,
    line='x = x.to("cuda:0")',
    mentions=['a = torch.device("cuda:1")'],
)
@example(  # `torch.device("cuda", 2)` is a second device
    path="test_render.py",
    framework=True,
    line='x = x.to("cuda:0")',
    mentions=['b = torch.device("cuda", 2)'],
)
@example(  # one device, written twice: a test that runs on any one device
    path="tests/test_render.py",
    framework=True,
    line='x = x.to("cuda:0")',
    mentions=['c = torch.device("cuda:0")'],
)
@example(  # the synchronized BatchNorm over two GPUs
    path="tests/test_render.py",
    framework=False,
    line="sync_bn.cuda()",
    mentions=["m = DataParallel(m, device_ids=[0, 1])"],
)
@example(  # not test code: a program using two GPUs is still reported
    path="src/render.py",
    framework=False,
    line='x = x.to("cuda:0")',
    mentions=['a = torch.device("cuda:1")'],
)
def test_a_test_using_several_gpus_is_left(
    path: str, framework: bool, line: str, mentions: list[str]
) -> None:
    imports = ["import torch", "from torch.nn import DataParallel"]
    if framework:
        imports.append("import unittest")
    body = ["class Render:", "    def check_contexts(self, x, model, sync_bn, m):"]
    body += [f"        {m}" for m in mentions]
    body += [f"        {line}", "        return x"]
    source = "\n".join([*imports, "", "", *body]) + "\n"
    reported_line = source.splitlines().index(f"        {line}") + 1
    indices = set(LINES[line]).union(*(MENTIONS[m] for m in mentions))
    test_code = PATHS[path] or (PATHS[path] is None and framework)
    left = bool(test_code) and len(indices) >= 2
    found = check_text(source, path, ruleset_for(["TP101"], None)).findings
    at_line = [f for f in found if f.line == reported_line]
    assert bool(at_line) != left, (path, source, found)


BACKENDS = {
    '"nccl"': True,
    '"NCCL"': True,
    'backend="nccl"': True,
    '"gloo"': False,
    'backend="gloo"': False,
    'init_method="nccl"': False,  # not the backend
}


@given(
    path=st.sampled_from(sorted(PATHS)),
    framework=st.booleans(),
    backend=st.sampled_from(sorted(BACKENDS)),
)
@example(path="tests/test_comm.py", framework=True, backend='"nccl"')  # torchdrug's
def test_a_test_module_starting_nccl_is_left(path: str, framework: bool, backend: str) -> None:
    """The NCCL group is started in another function of the module (a worker)."""
    imports = ["import torch", "from mylib import comm"]
    if framework:
        imports.append("import unittest")
    source = "\n".join(
        [
            *imports,
            "",
            "",
            "def worker(rank):",
            f"    comm.init_process_group({backend}, rank=rank)",
            "",
            "",
            "class ReduceTest:",
            "    def setUp(self):",
            '        self.obj = {"a": torch.rand(5).cuda()}',
            "",
        ]
    )
    reported_line = source.splitlines().index('        self.obj = {"a": torch.rand(5).cuda()}') + 1
    test_code = PATHS.get(path, "tests/" in path) or (PATHS.get(path) is None and framework)
    left = bool(test_code) and BACKENDS[backend]
    found = check_text(source, path, ruleset_for(["TP101"], None)).findings
    at_line = [f for f in found if f.line == reported_line]
    assert bool(at_line) != left, (path, source, found)


# How the object is moved (and whether by its own `cuda()` method), and the statement
# after it (and whether it asserts the moved object is on CUDA).
MOVES = {"y = x.cuda()": True, "y = x.cuda(0)": True, 'y = x.to("cuda:0")': False}
NEXT = {
    'self.assertEqual(y.device.type, "cuda")': True,
    "assert y.is_cuda": True,
    "self.assertEqual(cuda_device, y.device)": False,  # pytorch3d's `to` tests, judged real
    'self.assertEqual(z.device.type, "cuda")': False,  # another object
    "print(y)": False,
    'z = y.device.type == "cuda"': False,  # no assertion
}


@given(
    path=st.sampled_from(sorted(PATHS)),
    framework=st.booleans(),
    move=st.sampled_from(sorted(MOVES)),
    then=st.sampled_from(sorted(NEXT)),
    gap=st.booleans(),
)
@example(  # pytorch3d's `test_rendering_utils.py`
    path="tests/test_render.py",
    framework=True,
    move="y = x.cuda()",
    then='self.assertEqual(y.device.type, "cuda")',
    gap=False,
)
@example(
    path="tests/test_render.py",
    framework=True,
    move="y = x.cuda()",
    then='self.assertEqual(y.device.type, "cuda")',
    gap=True,
)
def test_a_test_of_the_cuda_method_is_left(
    path: str, framework: bool, move: str, then: str, gap: bool
) -> None:
    """``gap``: a statement between the move and the assertion (then it is not next)."""
    imports = ["import torch", *(["import unittest"] if framework else [])]
    body = ["class Render:", "    def check_move(self, x, z, cuda_device):", f"        {move}"]
    body += ["        w = 1"] * gap + [f"        {then}", "        return y"]
    source = "\n".join([*imports, "", "", *body]) + "\n"
    reported_line = source.splitlines().index(f"        {move}") + 1
    test_code = PATHS[path] or (PATHS[path] is None and framework)
    left = bool(test_code) and MOVES[move] and NEXT[then] and not gap
    found = check_text(source, path, ruleset_for(["TP101"], None)).findings
    at_line = [f for f in found if f.line == reported_line]
    assert bool(at_line) != left, (path, source, found)
