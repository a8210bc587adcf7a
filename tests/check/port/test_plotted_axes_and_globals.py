"""The port's two silent classes held-out set 5 (branch h31e) left after h31f: issue 31.

(1) Device values handed to matplotlib through an Axes or a Figure (``fig, ax =
plt.subplots(); ax.plot(losses)``, ``axes[i].scatter(...)``, ``plt.gca().plot(...)``,
``fig.add_subplot(111).imshow(...)``): TP522 resolved only pyplot's own functions
(``plt.plot``), so the port said "0 left" and the ported program stopped on ``sim`` at the
plot. (2) A module's list or dict a function fills with device values (``losses.append(v)``,
``history["loss"].append(v)``, ``history.setdefault("loss", []).append(v)``, ``best[k] =
v``, ``global losses``) and another function reads with numpy or matplotlib: the flow kept
the device list in the filling function's scope, and the reading function saw a host name.

The oracle, as h31f's (:mod:`tests.check.port.test_plotted_device_tensors`): the ported
program run on ``sim`` in a child process (real values, the device's rules). TP522 must
report exactly the programs that fail there: a device value read through numpy. Formatting
one (``f"{loss:.3f}"``, ``ax.set_title(...)``, ``ax.text(...)``) works on the device, and
so does a list of ``.item()`` floats: those run to their end with the CPU's values, unsaid.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load, needs_matplotlib
from torchport.check import check_source, port_paths

project_fuzz = load("project_fuzz_for_axes", Path(__file__).parent / "test_project_fuzz.py")

_HEAD = """import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

model = torch.nn.Linear(1, 1)
"""

# ------------------------------------------------------------- (1) plotted through an Axes

_OUT = "model(torch.linspace(-1.0, 1.0, 4).view(-1, 1))"
_PLOTTED = {  # name -> (the values plotted, whether they are on the device once ported)
    "output": (f"{_OUT}.detach().view(-1)", True),
    "cpu": (f"{_OUT}.detach().view(-1).cpu()", False),
    "items": (f"[v.item() for v in {_OUT}.view(-1)]", False),
}
_METHODS = {  # name -> (the call's arguments, whether it reads them through numpy)
    "plot": ("{t}", True),
    "plot2": ("[0.0, 1.0, 2.0, 3.0], {t}", True),
    "scatter": ("[0.0, 1.0, 2.0, 3.0], {t}", True),
    "bar": ("[0.0, 1.0, 2.0, 3.0], {t}", True),
    "hist": ("{t}", True),
    "fill_between": ("[0.0, 1.0, 2.0, 3.0], {t}", True),
    "imshow": ("[{t}, {t}]", True),
    "set_ylim": ("min({t}), max({t}) + 1.0", True),
    "set_title": ('f"{{max({t}):.3f}}"', False),  # formatted: a device tensor's works
    "text": ("0.1, 0.2, max({t})", False),  # matplotlib makes a string of it
}
_RECEIVERS = {  # name -> (the lines before the call, the Axes the call is made on)
    "subplots": ("fig, ax = plt.subplots()\n", "ax"),
    "nested": ("fig, (ax1, ax2) = plt.subplots(1, 2)\n", "ax2"),
    "grid": ("fig, axes = plt.subplots(2, 2)\n", "axes[1, 0]"),
    "rows": ("fig, axes = plt.subplots(2)\n", "axes[1]"),
    "indexed": ("axes = plt.subplots(1, 2)[1]\n", "axes[0]"),
    "flat": ("fig, axes = plt.subplots(2, 2)\nfor ax in axes.flat:\n", "ax"),
    "enumerate": ("fig, axes = plt.subplots(1, 2)\nfor i, ax in enumerate(axes):\n", "ax"),
    "add_subplot": ("fig = plt.figure()\nax = fig.add_subplot(1, 1, 1)\n", "ax"),
    "chained": ("", "plt.figure().add_subplot(111)"),
    "gca": ("", "plt.gca()"),
    "subplot": ("ax = plt.subplot(2, 1, 1)\n", "ax"),
    "twinx": ("fig, ax = plt.subplots()\nax2 = ax.twinx()\n", "ax2"),
    "imported": ("from matplotlib.pyplot import subplots\nfig, ax = subplots()\n", "ax"),
    "helper": ("def draw(ax, values):\n", "ax"),  # an own function given the Axes
}


def _axes_program(plotted: str, method: str, receiver: str) -> str:
    before, axes = _RECEIVERS[receiver]
    values = "values" if receiver == "helper" else "t"
    args = _METHODS[method][0].format(t=values)
    call = f"{axes}.{method.rstrip('2')}({args})\n"
    body = before + ("    " + call if before.endswith(":\n") else call)
    if receiver == "helper":
        body += "fig, ax = plt.subplots()\ndraw(ax, t)\n"
    return (
        _HEAD
        + f"t = {_PLOTTED[plotted][0]}\n"
        + body
        + 'plt.close("all")\n'
        + "OUT.append(sum(float(v) for v in t))\n"
    )


def _reported_iff_they_fail(programs: list[tuple[str, bool]]) -> None:
    """Port each program (whether it fails on ``sim`` once ported, as drawn) and run every
    ported one on ``sim`` in one child process (one start-up of torch for the batch): each
    fails exactly where TP522 reports it, and the others give the CPU's values."""
    with tempfile.TemporaryDirectory() as tmp:
        cases = {}
        for i, (program, fails) in enumerate(programs):
            root = Path(tmp) / f"p{i}"
            project_fuzz._write(root, {"train.py": program})
            on_cpu, _ = project_fuzz._run(root, meta=False)
            assert not isinstance(on_cpu, BaseException), (on_cpu, program)  # runs on the CPU
            result = port_paths([root], jobs=1)
            reported = [str(f) for f in result.remaining if f.code == "TP522"]
            cases[str(root)] = (fails, on_cpu, reported)
        runs = project_fuzz._sim_runs(list(cases))
        for root, (fails, on_cpu, reported) in cases.items():
            ran = runs[root]
            ported = (Path(root) / "train.py").read_text(encoding="utf-8")
            assert ("error" in ran) == fails, (ran, ported)  # not blind: they fail as drawn
            if fails:
                assert reported, f"{ran['error']}: TP522 said nothing\n{ported}"
            else:
                assert not reported, f"ran on sim, yet TP522 reported {reported}\n{ported}"
                assert ran["out"] == pytest.approx(on_cpu)


_BATCH = 8  # shapes per example, run on `sim` together


_AXES_SHAPES = st.tuples(
    st.sampled_from(sorted(_PLOTTED)),
    st.sampled_from(sorted(_METHODS)),
    st.sampled_from(sorted(_RECEIVERS)),
)


@needs_matplotlib
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(_AXES_SHAPES, min_size=_BATCH, max_size=_BATCH, unique=True))
def test_values_plotted_on_an_axes_are_reported_iff_they_fail_on_sim(
    shapes: list[tuple[str, str, str]],
) -> None:
    _reported_iff_they_fail(
        [
            (_axes_program(plotted, method, receiver), _PLOTTED[plotted][1] and _METHODS[method][1])
            for plotted, method, receiver in shapes
        ]
    )


# ------------------------------------- (2) a module's list or dict filled in another function

_FILLED = {  # name -> (the module's binding, `train`'s declaration, its fill, what is read)
    "list": ("losses = []\n", "", "losses.append(v)", "losses"),
    "entry": ('history = {"loss": []}\n', "", 'history["loss"].append(v)', 'history["loss"]'),
    "setdefault": ("history = {}\n", "", 'history.setdefault("loss", []).append(v)',
                   'history["loss"]'),
    "defaultdict": ("from collections import defaultdict\nhistory = defaultdict(list)\n", "",
                    'history["loss"].append(v)', 'history["loss"]'),
    "keyed": ("best = {}\n", "", "best[step] = v", "list(best.values())"),
    "global": ("losses = None\n", "    global losses\n    losses = []\n", "losses += [v]",
               "losses"),
    "last": ("last = None\n", "    global last\n", "last = v", "[last]"),
}  # fmt: skip
_KEPT = {  # name -> (the value kept, whether it is on the device once ported)
    "output": ("model(x).sum().detach()", True),
    "compared": ("torch.sum(torch.round(torch.sigmoid(model(x))) == 1)", True),  # loopnet's
    "item": ("model(x).sum().item()", False),
    "host": ("float(step) / 2", False),
}
_READ = {  # name -> (how the kept values `H` are read, whether numpy reads them)
    "mean": ("OUT.append(float(np.mean({h})))", True),
    "plot": ("plt.plot({h})", True),
    "axes": ("fig, ax = plt.subplots()\nax.plot({h})", True),
    "format": ("OUT.append(f'{{{h}[-1]:.3f}}')", False),
    "floats": ("plt.plot([float(a) for a in {h}])", False),
}


def _global_program(filled: str, kept: str, read: str, where: str) -> str:
    module, declared, fill, held = _FILLED[filled]
    indent = "    " if where == "function" else ""
    reading = _READ[read][0].format(h=held)
    reads = "".join(indent + line + "\n" for line in reading.splitlines())
    reads += f'{indent}plt.close("all")\n{indent}OUT.append(len({held}))\n'
    program = (
        _HEAD
        + module
        + "\n\ndef train():\n"
        + declared
        + "    for step in range(3):\n"
        + "        x = torch.ones(4, 1) * step\n"
        + f"        v = {_KEPT[kept][0]}\n"
        + f"        {fill}\n"
    )
    if where == "function":
        return program + "\n\ndef report():\n" + reads + "\n\ntrain()\nreport()\n"
    return program + "\n\ntrain()\n" + reads


_GLOBAL_SHAPES = st.tuples(
    st.sampled_from(sorted(_FILLED)),
    st.sampled_from(sorted(_KEPT)),
    st.sampled_from(sorted(_READ)),
    st.sampled_from(["function", "module"]),
)


@needs_matplotlib
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(_GLOBAL_SHAPES, min_size=_BATCH, max_size=_BATCH, unique=True))
def test_a_module_s_list_filled_in_a_function_is_reported_iff_it_fails_on_sim(
    shapes: list[tuple[str, str, str, str]],
) -> None:
    _reported_iff_they_fail(
        [(_global_program(*shape), _KEPT[shape[1]][1] and _READ[shape[2]][1]) for shape in shapes]
    )


@pytest.mark.parametrize(
    "source",
    [
        "fig, ax = plt.subplots()\nax.set_title(out.sum())\nax.set_xlabel(f'{out.sum():.2f}')\n",
        "plt.title(out.sum())\nplt.text(0.1, 0.1, out.sum())\nplt.legend([out.sum()])\n",
        "fig, ax = plt.subplots()\nax.plot(out.detach().cpu())\nax.plot(out.sum().item())\n",
        "ax = make()\nax.plot(out)\n",  # an object no binding shows to be an Axes
    ],
)
def test_a_text_or_a_host_value_given_to_matplotlib_is_not_reported(source: str) -> None:
    """Without running anything: a title, a label, a text or a host copy is no read of a
    device value through numpy (``ax`` of an unknown ``make()`` is no known Axes)."""
    program = _HEAD + "out = model(torch.ones(2, 1))\n" + source
    assert check_source(program, select=["TP522"]) == []
