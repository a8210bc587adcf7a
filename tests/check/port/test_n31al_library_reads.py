"""An array read again only by a library that does not write it: its sharing tensor is moved.

``inputs = torch.from_numpy(x_train)``, ``model(inputs)``, then ``plt.plot(x_train, ...)``
(yunjey/pytorch-tutorial's linear regression): ``_shared_memory`` counted as a read of the
array only a few builtins (``len``, ``print``), so every later use by a library was a possible
write, and the port left TP503 on a tensor it could move (noise, issue 31 item 5). Now a read is
also a numpy function that makes a new value (``np.mean(a)``, ``np.clip(a, 0, 1)``, no
``out=``), matplotlib's pyplot, ``json.dumps``, and another sharing tensor of the array that
no name writes in place; a call that may write the array (``np.copyto(a, v)``, ``a.fill(0)``,
``out=a``, a user's function, an alias ``np.asarray(a)`` written) keeps TP503.

The oracle (``no_cuda_sim``, apart from the port): the original on the CPU, the port on the
simulated accelerator. A read: nothing left, the original's values, every output on
``sim:0``. A write: a finding left (TP503, the write is what the sharing carries: a missed one
would be a silent wrong result), and the port stops or computes the original's values.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import needs_matplotlib

pytest.importorskip("torch")

from tests.check.port.no_cuda_sim import ports_on_sim_apart, ports_on_sim_or_stops
from torchport.check.port import port_text

MAKERS = {
    "from_numpy": "torch.from_numpy(a)",
    "as_tensor": "torch.as_tensor(a)",
    "from_numpy, cast": "torch.from_numpy(a).float()",
    "a view": "torch.from_numpy(a[:, :3])",
}
READS = {  # between the tensor and the model: nothing written through the sharing
    "plotted": "plt.plot(a[0], a[0], 'ro', label='data')",
    "scattered": "plt.scatter(a, a)",
    "numpy's mean": "print(np.mean(a), np.std(a, axis=0))",
    "a clipped copy written": "b = np.clip(a, 0.5, 1.0)\nb[0, 0] = 9.0",
    "a shape": "print(a.shape, a.ndim)",
    "json": "print(json.dumps(a.tolist()))",
    "saved": "np.save(io.BytesIO(), a)",
    "summed": "print(sum(a), np.max(a))",
    "another tensor of it": "OUT.append(model(torch.from_numpy(a)))",
    "another named tensor": "u = torch.from_numpy(a)\nOUT.append(model(u).detach())",
}
WRITES = {  # each one seen through the sharing on the CPU: TP503 stays
    "copied into": "np.copyto(a, np.ones_like(a))",
    "filled": "a.fill(2.0)",
    "clipped in place": "np.clip(a, 0.5, 1.0, out=a)",
    "added in place": "np.add(a, 1.0, out=a)",
    "a user's function": "scale(a)",
    "an alias written": "b = np.asarray(a)\nb[0, 0] = 5.0",
    "another tensor written": "u = torch.from_numpy(a)\nu[0, 0] = 5.0",
    "another tensor, in place": "u = torch.from_numpy(a)\nu.add_(1.0)",
    "shuffled": "np.random.default_rng(0).shuffle(a[0])",
}
PLACES = ("the module", "a main")
_HEAD = (
    "import io\nimport json\n\nimport matplotlib\nmatplotlib.use('Agg')\n"
    "import matplotlib.pyplot as plt\nimport numpy as np\nimport torch\nimport torch.nn as nn\n\n"
    "model = nn.Linear(3, 2)\n\ndef scale(x):\n    x *= 2.0\n\n"
)


def _program(maker: str, use: str, place: str) -> str:
    body = [
        "a = np.array([[0.25, 0.5, 0.75]], dtype=np.float32)",
        f"t = {MAKERS[maker]}",
        *(READS | WRITES)[use].split("\n"),
        "OUT.append(model(t))",
    ]
    if place == "a main":
        return _HEAD + "def main():\n" + "".join(f"    {b}\n" for b in body) + "main()\n"
    return _HEAD + "".join(f"{b}\n" for b in body)


CASE = st.tuples(
    st.sampled_from(sorted(MAKERS)),
    st.sampled_from(sorted(READS | WRITES)),
    st.sampled_from(PLACES),
)
_READ_EACH = [
    (m, r, p)
    for (m, p), r in zip(itertools.cycle(itertools.product(sorted(MAKERS), PLACES)), sorted(READS))
]
_WRITE_EACH = [(m, w, "a main") for m, w in zip(itertools.cycle(sorted(MAKERS)), sorted(WRITES))]


def _judged(cases: list[tuple[str, str, str]]) -> None:
    sources = [_program(*case) for case in cases]
    ports = [port_text(source) for source in sources]
    runs = ports_on_sim_or_stops([(s, p.source) for s, p in zip(sources, ports, strict=True)])
    for case, ported, run in zip(cases, ports, runs, strict=True):
        assert port_text(ported.source).source == ported.source, case  # idempotent
        left = [(f.code, f.line) for f in ported.remaining]
        if case[1] in READS:  # noise before: the array only read again
            assert left == [], (case, ported.remaining, ported.source)
            assert run.get("same") and set(run["devices"]) == {"sim:0"}, (case, run)
            continue
        assert left and {c for c, _ in left} == {"TP503"}, (case, ported.source)
        assert "error" in run or run.get("same"), (case, run, ported.source)  # never silent


# (each example is one child's run on `sim`: the explicit tables, and one drawn list)
@needs_matplotlib
@settings(max_examples=1, deadline=None, phases=(Phase.explicit, Phase.generate))
@given(st.lists(CASE, min_size=4, max_size=8))
@example(_READ_EACH)
@example(_WRITE_EACH)
def test_an_array_read_only_by_libraries_is_moved_and_a_write_is_said(
    cases: list[tuple[str, str, str]],
) -> None:
    _judged(cases)


@needs_matplotlib
def test_the_linear_regression_tutorials_form_is_ported_with_nothing_left() -> None:
    """yunjey/pytorch-tutorial 01-basics/linear_regression's shape (written here): the arrays
    made tensors in the loop, again for the prediction, then plotted."""
    source = _HEAD + (
        "x_train = np.array([[3.3], [4.4], [5.5]], dtype=np.float32)\n"
        "y_train = np.array([[1.7], [2.76], [2.09]], dtype=np.float32)\n"
        "lin = nn.Linear(1, 1)\nopt = torch.optim.SGD(lin.parameters(), lr=0.001)\n"
        "for epoch in range(3):\n    inputs = torch.from_numpy(x_train)\n"
        "    targets = torch.from_numpy(y_train)\n"
        "    loss = nn.functional.mse_loss(lin(inputs), targets)\n"
        "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
        "predicted = lin(torch.from_numpy(x_train)).detach().numpy()\n"
        "plt.plot(x_train, y_train, 'ro', label='Original data')\n"
        "plt.plot(x_train, predicted, label='Fitted line')\nOUT.append(lin.weight.detach())\n"
    )
    ported = port_text(source)
    assert ported.remaining == [], (ported.remaining, ported.source)
    (run,) = ports_on_sim_apart([(source, ported.source)])  # (it trains)
    assert run.get("same") and set(run["devices"]) == {"sim:0"}, (run, ported.source)
