"""The silent class the fifth held-out port set (branch h31e) found: device tensors plotted.

leon37/AI_Study's ``gradient_descent.py`` plots ``plt.plot(x_origin, f(x_origin))`` of
``x_origin = torch.arange(-10, 10, 0.1)``; csalcedo001/loopnet's ``train.py`` keeps each
step's accuracy ``torch.sum(torch.round(y_hat) == y)`` in a list and plots the list. The
port placed the factory (``device=device``) and the model's inputs, said "0 left", and the
ported programs stopped on the accelerator at the plot: matplotlib reads its data through
numpy (``np.asarray``), which refuses a device tensor ("can't convert sim:0 device type
tensor to numpy"). TP522 reported numpy's own functions given a device value
(``np.argmax(out)``), not a plotting call that converts it.

The oracle: the ported program run with ``meta`` standing in for the accelerator (numpy
refuses a meta tensor, as it refuses a device one), and what the port said was left.

TP522 now reports a matplotlib function given a device value (the first form, and every form
:func:`test_a_placed_tensor_given_to_matplotlib_is_placed_or_said` draws). The list form
(branch h31f): the port's facts took no comparison for a device value
(``torch.round(y_hat) == y`` is one), nor a list filled by ``+=`` or a dict entry's list
(``acc[name].append(acc)``), nor a comprehension over a device list; they do now, and
:func:`test_a_collected_list_read_by_numpy_is_reported_iff_it_fails_on_sim` draws the shapes,
the oracle the ported program run on ``sim``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load, needs_matplotlib
from torchport.check import check_source, port_paths

# The programs plot with the real matplotlib (the oracle is the library's own reading of its
# data); without it they would fail on import, and the tests would hold nothing.
project_fuzz = load("project_fuzz_for_plotted", Path(__file__).parent / "test_project_fuzz.py")

_HEAD = """import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

model = torch.nn.Linear(1, 1)
"""

# a factory's tensor, and the model's output of it, plotted (gradient_descent.py's form)
_FACTORY_PLOTTED = (
    _HEAD
    + """xs = torch.arange(-1.0, 1.0, 0.5).view(-1, 1)
ys = model(xs).detach()
plt.plot(xs, ys)
plt.close("all")
OUT.append(ys.sum().item())
"""
)

# a list of 0-dim results of the model's output, plotted (loopnet's train.py)
_LIST_PLOTTED = (
    _HEAD
    + """accs = []
for step in range(2):
    x = torch.ones(4, 1) * step
    accs.append(torch.sum(torch.round(torch.sigmoid(model(x))) == 1))
plt.plot(accs)
plt.close("all")
OUT.append(len(accs))
"""
)

# the same with numpy's own function: reported (TP522), so the oracle is not blind
_NUMPY_READ = (
    _HEAD
    + """import numpy as np
xs = torch.arange(-1.0, 1.0, 0.5).view(-1, 1)
ys = model(xs).detach()
OUT.append(int(np.argmax(ys)))
"""
)


def _placed_or_said(program: str) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        project_fuzz._write(root, {"train.py": program})
        on_cpu, _ = project_fuzz._run(root, meta=False)
        assert not isinstance(on_cpu, BaseException), on_cpu  # the original runs on the CPU
        result = port_paths([root], jobs=1)
        ran, off = project_fuzz._run(root, meta=True)
        return (not off and not isinstance(ran, BaseException)) or bool(result.remaining)


@needs_matplotlib
def test_a_placed_factory_s_tensor_plotted_is_placed_or_said() -> None:
    """Fixed on this branch: TP522 reports a matplotlib function given a device value."""
    assert _placed_or_said(_FACTORY_PLOTTED)


@needs_matplotlib
def test_a_list_of_device_results_plotted_is_placed_or_said() -> None:
    """Fixed on branch h31f (it was h31e's strict xfail): the comparison is a device value,
    and the list it is appended to holds device values."""
    assert _placed_or_said(_LIST_PLOTTED)


@needs_matplotlib
def test_numpy_of_the_output_is_said() -> None:
    """Not blind: numpy's own function given the placed output is reported (TP522)."""
    assert _placed_or_said(_NUMPY_READ)


@needs_matplotlib
@pytest.mark.parametrize("program", [_FACTORY_PLOTTED, _LIST_PLOTTED])
def test_the_oracle_sees_the_plot_fail(program: str) -> None:
    """Not blind: ported, each plotting program fails with `meta` standing in."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        project_fuzz._write(root, {"train.py": program})
        port_paths([root], jobs=1)
        ran, off = project_fuzz._run(root, meta=True)
        assert isinstance(ran, BaseException) or off


# ------------------------------------------- a placed tensor handed to a plotting function

_IMPORTS = {
    "pyplot": ("import matplotlib.pyplot as plt", "plt.{f}"),
    "from": ("from matplotlib import pyplot as plt", "plt.{f}"),
    "name": ("from matplotlib.pyplot import {f}", "{f}"),
}
_MADE = {  # the plotted tensor: a factory's (placed by the port), or the model's output
    "linspace": "torch.linspace(-1.0, 1.0, 5)",
    "arange": "torch.arange(-1.0, 1.0, 0.4)",
    "ones": "torch.ones(5) * 0.5",
    "output": "model(torch.linspace(-1.0, 1.0, 5).view(-1, 1)).detach().view(-1)",
}
_CALLS = {  # each function's arguments: the tensor `t`, and a host list where it takes two
    "plot": "{t}",
    "plot2": "[0.0, 1.0, 2.0, 3.0, 4.0], {t}",
    "scatter": "[0.0, 1.0, 2.0, 3.0, 4.0], {t}",
    "hist": "{t}",
    "bar": "[0.0, 1.0, 2.0, 3.0, 4.0], {t}",
}


def _plotting_program(made: str, call: str, imported: str, keyword: bool) -> str:
    function = call.rstrip("2")
    line, spelled = _IMPORTS[imported]
    args = _CALLS[call].format(t="t")
    if keyword and function in {"scatter", "bar"}:  # the data by keyword: `height=t`
        args = "[0.0, 1.0, 2.0, 3.0, 4.0], " + {"scatter": "y", "bar": "height"}[function] + "=t"
    return (
        'import matplotlib\nmatplotlib.use("Agg")\n'
        + line.format(f=function)
        + "\nimport torch\n\nmodel = torch.nn.Linear(1, 1)\n"
        + f"t = {_MADE[made]}\n"
        + f"{spelled.format(f=function)}({args})\n"
        + "OUT.append(float(t.sum().item()))\n"
    )


@needs_matplotlib
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    made=st.sampled_from(sorted(_MADE)),
    call=st.sampled_from(sorted(_CALLS)),
    imported=st.sampled_from(sorted(_IMPORTS)),
    keyword=st.booleans(),
)
def test_a_placed_tensor_given_to_matplotlib_is_placed_or_said(
    made: str, call: str, imported: str, keyword: bool
) -> None:
    assert _placed_or_said(_plotting_program(made, call, imported, keyword))


# ------------------------------------- device values collected in a list, the list read by numpy

_COLLECT = {  # how a value `v` goes into the list `H` (`accs`, or the dict entry `accs["a"]`)
    "append": "{h}.append({v})",
    "add": "{h} += [{v}]",
    "extend": "{h}.extend([{v}])",
    "insert": "{h}.insert(0, {v})",
}
_VALUES = {  # name -> (the value appended, whether it is on the device once ported)
    "compared": ("torch.sum(torch.round(torch.sigmoid(model(x))) == 1)", True),  # loopnet's
    "output": ("model(x).sum().detach()", True),
    "factory": ("torch.ones(1).sum() * step", False),  # meets no device value: left on the host
    "item": ("torch.sum(torch.round(torch.sigmoid(model(x))) == 1).item()", False),
    "host": ("float(step) / 2", False),
}
_READS = {  # how the list is read: by matplotlib or numpy, itself or through a comprehension
    "plot": "plt.plot({h})",
    "mean": "np.mean({h})",
    "items": "plt.plot([a for a in {h}])",
    "floats": "plt.plot([float(a) for a in {h}])",
}


_HOLDERS = {  # how the list is kept: (before the loop, the list filled, after the loop)
    "list": ("accs = []\n", "accs", ""),
    "entry": ('accs = {"a": []}\n', 'accs["a"]', ""),
    # loopnet's: a list filled, then made a dict's entry (`accuracy[model_name] = ...`)
    "assigned": ("accs = {}\nkept = []\n", "kept", 'accs["a"] = kept\n'),
}


def _collecting_program(value: str, collect: str, read: str, holder: str) -> str:
    before, filled, after = _HOLDERS[holder]
    read_from = 'accs["a"]' if holder != "list" else "accs"
    made, _ = _VALUES[value]
    return (
        _HEAD
        + "import numpy as np\n"
        + before
        + "for step in range(3):\n"
        + "    x = torch.ones(4, 1) * step\n"
        + f"    {_COLLECT[collect].format(h=filled, v=made)}\n"
        + after
        + f"{_READS[read].format(h=read_from)}\n"
        + 'plt.close("all")\n'
        + f"OUT.append(len({read_from}))\n"
    )


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@needs_matplotlib
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.sampled_from(sorted(_VALUES)),
    collect=st.sampled_from(sorted(_COLLECT)),
    read=st.sampled_from(sorted(_READS)),
    holder=st.sampled_from(sorted(_HOLDERS)),
)
def test_a_collected_list_read_by_numpy_is_reported_iff_it_fails_on_sim(
    value: str, collect: str, read: str, holder: str
) -> None:
    """The oracle: the ported program run on ``sim`` (real values, the device's rules), in a
    child process. It fails (numpy refuses a device tensor) only where TP522 reports the
    read; it runs to its end, with the CPU's values, where TP522 is silent: ``.item()``
    before the append, a list of host floats, a comprehension reading each to the host."""
    program = _collecting_program(value, collect, read, holder)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        project_fuzz._write(root, {"train.py": program})
        on_cpu, _ = project_fuzz._run(root, meta=False)
        assert not isinstance(on_cpu, BaseException), on_cpu  # the original runs on the CPU
        result = port_paths([root], jobs=1)
        reported = [f for f in result.remaining if f.code == "TP522"]
        ran = project_fuzz._sim_runs([str(root)])[str(root)]
        ported = (root / "train.py").read_text(encoding="utf-8")
    # not blind: a device value collected fails the read, unless each is read to the host
    assert ("error" in ran) == (_VALUES[value][1] and read != "floats"), ran
    if "error" in ran:
        assert reported, f"{ran['error']}: TP522 said nothing\n{ported}"
    else:
        assert not reported, f"ran on sim, yet TP522 reported {reported}\n{ported}"
        assert ran["out"] == on_cpu


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("device = torch.device('cuda')\nt = torch.arange(3.0, device=device)\n"
         "plt.plot(t)\n", "`t`"),
        ("out = model(torch.ones(2, 1))\nplt.hist(out.detach())\n", "`out.detach()`"),
        ("accs = {'a': []}\naccs['a'].append(model(torch.ones(2, 1)).sum())\n"
         "plt.plot(accs['a'])\n", "put in `accs`"),
    ],
)  # fmt: skip
def test_the_message_names_what_numpy_is_given(source: str, named: str) -> None:
    """A factory's tensor is no model's output: the message names the value (or the list
    the values were put in), not where it may have come from."""
    found = check_source(_HEAD + source, select=["TP522"])
    assert [f.line for f in found] == [len((_HEAD + source).splitlines())]
    assert named in found[0].message and "model's output" not in found[0].message
