"""``torchport port --verify``: "verified" only after a run on the simulated accelerator.

The oracle is the run itself (a child process on ``sim``, CUDA's device rules):
a project the port places fully runs to its end and is verified; one where data
stays on the CPU stops at a device error, which is reported at the user's
``file:line`` and makes the exit status 1, whatever the static count says.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check.port._verify import find_entry, verify_entry
from torchport.cli._main import main

_MODEL = (
    "from torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
    "    def forward(self, x):\n        return self.fc(x)\n"
)


@pytest.mark.needs_simulator  # runs the project on sim:0: needs torch 2.7+
def test_a_fully_placed_project_is_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "model.py").write_text(_MODEL)
    (tmp_path / "train.py").write_text(
        "import sys\nimport torch\nfrom model import Net\n\n"
        "if __name__ == '__main__':\n    net = Net()\n    x = torch.ones(int(sys.argv[1]), 4)\n"
        "    print(net(x).sum().item())\n"
    )
    assert main(["port", str(tmp_path), "--verify", "--", "3"]) == 0
    out = capsys.readouterr().out
    assert "Verified on the simulated accelerator" in out
    assert "Not verified" not in out


# Programs that compute with torch but hold no model nor trained tensor (h31n's bandits):
# the port has nothing to place, and a run that ends proves nothing about the accelerator.
_IDLE = {
    "bandit": "q = torch.zeros(3)\nfor t in range(5):\n    a = int(torch.argmax(q))\n"
    "    q[a] += torch.rand(1).item()\nprint(q.sum().item() >= 0)\n",
    "numbers": "print(float(torch.arange(4.0).mean()))\n",
    "guarded": "def main():\n    print(torch.ones(2).sum().item())\n\n\n"
    "if __name__ == '__main__':\n    main()\n",
}


# Each case is a child run on `sim` (~6 s of CPU); the default run keeps one per answer, the
# slow run (`-m slow`) every other.
_DEFAULT_RUN = {("bandit", False), ("guarded", True)}
_IDLE_CASES = [
    pytest.param(
        kind, with_model, marks=() if (kind, with_model) in _DEFAULT_RUN else pytest.mark.slow
    )
    for kind in sorted(_IDLE)
    for with_model in (False, True)
]


@pytest.mark.needs_simulator  # runs the program on sim:0: needs torch 2.7+
@pytest.mark.parametrize(("kind", "with_model"), _IDLE_CASES)
def test_a_run_that_puts_nothing_on_the_accelerator_is_not_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, with_model: bool
) -> None:
    script = tmp_path / "prog.py"
    model = "net = torch.nn.Linear(2, 1)\nprint(net(torch.ones(1, 2)).shape)\n"
    script.write_text("import torch\n\n" + (model if with_model else "") + _IDLE[kind])
    code = main(["port", str(script), "--verify"])
    out = capsys.readouterr().out
    if with_model:  # the model placed: the run used the accelerator
        assert code == 0 and "Verified on the simulated accelerator" in out, out
    else:
        assert code == 1 and "Verified on the simulated accelerator" not in out, out
        assert "put no tensor on it" in out, out


@pytest.mark.needs_simulator  # runs the project on sim:0: needs torch 2.7+
def test_data_left_on_the_cpu_is_a_finding_with_its_line_and_no_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "zipped.py"
    script.write_text(  # the inputs go through a list comprehension the port does not follow
        "import torch\n\nmodel = torch.nn.Linear(4, 2)\n"
        "xs = [torch.randn(3, 4) for _ in range(2)]\n"
        "outs = [model(x) for x in xs]\nprint(len(outs))\n"
    )
    assert main(["port", str(script), "--verify"]) == 1
    out = capsys.readouterr().out
    assert "Verified on the simulated accelerator" not in out
    assert "zipped.py:" in out and "verify: " in out and "at a device error" in out
    found = re.search(r"zipped\.py:(\d+): verify: ", out)
    assert found is not None, out
    line = int(found[1])
    assert "model(x)" in script.read_text().splitlines()[line - 1]


@pytest.mark.needs_simulator  # runs the project on sim:0: needs torch 2.7+
def test_a_cpu_constructor_given_a_device_tensor_is_a_device_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``torch.LongTensor(tokens)`` of tokens the port moved where a second binding (the list
    they were made from) keeps the static report quiet, as in fairseq's emotion_conversion
    ``synthesize.py``: the run stops there, and that is a device error at that line."""
    script = tmp_path / "tokens.py"
    script.write_text(
        "import torch\n\nmodel = torch.nn.Embedding(4, 2)\ntokens = [1, 2]\n"
        "tokens = torch.LongTensor(tokens).unsqueeze(0)\nids = torch.LongTensor(tokens)\n"
        "print(model(ids).shape)\n"
    )
    assert main(["port", str(script), "--verify"]) == 1
    out = capsys.readouterr().out
    assert "at a device error" in out, out
    found = re.search(r"tokens\.py:(\d+): verify: ", out)
    assert found is not None, out
    assert "ids = torch.LongTensor(tokens)" in script.read_text().splitlines()[int(found[1]) - 1]


def test_verify_refuses_a_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "a.py"
    script.write_text("import torch\n")
    assert main(["port", "--diff", str(script), "--verify"]) == 2
    assert "--verify runs the ported files" in capsys.readouterr().err


def test_the_entry_is_the_one_main_script(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(_MODEL)
    assert find_entry([str(tmp_path)])[0] is None  # no script: said, not guessed
    (tmp_path / "eval.py").write_text("if __name__ == '__main__':\n    pass\n")
    assert find_entry([str(tmp_path)])[0] == tmp_path / "eval.py"
    (tmp_path / "train.py").write_text("if __name__ == '__main__':\n    pass\n")
    assert find_entry([str(tmp_path)])[0] == tmp_path / "train.py"
    (tmp_path / "train.py").rename(tmp_path / "other.py")
    entry, why = find_entry([str(tmp_path)])
    assert entry is None and "several scripts" in why
    assert f"torchport port {tmp_path / 'eval.py'} --verify" in why  # spelled out
    (tmp_path / "eval.py").unlink()
    (tmp_path / "setup.py").write_text("if __name__ == '__main__':\n    pass\n")
    assert find_entry([str(tmp_path)])[0] == tmp_path / "other.py"  # setup.py: pip's, not ours


# A folder's files: name -> (what its module level does, the siblings it imports).
# "defs" runs nothing; "call", "loop", "with", "guard" run something; "doc" is a docstring and
# a string statement only. The ways of importing a sibling are drawn too.
_BODIES = {
    "defs": "def f():\n    return 1\n",
    "doc": '"""A module."""\n"""a string left as a comment"""\nX = 1\n',
    "call": "print('hi')\n",
    "loop": "for i in range(2):\n    pass\n",
    "with": "with open(__file__) as fh:\n    pass\n",
    "guard": "def f():\n    return 1\n\n\nif __name__ == '__main__':\n    f()\n",
}
_IMPORTS = ("import {m}\n", "from {m} import f\n", "import {m} as alias\n", "from . import {m}\n")
_NAMES = ("model", "data", "utils", "run", "demo", "train", "setup", "conftest", "__init__")


@st.composite
def _folders(draw: st.DrawFn) -> dict[str, tuple[str, list[tuple[str, int]]]]:
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=4, unique=True))
    folder = {}
    for name in names:
        body = draw(st.sampled_from(sorted(_BODIES)))
        others = [n for n in names if n != name]
        imports = (
            draw(st.lists(st.tuples(st.sampled_from(others), st.integers(0, 3)), max_size=2))
            if others
            else []
        )
        folder[name] = (body, imports)
    return folder


@settings(max_examples=60, deadline=None)
@given(_folders())
def test_a_folder_runs_its_one_script_no_other_file_imports(
    folder: dict[str, tuple[str, list[tuple[str, int]]]],
) -> None:
    imported = {m for _, imports in folder.values() for m, _ in imports}
    runs = {"call", "loop", "with", "guard"}
    tools = {"setup", "conftest", "__init__"}  # run by other tools: never the entry
    runnable = {n for n, (body, _) in folder.items() if body in runs and n not in tools}
    scripts = sorted(runnable - imported) or sorted(runnable)  # a module a script imports: not it
    if len(scripts) > 1 and "train" in scripts:
        scripts = ["train"]  # train.py is the entry among several
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, (body, imports) in folder.items():
            head = "".join(_IMPORTS[way].format(m=m) for m, way in imports)
            (root / f"{name}.py").write_text(head + _BODIES[body])
        entry, why = find_entry([tmp])
        if len(scripts) == 1:
            assert entry == root / f"{scripts[0]}.py", why
        else:
            assert entry is None
            assert ("several scripts" in why) == bool(scripts), why


_FLOAT64 = """\
import numpy as np
import torch

device = torch.device("sim", 0)
a = np.ones((3, 4))
x = torch.from_numpy(a).to(device)  # f64
y = (x * 2).sum()  # derived: float64 already on the device
w = torch.tensor(np.zeros(2), device=device)  # f64
h = torch.ones(2, dtype=torch.float64)  # on the CPU: no finding
print(h.sum().item(), np.ones(3).sum())
z = torch.zeros(2, device=device).double()  # f64
f = torch.from_numpy(a).float().to(device)  # float32 first: no finding
m = torch.nn.Linear(4, 2).to(device)
m.double()  # f64
print(y.item(), w.sum().item(), z.sum().item(), f.sum().item())
"""


@pytest.mark.needs_simulator  # runs the script on sim:0: needs torch 2.7+
def test_float64_reaching_the_device_is_a_finding_at_each_place(tmp_path: Path) -> None:
    """Every line that makes, moves or casts a float64 tensor onto the device, and no other.

    The expected lines are the ones the script marks ``# f64`` (written apart from
    the watch); values already float64 on the device and float64 on the CPU are not
    places.
    """
    script = tmp_path / "doubles.py"
    script.write_text(_FLOAT64)
    expected = {i for i, text in enumerate(_FLOAT64.splitlines(), 1) if text.endswith("# f64")}
    result = verify_entry([str(script)], [], timeout=120)
    assert result.status == "verified", result.summary()  # it runs: CUDA's rules allow float64
    assert not result.verified  # ... but not on every accelerator: said
    found = {u.line for u in result.float64}
    assert found == expected, result.summary()
    assert all(Path(u.path).name == "doubles.py" for u in result.float64)
    assert "doubles.py:6: verify: float64" in result.summary()


@pytest.mark.needs_simulator  # runs the project on sim:0: needs torch 2.7+
def test_a_ported_float64_input_fails_the_verification(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "from_numpy.py"
    script.write_text(
        "import numpy as np\nimport torch\n\nmodel = torch.nn.Linear(4, 2)\n"
        "x = torch.from_numpy(np.ones((3, 4)))\nprint(model(x.float()).sum().item())\n"
    )
    assert main(["port", str(script), "--verify"]) == 1
    out = capsys.readouterr().out
    line = next(i for i, t in enumerate(script.read_text().splitlines(), 1) if "from_numpy" in t)
    assert f"from_numpy.py:{line}: verify: float64" in out
    assert "Verified on the simulated accelerator" not in out


def test_without_torch_verify_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'torch'\")\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    script = tmp_path / "a.py"
    script.write_text("import torch\n\nmodel = torch.nn.Linear(4, 2)\n")
    result = verify_entry([str(script)], [], timeout=120)
    assert result.status == "no-runtime", result
    assert "torch does not import" in result.summary()
    assert "raised on the simulated accelerator" not in result.summary()
    assert main(["port", str(script), "--verify"]) == 1
    out = capsys.readouterr().out
    assert "torch does not import in this environment" in out and "Verified" not in out


def test_where_the_simulator_cannot_install_verify_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(  # torch without the Python device-backend API
        "import torch.utils.backend_registration as registration\n"
        "del registration._setup_privateuseone_for_python_backend\n"
    )
    script = tmp_path / "a.py"
    script.write_text("import torch\n\nprint(torch.ones(2).sum().item())\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    result = verify_entry([str(script)], [], timeout=120)
    assert result.status == "no-simulator", result
    assert "cannot install here" in result.summary() and "2.7" in result.summary()
    assert "raised on the simulated accelerator" not in result.summary()


# A port's device beside the program's own CUDA test: right on a CUDA machine, and on an
# accelerator that is not CUDA the model stays on the CPU while the batch moves.
_OWN_CUDA_TEST = """\
import torch

device = torch.accelerator.current_accelerator() or torch.device("cpu")
model = torch.nn.Linear(4, 2)
if {test}:
    model.cuda()
x = torch.ones(3, 4).to(device)
print(model(x).sum().item())
"""


@pytest.mark.needs_simulator  # runs the script on sim:0: needs torch 2.7+
@pytest.mark.parametrize(
    "test",
    [
        "torch.cuda.is_available()",
        pytest.param("torch.cuda.device_count() > 0", marks=pytest.mark.slow),
        pytest.param("USE_CUDA", marks=pytest.mark.slow),
    ],
)
def test_a_program_that_runs_only_as_cuda_is_not_verified(tmp_path: Path, test: str) -> None:
    """Seen as a CUDA machine the run ends; seen as MPS or XPU it meets a device error."""
    script = tmp_path / "own_test.py"
    prelude = "USE_CUDA = torch.cuda.is_available()\n" if test == "USE_CUDA" else ""
    text = _OWN_CUDA_TEST.format(test=test).replace("\ndevice", f"\n{prelude}device", 1)
    script.write_text(text)
    result = verify_entry([str(script)], [], timeout=120)
    assert (result.status, result.seen_as) == ("device-error", "accelerator"), result.summary()
    assert not result.verified
    line = text.splitlines().index("print(model(x).sum().item())") + 1
    assert (Path(result.path or "").name, result.line) == ("own_test.py", line)
    assert "accelerator that is not CUDA" in result.summary()


@pytest.mark.needs_simulator  # runs the script on sim:0: needs torch 2.7+
def test_a_device_generic_program_is_verified_both_ways(tmp_path: Path) -> None:
    script = tmp_path / "generic.py"
    text = _OWN_CUDA_TEST.format(test="False").replace("model.cuda()", "pass")
    script.write_text(text.replace("torch.nn.Linear(4, 2)", "torch.nn.Linear(4, 2).to(device)"))
    result = verify_entry([str(script)], [], timeout=120)
    assert result.verified, result.summary()
    assert "as a CUDA machine and as an accelerator that is not CUDA" in result.summary()


@pytest.mark.needs_simulator  # runs the program on sim:0: needs torch 2.7+
def test_a_run_to_its_end_with_findings_left_says_they_did_not_stop_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # After patrickloeber/pytorchTutorial's 05_2: `forward(pickle.loads(b))` passes what the
    # port cannot tell from a tensor, `forward(X)` a tensor, so the port cannot move `x` and says
    # so; the run on sim ends, and the summary printed "2 left" then "Verified" with nothing
    # joining the two.
    script = tmp_path / "hand.py"
    script.write_text(
        "import pickle\n\nimport torch\n\n"
        "X = torch.tensor([1.0, 2.0])\nY = torch.tensor([2.0, 4.0])\n"
        "w = torch.tensor(0.0, requires_grad=True)\n\n\n"
        "def forward(x):\n    return w * x\n\n\n"
        "def loss(y, y_pred):\n    return ((y_pred - y) ** 2).mean()\n\n\n"
        "print(forward(pickle.loads(pickle.dumps(5.0))).item())\nloss(Y, forward(X)).backward()\n"
        "print(w.grad.item())\n"
    )
    code = main(["port", str(script), "--verify"])
    out = capsys.readouterr().out
    left = re.search(r"; (\d+) left\.", out)
    assert left is not None and int(left[1]) > 0, out
    assert code == 1  # something is left: never exit 0
    assert "Verified on the simulated accelerator" in out
    assert f"the {left[1]} finding{'s' * (left[1] != '1')} left above did not stop this run" in out
