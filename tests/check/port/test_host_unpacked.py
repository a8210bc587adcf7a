"""TP522 at a numpy call of a name unpacked from a project function's host result.

Found on vinhkhuc/PyTorch-Mini-Tutorials' ``6_lstm.py``: ``trX, teX, trY, teY =
load_mnist(...)`` (a sibling module's function returning numpy arrays only), then
``trX = np.swapaxes(trX, 0, 1)``, then ``trX = torch.from_numpy(trX).float()`` given to the
model (the port moves it). The flow-insensitive device flow makes ``trX`` a device value, and
the unpacked binding was not followed (:mod:`~torchport.check.port._host_values`), so the port
advised ``.detach().cpu()`` on a numpy array where the ported program ran to its end.

Programs are generated: a project of ``train.py`` and a sibling module whose
``load()`` returns a tuple built one of several ways (numpy results, ``/=``, a slice of
itself, another function of the module, a parameter handed the model's output), called from
``train.py`` by name, through the module, or as a function of ``train.py`` itself; or a
tuple written in place holding the model's output at a random position. A numpy function
reads one unpacked name before it is rebound to a tensor the model reads. The oracle is the
ported program run on the simulated accelerator in a child: it stops at the numpy call
exactly when the port reports TP522 there.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import stops_on_sim
from torchport.check import port_paths

pytest.importorskip("torch")

# Bodies of `load(t)`: what it returns (`t` is what the caller hands it).
_BODIES = {
    "numpy": "    a = np.ones((2, 3))\n    b = np.zeros(3)\n    return a, b\n",
    "scaled": "    a = np.ones((2, 3)).astype(float)\n    a /= 255.0\n    a = a[:2]\n"
    "    return a, np.asarray([1.0, 2.0, 3.0])\n",
    "helper": "    return helper(3), helper(2).reshape(-1)\n",
    # the caller's value: not sure (reported or not as the flow says); the other item is host
    "parameter": "    return t, np.zeros(3)\n",
}
_HELPER = "def helper(n):\n    out = np.zeros((n, 3))\n    out[0] = 1\n    return out\n"
# How `train.py` gets the pair: the sibling's function by name, through its module, its own
# copy of the function, or a tuple written in place.
_CALLS = ("from", "module", "own", "literal")


def _module(body: str) -> str:
    return f"import numpy as np\n\n\n{_HELPER}\n\ndef load(t):\n{body}"


def _program(body: str, call: str, device_first: bool, read: str, module: str) -> str:
    head = ["import os", "import sys", "", "import numpy as np", "import torch", ""]
    head.append("sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))")
    value = "load(model(torch.ones(2, 3)).detach())"
    if call == "from":
        head.append(f"from {module} import load")
    elif call == "module":
        head.append(f"import {module}")
        value = f"{module}.{value}"
    elif call == "literal":
        items = ["model(torch.ones(2, 3)).detach()", "np.zeros(3)"]
        value = ", ".join(items if device_first else items[::-1])
    lines = [*head, "", "model = torch.nn.Linear(3, 3)", ""]
    if call == "own":
        lines += ["", *_module(body).split("\n")[3:], ""]
    lines += [
        f"first, second = {value}",
        f"print(np.sum(np.abs({read})))",
        f"{read} = torch.from_numpy(np.asarray({read}, dtype=np.float32)).float()",
        f"print(model({read}.reshape(-1, 3)[:1]).shape)",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(
        st.tuples(
            st.sampled_from(sorted(_BODIES)),
            st.sampled_from(_CALLS),
            st.booleans(),
            st.sampled_from(("first", "second")),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_numpy_read_of_an_unpacked_name_reported_exactly_where_the_run_stops(
    cases: list[tuple[str, str, bool, str]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths, reported = [], []
        for index, (body, call, device_first, read) in enumerate(cases):
            root = Path(tmp) / f"p{index}"
            root.mkdir()
            module = f"data_util{index}"  # (one name per program: they run in one child)
            (root / f"{module}.py").write_text(_module(_BODIES[body]))
            path = root / "train.py"
            path.write_text(_program(_BODIES[body], call, device_first, read, module))
            result = port_paths([str(path)], jobs=1)
            assert not result.errors, result.errors
            numpy_line = next(
                n
                for n, text in enumerate(path.read_text().splitlines(), 1)
                if text.startswith("print(np.sum(")
            )
            reported.append(
                any(f.code == "TP522" and f.line == numpy_line for f in result.remaining)
            )
            paths.append((str(path), numpy_line))
        stops = stops_on_sim([p for p, _ in paths])
    for case, stop, found, (_, numpy_line) in zip(cases, stops, reported, paths, strict=True):
        if stop is not None:
            kind, message, line = stop
            assert "device" in message or "numpy" in message, (case, kind, message)
            assert line == numpy_line, (case, stop, numpy_line)
        assert found == (stop is not None), (case, stop, found)
