"""Differential fuzzing of ``port`` on generated multi-file projects.

A project is a folder the port gets whole: a script (``train.py``) that imports
its model, helpers that return tensors, module-level tensors and factories from
the project's other modules, in the forms real projects use (``from model import
Net``, ``import model as m``, ``from pkg.nets import Net``, ``from .helpers import
make_mask`` inside a package, a base class in one module and the model in
another). For every generated project:

* the port raises nothing and is idempotent (a second port changes no file);
* run on the CPU, the ported script records the same values as the original;
* run with ``meta`` standing in for the accelerator (the stand-in of
  ``test_port_fuzz.py``), every parameter, buffer and tensor input of every
  forward is on the accelerator, or the port reported what it left: never
  "0 left" with data on the CPU.

The oracle shares no code with the port: it runs the programs and watches the
forwards.
"""

from __future__ import annotations

import os
import runpy
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import RUN_PROJECT
from tests.check.port.siblings import load
from tests.preloaded import run_python
from torchport.check import port_paths

HERE = Path(__file__).parent
port_fuzz = load("test_port_fuzz_stand_in", HERE / "test_port_fuzz.py")

_NET = """
class {name}({base}):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""
_HELPERS = {
    "ones": "def make_mask(n):\n    return torch.ones(n, 2)\n",
    "numpy": (
        "def make_mask(n):\n"
        "    mask = np.tril(np.ones((n, 2), dtype=np.float32))\n"
        "    return torch.from_numpy(mask)\n"
    ),
    "chain": "def make_mask(n):\n    return torch.arange(n * 2).view(n, 2).float() / 10\n",
}


# A plain function of the model's module handed the model's output (a device value once
# ported): it makes the CPU tensor that output meets, returns one, or reads it into numpy.
# That module is ported on its own, its parameters not known to hold device values.
_TAKES = {
    "shift": "def shift(y):\n    return y + torch.ones(2)\n",
    "target": "def shift(y):\n    return y - torch.zeros(y.shape[0], 2)\n",
    "numpy": "def shift(y):\n    return y * float(np.abs(y.detach().numpy()).max() > -1)\n",
    # made where the output is (fairseq's `lengths_to_padding_mask`): nothing to report
    "moved": "def shift(y):\n    return y + torch.ones(2).float().to(y.device)\n",
}

# TCN's `get_batch`: a function of the model's module returning slices of what it is given.
# The batch lives where the data handed to it does: the script's own tensor (moved by the
# port: nothing to report) or one the module makes on the CPU (a leftover: reported).
_GET_BATCH = (
    "def get_batch(source, i):\n"
    "    inp = source[i:i + 2].contiguous()\n"
    "    return inp, source[i + 1:i + 3, :2]\n"
)
BATCHES = (None, "here", "module")

LAYOUTS = ("flat", "package", "alias")
HELPERS = (None, *_HELPERS)
TAKES = (None, *_TAKES)


@st.composite
def projects(draw: st.DrawFn) -> dict[str, str]:
    """Files (relative path -> text) of a project whose entry is ``train.py``."""
    return project_files(
        draw(st.sampled_from(LAYOUTS)),
        based=draw(st.booleans()),
        factory=draw(st.booleans()),
        helper=draw(st.sampled_from(HELPERS)),
        module_tensor=draw(st.booleans()),
        takes=draw(st.sampled_from(TAKES)),
        batch=draw(st.sampled_from(BATCHES)),
        rebound=draw(st.booleans()),
    )


def project_files(
    layout: str,
    *,
    based: bool,
    factory: bool,
    helper: str | None,
    module_tensor: bool,
    takes: str | None = None,
    batch: str | None = None,
    rebound: bool = False,
) -> dict[str, str]:
    """One project: the model's module (its base class apart when ``based``), ``train.py``.

    ``rebound``: the script binds its model to the imported class's own name
    (``GRUmodel = GRUmodel(...)``), where the layout imports the class by name.
    """
    files: dict[str, str] = {}
    base_text = ""
    model_lines = ["import numpy as np", "import torch", "from torch import nn"]
    if based:
        base_import = {
            "flat": "from base import Base",
            "alias": "from base import Base",
            "package": "from .base import Base",
        }[layout]
        model_lines.append(base_import)
        base_text = "from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n"
    model_lines.append(_NET.format(name="Net", base="Base" if based else "nn.Module"))
    if factory:
        model_lines.append("def build():\n    return Net()\n")
    if helper is not None:
        model_lines.append(_HELPERS[helper])
    if module_tensor:
        model_lines.append("SCALE = torch.full((2,), 0.5)\n")
    if takes is not None:
        model_lines.append(_TAKES[takes])
    if batch is not None:
        model_lines.append(_GET_BATCH)
    if batch == "module":
        model_lines.append("DATA = torch.arange(40.0).view(10, 4) / 10\n")
    model_text = "\n".join(model_lines) + "\n"
    names = ["Net"] + (["build"] if factory else []) + (["make_mask"] if helper else [])
    names += ["SCALE"] if module_tensor else []
    names += ["shift"] if takes is not None else []
    names += ["get_batch"] if batch is not None else []
    names += ["DATA"] if batch == "module" else []
    if layout == "package":
        files["pkg/__init__.py"] = ""
        files["pkg/nets.py"] = model_text
        if based:
            files["pkg/base.py"] = base_text
        head = f"from pkg.nets import {', '.join(names)}"
        q = ""
    else:
        files["model.py"] = model_text
        if based:
            files["base.py"] = base_text
        head = f"from model import {', '.join(names)}" if layout == "flat" else "import model as m"
        q = "m." if layout == "alias" else ""
    body = ["import torch", head, ""]
    net = "Net" if rebound and layout != "alias" and not factory else "net"
    body.append(f"{net} = {q}build()" if factory else f"{net} = {q}Net()")
    body.append(f"opt = torch.optim.SGD({net}.parameters(), lr=0.1)")
    body.append("x = torch.randn(6, 4)")
    body.append("y = torch.randn(6, 2)")
    extra = ""
    if helper is not None:
        body.append(f"mask = {q}make_mask(6)")
        extra += " * mask"
    if module_tensor:
        extra += f" * {q}SCALE"
    body += [
        "for step in range(2):",
        f"    out = {net}(x){extra}",
        *([f"    out = {q}shift(out)"] if takes is not None else []),
        "    loss = ((out - y) ** 2).mean()",
        "    opt.zero_grad()",
        "    loss.backward()",
        "    opt.step()",
        "    OUT.append(loss.item())",
    ]
    if batch is not None:
        made = "torch.arange(40.0).view(10, 4) / 10" if batch == "here" else f"{q}DATA"
        body += [
            f"data = {made}",
            "for i in range(0, 6, 2):",
            f"    inp, tgt = {q}get_batch(data, i)",
            f"    OUT.append(({net}(inp) - tgt).sum().item())",
        ]
    files["train.py"] = "\n".join(body) + "\n"
    return files


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _read(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def _run(root: Path, *, meta: bool) -> tuple[list[Any] | BaseException, list[str]]:
    """What ``train.py`` appends to ``OUT`` (or what it raised), and off-device forwards."""
    out: list[Any] = []
    record: dict[str, list[str]] = {"off": []}
    before = set(sys.modules)
    sys.path.insert(0, str(root))
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if meta:
                with port_fuzz.meta_accelerator(record):
                    runpy.run_path(str(root / "train.py"), {"OUT": out}, "__main__")
            else:
                runpy.run_path(str(root / "train.py"), {"OUT": out}, "__main__")
    except Exception as exc:  # the program's own failure: compared, not raised
        return exc, record["off"]
    finally:
        sys.path.remove(str(root))
        for name in set(sys.modules) - before:  # the project's modules: fresh next time
            where = getattr(sys.modules[name], "__file__", None) or ""
            if where.startswith(str(root)):
                del sys.modules[name]
    return out, record["off"]


def check_project(files: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        _write(root, files)
        before, _ = _run(root, meta=False)
        assert not isinstance(before, BaseException), before
        result = port_paths([root], jobs=1)
        assert not result.errors, result.errors
        ported = _read(root)
        again = port_paths([root], jobs=1)
        assert not again.changed, f"port is not idempotent: {[c.path for c in again.changed]}"
        after, _ = _run(root, meta=False)
        text = "\n".join(f"--- {k}\n{v}" for k, v in ported.items())
        assert not isinstance(after, BaseException), f"port raised {after!r}\n{text}"
        assert after == before, f"results differ: {before} != {after}\n{text}"
        on_meta, off = _run(root, meta=True)
        left = [str(f) for f in result.remaining] + [str(f) for f in again.remaining]
        if isinstance(on_meta, BaseException) or off:
            what = repr(on_meta) if isinstance(on_meta, BaseException) else off[:3]
            assert left, f"data left off the accelerator ({what}), port said nothing\n{text}"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(projects())
def test_a_project_is_ported_whole_or_what_is_left_is_said(files: dict[str, str]) -> None:
    check_project(files)


@pytest.mark.parametrize("returns", ["tensor", "tuple"])
@pytest.mark.parametrize("layout", ["flat", "package"])
def test_a_model_bound_to_its_imported_class_s_own_name_is_placed(
    layout: str, returns: str
) -> None:
    """``from model import Net`` then ``Net = Net()``: once "0 left" with the model on the CPU.

    A later ``Net(x)`` is a forward, not a build: no ``.to(device)`` on what it returns
    (a tuple, in GRU code: ``yhat, _ = GRUmodel(x)``).
    """
    files = project_files(
        layout, based=False, factory=False, helper=None, module_tensor=False, rebound=True
    )
    assert "Net = Net()" in files["train.py"]
    if returns == "tuple":
        model = "pkg/nets.py" if layout == "package" else "model.py"
        files[model] = files[model].replace("return self.fc(x)", "return self.fc(x), x")
        files["train.py"] = files["train.py"].replace("out = Net(x)", "out, _ = Net(x)")
        assert "out, _ = Net(x)" in files["train.py"]
    check_project(files)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        _write(root, files)
        assert not port_paths([root], jobs=1).remaining
        _, off = _run(root, meta=True)
        assert not off, off


@pytest.mark.parametrize("batch", ["here", "module"])
@pytest.mark.parametrize("layout", ["flat", "package"])
def test_a_rebound_model_s_leftover_input_is_still_said_after_the_port(
    layout: str, batch: str
) -> None:
    """``Net = Net()`` with batches from another module's CPU tensor (the project fuzzer's
    draw): the port's second round reads ``Net = Net().to(device)``, which no longer looked
    like the name rebound to its instance, so ``Net(inp)`` was a build and the CPU input
    that meets it went unsaid ("0 left", a mixed-device error on the accelerator)."""
    files = project_files(
        layout, based=False, factory=False, helper=None, module_tensor=False, batch=batch,
        rebound=True,
    )  # fmt: skip
    check_project(files)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        _write(root, files)
        result = port_paths([root], jobs=1)
        _, off = _run(root, meta=True)
        assert not off or result.remaining, off  # placed, or what is left is said
        assert not port_paths([root], jobs=1).changed  # idempotent


def test_the_project_check_sees_a_model_imported_from_a_sibling() -> None:
    """The oracle is not blind: the unported project leaves the model on the CPU."""
    model = "import torch\nfrom torch import nn\n" + _NET.format(name="Net", base="nn.Module")
    train = (
        "import torch\nfrom model import Net\n\nnet = Net()\n"
        "OUT.append(net(torch.ones(1, 4)).sum().item())\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, {"model.py": model, "train.py": train})
        _, off = _run(root, meta=True)
        assert off  # unported: the model is on the CPU
        result = port_paths([root], jobs=1)
        assert [Path(c.path).name for c in result.changed] == ["train.py"]
        _, off = _run(root, meta=True)
        assert off == [] and not result.remaining


def test_a_lone_file_has_no_project() -> None:
    """stdin and strings: nothing is looked up on disk."""
    from torchport.check.port import port_source

    text = "import torch\nfrom model import Net\n\nnet = Net()\n"
    assert port_source(text) == text


_SIM_CHILD = (
    RUN_PROJECT
    + """
import json
from torchport.testing import simulate_accelerator

simulate_accelerator()
print(json.dumps({root: run_project(root) for root in sys.argv[1:]}))
"""
)


def test_every_project_layout_runs_to_its_end_on_the_simulated_accelerator() -> None:
    """Each layout of :func:`project_files`, ported, runs on ``sim`` (real values, CUDA's
    device rules) to its end with the CPU's values, or the port said what it left."""
    import itertools
    import json

    with tempfile.TemporaryDirectory() as tmp:
        cases: dict[str, tuple[list[Any], list[str]]] = {}
        for i, (layout, based, factory, helper, tensor) in enumerate(
            itertools.product(LAYOUTS, (False, True), (False, True), HELPERS, (False, True))
        ):
            root = Path(tmp) / f"p{i}"
            _write(root, project_files(
                layout, based=based, factory=factory, helper=helper, module_tensor=tensor
            ))  # fmt: skip
            before, _ = _run(root, meta=False)
            assert not isinstance(before, BaseException), before
            result = port_paths([root], jobs=1)
            cases[str(root)] = (before, [str(f) for f in result.remaining])
        env = {k: v for k, v in os.environ.items() if k != "TORCHPORT_DEVICE"}
        done = run_python(_SIM_CHILD, *cases, timeout=600, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        ran = json.loads(done.stdout.strip().splitlines()[-1])
        # every project without a module-level CPU tensor (half of them) runs to its end
        assert sum("out" in r for r in ran.values()) >= len(ran) // 2
        for root, (before, left) in cases.items():
            got = ran[root]
            if "error" in got:
                assert left, f"{root}: {got['error']} on sim and the port said nothing"
            else:
                assert got["out"] == pytest.approx(before), root


def _sim_runs(roots: list[str]) -> dict[str, dict[str, Any]]:
    """``train.py`` of each project root run on ``sim`` in one child process."""
    import json

    env = {k: v for k, v in os.environ.items() if k != "TORCHPORT_DEVICE"}
    done = run_python(_SIM_CHILD, *roots, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    ran: dict[str, dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return ran


def _runs(roots: list[str], on: str) -> dict[str, dict[str, Any]]:
    """Each project's ``train.py`` run ported: on ``sim`` in one child process (real values,
    compared with the CPU's), or in this process with ``meta`` standing in (only whether
    it ran with everything on the device: ``{"out": None}``, or ``{"error": ...}``)."""
    if on == "sim":
        return _sim_runs(roots)
    ran: dict[str, dict[str, Any]] = {}
    for root in roots:
        result, off = _run(Path(root), meta=True)
        failed = isinstance(result, BaseException) or off
        ran[root] = {"error": repr(result) if off == [] else off[:3]} if failed else {"out": None}
    return ran


def _same(got: dict[str, Any], before: list[Any]) -> bool:
    """A clean run; on ``sim``, with the CPU run's values."""
    return "out" in got and (got["out"] is None or got["out"] == pytest.approx(before))


ONS = ["meta", pytest.param("sim", marks=pytest.mark.slow)]


@pytest.mark.parametrize("on", ONS)
def test_a_device_value_handed_to_another_modules_function_is_reported_or_placed(
    on: str,
) -> None:
    """A plain function of the model's module given the model's output (``shift(out)``)
    that makes the CPU tensor the output meets, returns one, or reads it into numpy: that
    module is ported on its own, so the call is reported where the value is handed (on
    main the port said nothing and the run stopped on ``sim``). The oracle is the run:
    each ported project runs on ``sim`` to its end with the CPU's values, or is reported."""
    import itertools

    with tempfile.TemporaryDirectory() as tmp:
        cases: dict[str, tuple[list[Any], list[str]]] = {}
        moved: set[str] = set()
        for i, (layout, takes) in enumerate(itertools.product(LAYOUTS, _TAKES)):
            if takes == "moved":
                moved.add(f"t{i}")
            root = Path(tmp) / f"t{i}"
            _write(root, project_files(
                layout, based=False, factory=False, helper=None, module_tensor=False, takes=takes
            ))  # fmt: skip
            before, _ = _run(root, meta=False)
            assert not isinstance(before, BaseException), before
            result = port_paths([root], jobs=1)
            cases[str(root)] = (before, [str(f) for f in result.remaining])
        ran = _runs(list(cases), on)
        stopped = 0
        for root, (before, left) in cases.items():
            got = ran[root]
            if "error" in got:
                stopped += 1
                assert left, f"{root}: {got['error']} on sim and the port said nothing"
            else:
                assert _same(got, before), root
                assert left == [] or Path(root).name not in moved, (root, left)
        assert stopped  # the oracle sees these leftovers: the test cannot pass blind


@pytest.mark.parametrize("on", ONS)
def test_a_slice_of_the_scripts_own_data_by_another_module_is_not_reported(on: str) -> None:
    """TCN's ``get_batch(source, i)`` in ``utils.py``, returning slices of ``source``:
    the batch lives where the data the script hands it does. The script's own tensor is
    moved by the port, so the batch is on the device and nothing is reported (on main:
    TP521 "it comes from `get_batch`, which the port cannot see into", noise); data the
    module makes on the CPU is a leftover, and stays reported. The oracle is the run on
    ``sim`` with the CPU's values."""
    import itertools

    with tempfile.TemporaryDirectory() as tmp:
        cases: dict[str, tuple[str, list[Any], list[str]]] = {}
        for i, (layout, batch) in enumerate(itertools.product(LAYOUTS, ("here", "module"))):
            root = Path(tmp) / f"b{i}"
            _write(root, project_files(
                layout, based=False, factory=False, helper=None, module_tensor=False, batch=batch
            ))  # fmt: skip
            before, _ = _run(root, meta=False)
            assert not isinstance(before, BaseException), before
            result = port_paths([root], jobs=1)
            cases[str(root)] = (batch, before, [str(f) for f in result.remaining])
        ran = _runs(list(cases), on)
        for root, (batch, before, left) in cases.items():
            got = ran[root]
            if batch == "here":
                assert _same(got, before), (root, got)
                assert left == [], left
            else:
                assert "error" in got and left, (root, got, left)


_DECLARED = {
    "float": "'--gamma', type=float, default=0.5",
    "int": "'--gamma', type=int, default=2",
    "default": "'--gamma', default=0.25",
    "tensor_type": "'--gamma', type=lambda s: torch.full((2,), float(s)), default='2'",
    "stored_tensor": "'--gamma', type=float, default=0.5",
}


def settings_project(declared: str, style: str, stored: bool) -> dict[str, str]:
    """``train.py`` parses its settings and hands them to ``Agent(args)`` of ``agent.py``,
    which keeps ``args.gamma`` on ``self`` (as it is, or in arithmetic)."""
    use = "self.gamma" if stored else "self.discount"
    keep = (
        "        self.gamma = args.gamma\n"
        if stored
        else "        self.discount = args.gamma * 2 + 1\n"
    )
    agent = (
        "import torch\n\n\nclass Agent:\n    def __init__(self, args):\n"
        "        torch.manual_seed(0)\n        self.net = torch.nn.Linear(4, 2)\n"
        + keep
        + "    def learn(self):\n        out = self.net(torch.ones(3, 4))\n"
        + f"        return (out * {use}).sum().item()\n"
    )
    head = "from agent import Agent" if style == "from" else "import agent"
    make = "Agent(args)" if style == "from" else "agent.Agent(args)"
    train = (
        f"import argparse\n\nimport torch\n{head}\n\n"
        "parser = argparse.ArgumentParser()\n"
        f"parser.add_argument({_DECLARED[declared]})\n"
        "args = parser.parse_args([])\n"
        + ("args.gamma = torch.full((2,), 0.5)\n" if declared == "stored_tensor" else "")
        + f"OUT.append({make}.learn())\n"
    )
    return {"agent.py": agent, "train.py": train}


@pytest.mark.parametrize("on", ONS)
def test_settings_another_module_parses_are_numbers_where_they_are_handed(on: str) -> None:
    """``self.gamma = args.gamma`` in ``agent.py``, ``args`` handed by ``Agent(args)`` in a
    module beside it that parses them: a setting declared there as a number, string or
    flag is no tensor, and nothing is reported about it (on main: TP523 "made by
    `self.gamma`", noise, 11 of a held-out sample's rows). A setting whose ``type=`` makes
    a tensor, or one the parsing module overwrites with one, stays reported, and the run
    on ``sim`` confirms each: clean with the CPU's values, or stopped and reported."""
    import itertools

    with tempfile.TemporaryDirectory() as tmp:
        cases: dict[str, tuple[str, list[Any], list[str]]] = {}
        for i, (declared, style, stored) in enumerate(
            itertools.product(_DECLARED, ("from", "import"), (True, False))
        ):
            root = Path(tmp) / f"s{i}"
            _write(root, settings_project(declared, style, stored))
            before, _ = _run(root, meta=False)
            assert not isinstance(before, BaseException), before
            result = port_paths([root], jobs=1)
            cases[str(root)] = (declared, before, [str(f) for f in result.remaining])
        ran = _runs(list(cases), on)
        for root, (declared, before, left) in cases.items():
            got = ran[root]
            if "tensor" in declared:
                assert "error" in got and left, (root, got, left)
            else:
                assert _same(got, before), (root, got)
                assert left == [], (root, left)
