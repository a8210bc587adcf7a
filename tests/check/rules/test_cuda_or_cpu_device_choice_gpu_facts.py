"""TP109 leaves a CUDA branch alone that only describes the GPU, ``current_device()`` included.

Held-out samples Z, AA, AB and AC (class F1; AC's VisionAI-ClipsMaster ``get_memory_usage``,
``_detect_gpu_features``, ``detect_gpu_info``): ``if torch.cuda.is_available():`` around
``torch.cuda.current_device()`` read only as an argument of the name, property and memory
queries, or as a value of a record of the GPU, judged low: no device is chosen. Its index
used to place anything (``x.to(i)``, ``device=i``, ``set_device(i)``, a dict holding a
dtype beside it that a factory may take as keywords) keeps the finding
(``rules/_gpu_facts.py``).

The oracle is the tables below, each line marked by hand with whether it uses the index for
anything but a description; the branch's flag, where it stands (a function, the module's
top), whether the index is bound to a name, the lines in the branch and one line after the
branch are drawn. TP109 reports the branch exactly when a drawn line is so marked.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# Lines reading the index through the name `i` (bound in the branch to current_device()):
# True where the index is used for something other than a description.
NAMED = {
    "name = torch.cuda.get_device_name(i)": False,
    "props = torch.cuda.get_device_properties(i).total_memory": False,
    "used = torch.cuda.memory_allocated(device=i) / 1024**2": False,
    "cap = torch.cuda.get_device_capability(i)": False,
    "label = f'GPU {i}'": False,
    "text = str(i)": True,  # a string that may be a device's index
    "s = f'cuda:{i}'": True,
    "print(x.to(i))": True,  # printed, but moved first
    "print('on', i)": False,
    "info = {'index': i, 'name': torch.cuda.get_device_name(i)}": False,
    "info = {'index': i, 'name': torch.cuda.get_device_name(i), 'on': 'GPU info'}": False,
    "info = {'index': i, 'name': torch.cuda.get_device_name(i), 'device': 'cuda'}": True,
    "info = {'index': i, 'name': torch.cuda.get_device_name(i), 'at': f'cuda:{i}'}": True,
    "info = {'index': i, 'free': torch.cuda.mem_get_info(i), 'version': torch.version.cuda}": False,
    "x = x.to(i)": True,
    "y = torch.zeros(3, device=i)": True,
    "torch.cuda.set_device(i)": True,
    "kw = {'device': i, 'dtype': torch.float16}": True,
    "info = {'index': i}": True,  # one entry: no record of the GPU
    "dev = torch.device('cuda', i)": True,
    "devices = [i]": True,
}
# Lines calling current_device() themselves (no name)
DIRECT = {
    "used = torch.cuda.memory_reserved(torch.cuda.current_device())": False,
    "name = torch.cuda.get_device_name(torch.cuda.current_device())": False,
    "label = f'GPU {torch.cuda.current_device()}'": False,
    "text = str(torch.cuda.current_device())": True,
    "info = {'current_device': torch.cuda.current_device(), "
    "'allocated': torch.cuda.memory_allocated() if ok else 0, "
    "'version': torch.version.cuda}": False,
    "info = {'current_device': torch.cuda.current_device(), 'count': n}": False,
    "n = torch.cuda.device_count()": False,
    "x = x.to(torch.cuda.current_device())": True,
    "y = torch.ones(2, device=torch.cuda.current_device())": True,
    "kw = {'device': torch.cuda.current_device(), 'dtype': dtype}": True,
    "kw = {'current_device': torch.cuda.current_device(), 'count': len(x)}": True,
    "s = f'cuda:{torch.cuda.current_device()}'": True,
    "model.cuda(torch.cuda.current_device())": True,
}
# After the branch, in the scope holding it: True where it places with the name `i`
AFTER = {
    "": False,
    "print(i)": False,
    "x = x.to(i)": True,
    "z = torch.cuda.memory_stats(i)": False,
    "y = x.to(f'cuda:{i}')": True,
    "print(f'on {i}')": False,
}
TESTS = {"call": "torch.cuda.is_available()", "flag": "ok"}


def program(where: str, test: str, named: bool, lines: list[str], after: str) -> str:
    indent = "    " if where == "function" else ""
    head = ["import torch", "", "n = torch.cuda.device_count()", "dtype = torch.float32"]
    head += ["ok = torch.cuda.is_available()", ""]
    if where == "function":
        head.append("def report(x, model):")
    body = [f"if {TESTS[test]}:"]
    if named:
        body.append("    i = torch.cuda.current_device()")
    body += [f"    {line}" for line in lines]
    if after and where == "module":  # read in a function of the module
        body += ["", "def later(x):", f"    {after}", "    return x"]
    elif after:
        body.append(after)
    if where == "function":
        body.append("return x")
    return "\n".join([*head, *(indent + line if line else line for line in body)]) + "\n"


@settings(max_examples=150)
@given(
    where=st.sampled_from(["function", "module"]),
    test=st.sampled_from(sorted(TESTS)),
    named=st.booleans(),
    data=st.data(),
)
def test_a_branch_that_only_describes_the_gpu_picks_no_device(
    where: str, test: str, named: bool, data: st.DataObject
) -> None:
    table = NAMED if named else DIRECT
    lines = data.draw(st.lists(st.sampled_from(sorted(table)), min_size=1, max_size=3))
    after = data.draw(st.sampled_from(sorted(AFTER))) if named else ""
    source = program(where, test, named, lines, after)
    found = [f.code for f in check_source(source, select=["TP109"])]
    expected = any(table[line] for line in lines) or AFTER.get(after, False)
    assert (found == ["TP109"]) == expected, source
    assert len(found) <= 1, source


def test_the_index_bound_twice_or_declared_global_is_not_followed() -> None:
    """A name bound again another way, or declared ``global``, keeps the finding."""
    base = "import torch\n\ndef f(x):\n    if torch.cuda.is_available():\n"
    base += "        i = torch.cuda.current_device()\n"
    base += "        name = torch.cuda.get_device_name(i)\n"
    described = base + "    return x\n"
    assert [f.code for f in check_source(described, select=["TP109"])] == []
    loop = base + "    for i in range(2):\n        x = x.to(i)\n    return x\n"
    assert [f.code for f in check_source(loop, select=["TP109"])] == ["TP109"]
    declared = base.replace("def f(x):\n", "def f(x):\n    global i\n") + "    return x\n"
    assert [f.code for f in check_source(declared, select=["TP109"])] == ["TP109"]


def test_each_line_alone_decides_the_finding() -> None:
    """Every entry of the tables alone (a line in the branch, or the name's read after it),
    in a function and at the module's top, both tests of CUDA."""
    cases = [(True, [line], "") for line in NAMED] + [(False, [line], "") for line in DIRECT]
    cases += [(True, ["name = torch.cuda.get_device_name(i)"], after) for after in AFTER]
    for where in ("function", "module"):
        for test in TESTS:
            for named, lines, after in cases:
                source = program(where, test, named, lines, after)
                table = NAMED if named else DIRECT
                expected = any(table[line] for line in lines) or AFTER[after]
                found = [f.code for f in check_source(source, select=["TP109"])]
                assert (found == ["TP109"]) == expected, source
