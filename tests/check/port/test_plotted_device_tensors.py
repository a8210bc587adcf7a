"""The silent class the fifth held-out port set (branch h31e) found: device tensors plotted.

leon37/AI_Study's ``gradient_descent.py`` plots ``plt.plot(x_origin, f(x_origin))`` of
``x_origin = torch.arange(-10, 10, 0.1)``; csalcedo001/loopnet's ``train.py`` keeps each
step's accuracy ``torch.sum(torch.round(y_hat) == y)`` in a list and plots the list. The
port placed the factory (``device=device``) and the model's inputs, said "0 left", and the
ported programs stopped on the accelerator at the plot: matplotlib reads its data through
numpy (``np.asarray``), which refuses a device tensor ("can't convert sim:0 device type
tensor to numpy"). TP522 reports numpy's own functions given a device value
(``np.argmax(out)``), not a plotting call that converts it.

The oracle: the ported program run with ``meta`` standing in for the accelerator (numpy
refuses a meta tensor, as it refuses a device one), and what the port said was left.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.check.port.siblings import load
from torchport.check import port_paths

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


@pytest.mark.xfail(strict=True, reason="h31e: a device tensor given to matplotlib is not said")
def test_a_placed_factory_s_tensor_plotted_is_placed_or_said() -> None:
    assert _placed_or_said(_FACTORY_PLOTTED)


@pytest.mark.xfail(strict=True, reason="h31e: a list of device tensors plotted is not said")
def test_a_list_of_device_results_plotted_is_placed_or_said() -> None:
    assert _placed_or_said(_LIST_PLOTTED)


def test_numpy_of_the_output_is_said() -> None:
    """Not blind: numpy's own function given the placed output is reported (TP522)."""
    assert _placed_or_said(_NUMPY_READ)


@pytest.mark.parametrize("program", [_FACTORY_PLOTTED, _LIST_PLOTTED])
def test_the_oracle_sees_the_plot_fail(program: str) -> None:
    """Not blind: ported, each plotting program fails with `meta` standing in."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        project_fuzz._write(root, {"train.py": program})
        port_paths([root], jobs=1)
        ran, off = project_fuzz._run(root, meta=True)
        assert isinstance(ran, BaseException) or off
