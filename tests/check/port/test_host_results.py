"""Host data the port took for device values, and the line where one meets a host library.

Issue 31, the classes held-out set 6 (branch h31g) and m31t left: (a) a call of the file's
own function given a device value counted as returning one, whatever it returns, so a list
of ``.item()`` floats it returned (``hist = train(model, ...)``, ``plt.plot(hist[0])``) was
reported as a device value reaching matplotlib; (b) scikit-learn (and the other host
libraries reading through numpy) given a device value was no finding, and the report named
a later line (``plt.plot(accs)``, ``np.mean([acc])``) or none, where the ported program
stops at the library's call.

The oracle is the run, as h31f's and m31t's: each program ported in place, then run on
``sim`` (real values, the device's rules) in one child process. TP522 must name exactly the
line where the run stops, and nothing in a program that runs to its end (with the CPU's
values). scikit-learn is not installed with torchport: a stand-in ``sklearn.metrics``
outside the project converts as scikit-learn's ``check_array`` does (``np.asarray``), which
refuses a device tensor (tried with scikit-learn 1.9.1 on ``sim``: "can't convert sim:0
device type tensor to numpy").
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load, needs_matplotlib
from tests.preloaded import run_python
from torchport.check import port_paths

project_fuzz = load("project_fuzz_for_host_results", Path(__file__).parent / "test_project_fuzz.py")

_HEAD = """import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.metrics import accuracy_score

model = torch.nn.Linear(1, 1)
x = torch.linspace(-1.0, 1.0, 4).view(-1, 1)
"""

_SKLEARN = '''"""A stand-in for scikit-learn's metrics: arguments converted as check_array does."""
import numpy as np


def accuracy_score(y_true, y_pred):
    return float((np.asarray(y_true) == np.asarray(y_pred)).mean())
'''

# The child: each ported program run on `sim`; its output, or the line of `train.py` where it
# stopped (the innermost frame in that file) and why.
_CHILD = """
import json, runpy, sys, traceback, warnings
sys.path.insert(0, sys.argv.pop(1))  # the stubs (sklearn), first as PYTHONPATH would put them
import torch
from torchport.testing import simulate_accelerator

simulate_accelerator()
warnings.simplefilter("ignore")
results = {}
for root in sys.argv[1:]:
    out = []
    torch.manual_seed(0)
    try:
        runpy.run_path(root + "/train.py", {"OUT": out}, "__main__")
        results[root] = {"out": out}
    except Exception as exc:
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__)
                 if f.filename.endswith("train.py")]
        results[root] = {"error": f"{type(exc).__name__}: {exc}"[:200], "line": lines[-1]}
print(json.dumps(results))
"""

# --------------------------------------------- (a) what an own function returns, given one

_RETURNS = {  # name -> (the callee's body, given `out`; what is read of `got`; on the device)
    "items": ("vals = []\nfor v in out.view(-1):\n    vals.append(v.item())\nreturn vals",
              "got", False),
    "tolist": ("return out.detach().view(-1).tolist()", "got", False),
    "cpu": ("return out.detach().view(-1).cpu()", "got", False),
    "number": ("return float(out.sum())", "[got]", False),
    "ratio": ("total = 0.0\nfor v in out.view(-1):\n    total += v.item()\nreturn [total / 4]",
              "got", False),
    "host_tuple": ("losses = [out.sum().item()]\nreturn losses, out.detach().view(-1).cpu()",
                   "got[1]", False),
    "host_dict": ('return {"loss": [out.sum().item()], "n": len(out)}', 'got["loss"]', False),
    "device": ("return out.detach().view(-1)", "got", True),
    "device_tuple": ("return [out.sum().item()], out.detach().view(-1)", "got[1]", True),
    "device_list": ("outs = []\nouts.append(out.detach().view(-1))\nreturn outs", "got[0]", True),
    "kept": ("keep.append(out.detach().view(-1))\nreturn keep[-1]", "got", True),
    # vinhkhuc/PyTorch-Mini-Tutorials' `predict`: a method of host data is host data
    "numpy_argmax": ("return out.detach().cpu().numpy().argmax(axis=1)", "got", False),
    "numpy_call": ("return np.round(out.detach().cpu().numpy(), 2)", "got", False),
    "cpu_view": ("return out.detach().cpu().view(-1)", "got", False),
    "moved_back": ("return out.detach().cpu().view(-1).to(out.device)", "got", True),
}  # fmt: skip
_CALLERS = {  # name -> (the callee's definition line, the call given the output)
    "function": ("def run(out):\n", "run(out)"),
    "keyword": ("def run(scale, out=None):\n", "run(2.0, out=out)"),
    "forward": ("def run(out):\n", "run(model(x))"),
    "method": ("class Meter:\n    def run(self, out):\n", "Meter().run(out)"),
}
_READS = {  # name -> how `r` (what is read of `got`) is read
    "plot": "plt.plot({r})",
    "asarray": "OUT.append(float(np.asarray({r}).sum()))",
}


def _returned_program(returns: str, caller: str, read: str) -> str:
    body, held, _ = _RETURNS[returns]
    define, call = _CALLERS[caller]
    indent = " " * (len(define.splitlines()[-1]) - len(define.splitlines()[-1].lstrip()) + 4)
    callee = define + "".join(indent + line + "\n" for line in body.splitlines())
    return (
        _HEAD
        + "keep = []\n\n\n"
        + callee
        + "\n\nout = model(x)\n"
        + f"got = {call}\n"
        + _READS[read].format(r=held)
        + '\nplt.close("all")\n'
        + "OUT.append(float(torch.as_tensor(np.array(out.detach().cpu())).sum()))\n"
    )


# ------------------------------------------------ (b) a device value given to a host library

_PREDICTED = {  # name -> (the predictions given to `accuracy_score`, on the device once ported)
    "output": ("(model(x) > 0).long().view(-1)", True),
    "argmax": ("torch.cat([model(x), -model(x)], 1).argmax(1)", True),
    "max": ("torch.max(torch.cat([model(x), -model(x)], 1), 1).indices", True),
    "cpu": ("(model(x) > 0).long().view(-1).cpu()", False),
    "tolist": ("(model(x) > 0).long().view(-1).tolist()", False),
}
_AFTER = {  # name -> what is done with the score after (a float: runs on the device)
    "plot": "accs = [acc]\nplt.plot(accs)\n",
    "mean": "OUT.append(float(np.mean([acc])))\n",
    "nothing": "",
}


def _library_program(predicted: str, after: str) -> str:
    return (
        _HEAD
        + "labels = np.array([0, 0, 1, 1])\n"
        + "with torch.no_grad():\n"
        + f"    pred = {_PREDICTED[predicted][0]}\n"
        + "acc = accuracy_score(labels, pred)\n"
        + _AFTER[after]
        + 'plt.close("all")\n'
        + "OUT.append(acc)\n"
    )


def _reported_where_they_stop(programs: list[str]) -> list[tuple[int | None, list[int]]]:
    """Port each program in its own folder and run the ported ones on ``sim`` in one child;
    per program, the line where the run stopped (None: it ran to its end with the CPU's
    values) and the lines TP522 reported. Each first runs on the CPU."""
    with tempfile.TemporaryDirectory() as tmp:
        stubs = Path(tmp) / "stubs"
        project_fuzz._write(stubs, {"sklearn/__init__.py": "", "sklearn/metrics.py": _SKLEARN})
        sys.path.insert(0, str(stubs))
        try:
            cases: dict[str, tuple[list[Any], list[int]]] = {}
            for i, program in enumerate(programs):
                root = Path(tmp) / f"p{i}"
                project_fuzz._write(root, {"train.py": program})
                on_cpu, _ = project_fuzz._run(root, meta=False)
                assert not isinstance(on_cpu, BaseException), (on_cpu, program)
                result = port_paths([root], jobs=1)
                assert not result.errors, result.errors
                cases[str(root)] = (on_cpu, [f.line for f in result.remaining if f.code == "TP522"])
        finally:
            sys.path.remove(str(stubs))
            sys.modules.pop("sklearn.metrics", None)
            sys.modules.pop("sklearn", None)
        # the stubs on the child's path, not in PYTHONPATH: the suite's own environment, so the
        # child is forked off the preloaded server
        env = {k: v for k, v in os.environ.items() if k != "TORCHPORT_DEVICE"}
        done = run_python(_CHILD, str(stubs), *cases, timeout=600, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        ran = json.loads(done.stdout.strip().splitlines()[-1])
        found: list[tuple[int | None, list[int]]] = []
        for root, (on_cpu, reported) in cases.items():
            got = ran[root]
            ported = (Path(root) / "train.py").read_text(encoding="utf-8")
            if "out" in got:
                assert got["out"] == pytest.approx(on_cpu), ported
            found.append((got.get("line"), reported))
            stop = got.get("line")
            expected = [] if stop is None else [stop]
            assert reported == expected, (
                f"stops at {stop} ({got.get('error')}), TP522 reported {reported}\n{ported}"
            )
        return found


_BATCH = 8  # shapes per example, run on `sim` together

_RETURNED_SHAPES = st.tuples(
    st.sampled_from(sorted(_RETURNS)),
    st.sampled_from(sorted(_CALLERS)),
    st.sampled_from(sorted(_READS)),
)


@needs_matplotlib
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(_RETURNED_SHAPES, min_size=_BATCH, max_size=_BATCH, unique=True))
def test_what_an_own_function_returns_is_reported_iff_the_run_stops_there(
    shapes: list[tuple[str, str, str]],
) -> None:
    """(a) Host data an own function returns (given the model's output) runs on ``sim``:
    unsaid; a device value it returns (alone, in a tuple, in a list, one it keeps in a
    module's list) stops the run at the read: reported there."""
    found = _reported_where_they_stop([_returned_program(*shape) for shape in shapes])
    for (stop, _), shape in zip(found, shapes, strict=True):
        assert (stop is not None) == _RETURNS[shape[0]][2], shape  # not blind: as drawn


@needs_matplotlib
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shapes=st.lists(
        st.tuples(st.sampled_from(sorted(_PREDICTED)), st.sampled_from(sorted(_AFTER))),
        min_size=_BATCH,
        max_size=_BATCH,
        unique=True,
    )
)
def test_a_device_value_given_to_a_host_library_is_reported_where_it_meets_it(
    shapes: list[tuple[str, str]],
) -> None:
    """(b) ``accuracy_score(labels, pred)`` of a device ``pred`` stops the run there: that
    line is reported, not the plot or ``np.mean`` of the float it returns."""
    found = _reported_where_they_stop([_library_program(*shape) for shape in shapes])
    for (stop, _), shape in zip(found, shapes, strict=True):
        assert (stop is not None) == _PREDICTED[shape[0]][1], shape


@needs_matplotlib
def test_an_object_built_from_a_device_value_holds_it() -> None:
    """``Holder(out)`` runs ``__init__``, whose return is None, and gives the object that keeps
    ``out``: a device value read back (``h.out``) stops the run and is reported there (the
    constructor is no function returning host data). (A host copy kept, ``.cpu()``, is still
    reported, as before: what an object's attribute holds the flow does not follow.)"""
    holder = (
        "class Holder:\n"
        "    def __init__(self, out):\n"
        "        self.out = out.detach().view(-1){copy}\n\n\n"
        "out = model(x)\n"
        "h = Holder(out)\n"
        "plt.plot(h.out)\n"
        'plt.close("all")\n'
        "OUT.append(float(h.out.sum()))\n"
    )
    found = _reported_where_they_stop([_HEAD + holder.format(copy="")])
    assert [stop is not None for stop, _ in found] == [True]
