"""k31ah's breaks of h31ah's side computations (a tensor made and computed with, meeting no model).

A tensor ``torch.from_numpy(a)`` or ``torch.as_tensor(a)`` makes shares its memory with ``a``:
the original sees a write to ``a`` made after it (``a[0] = 5.0``), and ``a`` sees a write to
the tensor. Moved to the device after creation, it is a copy: the port printed the values from
before the write, silently. ``torch.Tensor.numpy(y)`` reads ``y`` back to the host as
``y.numpy()`` does: placed, it stopped the port on the device. The oracle
(``no_cuda_sim.placed_or_said``) runs the original on the CPU and the port on the simulated
accelerator: the same values with every output on ``sim:0``, or a finding left.
"""

from __future__ import annotations

from tests.check.port.no_cuda_sim import (
    _EXEC,
    _EXEC_PRINTED,
    _STOPPING,
    in_a_child,
    placed_or_said,
)
from torchport.check.port import port_text

_HEAD = (
    "import numpy as np\nimport torch\nimport torch.nn as nn\n\n"
    "model = nn.Linear(3, 2)\nOUT.append(model(torch.ones(1, 3)))\n"
)
_SHARED = {  # the array and the tensor made from it, then a write one of them sees
    "from_numpy, the array written": "a = np.zeros(3)\nt = torch.from_numpy(a)\na[0] = 5.0\n",
    "as_tensor, the array added to": "a = np.zeros(3)\nt = torch.as_tensor(a)\na += 1.0\n",
    "asarray, the array filled": "a = np.zeros(3)\nt = torch.asarray(a)\na.fill(2.0)\n",
    "from_numpy, the tensor written": (
        "a = np.zeros(3)\nt = torch.from_numpy(a)\nt[1] = 4.0\nprint(torch.from_numpy(a) + 0)\n"
    ),
}


def test_a_tensor_sharing_an_arrays_memory_is_placed_or_said() -> None:
    sources = [_HEAD + made + "print(t * 2)\n" for made in _SHARED.values()]
    placed_or_said(sources, printed=True)


def test_a_tensor_read_back_through_the_class_stays_on_the_host() -> None:
    """``torch.Tensor.numpy(y)`` (and ``.tolist``, ``.cpu``) as ``y.numpy()``: kept, unsaid;
    the port runs on the device with the original's values."""
    for method in ("numpy", "tolist", "item"):
        made = "torch.ones(1)" if method == "item" else "torch.ones(3)"
        source = _HEAD + f"x = {made}\ny = x * 2\nprint(y)\nprint(torch.Tensor.{method}(y))\n"
        port = port_text(source)
        assert f"x = {made}\n" in port.source, port.source
        assert not port.failures
        (result,) = in_a_child(_STOPPING.replace(_EXEC, _EXEC_PRINTED), [(source, port.source)])
        assert result.get("same"), result


def test_a_fresh_array_is_still_placed() -> None:
    """Near forms: an array nothing else names, made in the call or bound once, is placed."""
    for made in ("torch.from_numpy(np.ones(3))", "torch.as_tensor([1.0, 2.0, 3.0])"):
        port = port_text(_HEAD + f"t = {made}\nprint(t * 2)\n")
        assert "device=device" in port.source or ".to(device)" in port.source.split("OUT")[-1]
        assert not port.remaining, port.remaining


def test_an_operand_of_a_cpu_only_function_stays_on_the_host() -> None:
    """``torch.histogram`` has no CUDA kernel (pytorch#69519: NotImplementedError on a CUDA
    tensor; the simulated accelerator runs it, so the oracle cannot show it): kept, unsaid."""
    for call in ("torch.histogram(y, bins=3).hist", "torch.histogramdd(y.view(3, 1), bins=3)[0]"):
        source = _HEAD + f"x = torch.tensor([3.0, 1.0, 2.0])\ny = x * 2\nprint({call})\n"
        port = port_text(source)
        assert "x = torch.tensor([3.0, 1.0, 2.0])\n" in port.source, port.source
        assert not port.failures


def test_a_random_draw_from_a_side_tensor_is_said() -> None:
    """``torch.randn_like(x)``, ``torch.multinomial(p, n)``, ``F.dropout(x)``, ``x.uniform_()``
    of a placed ``x`` draw from the device's generator: other values than the original's CPU
    draws on a real accelerator (the simulated one shares the CPU's generator, so the oracle
    cannot show it). The factories are moved after creation to keep their values; a draw
    computed from the tensor is reported, the tensor left where it was."""
    draws = (
        "x = torch.zeros(3)\nprint(torch.randn_like(x) + x)\n",
        "x = torch.tensor([0.2, 0.8])\nprint(torch.multinomial(x, 5, replacement=True) * 1)\n",
        "x = torch.ones(6)\nprint(torch.nn.functional.dropout(x, 0.5))\n",
        "x = torch.empty(3)\nx.uniform_()\nprint(x * 1)\n",
    )
    for draw in draws:
        port = port_text(_HEAD + draw)
        assert draw.split("\n")[0] + "\n" in port.source, port.source
        assert any("random draw" in f.message for f in port.remaining), port.remaining


def test_a_model_input_sharing_an_arrays_memory_is_placed_or_said() -> None:
    """Not a side computation (it meets the model), and older than h31ah: the flow wrote
    ``torch.from_numpy(a).to(device)``, a copy; the write to ``a`` after it was lost on the
    device, silently (on ``sim``: other values, no finding). A strict xfail until d31ai:
    now reported (``port/_shared_memory``; the class: ``test_shared_memory.py``)."""
    source = (
        "import numpy as np\nimport torch\nimport torch.nn as nn\n\nmodel = nn.Linear(3, 2)\n"
        "a = np.zeros((1, 3), dtype=np.float32)\nt = torch.from_numpy(a)\na[0, 0] = 5.0\n"
        "OUT.append(model(t))\n"
    )
    placed_or_said([source])
