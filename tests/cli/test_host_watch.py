"""The host-work watch of ``port --verify``'s child (``torchport.cli._host_watch``).

Hypothesis writes small programs, statement by statement, each placed on the
host (``cpu``) or on a device (``meta`` stands in for the accelerator here: the
watch asks only whether a tensor is on the host). The oracle is the generator's
own table: which statement is real compute on the host (a heavy op, an op on a
host leaf that requires grad, a backward, an optimizer step) and how many such
calls it makes; never the watch's code. Bookkeeping on host values (``.item()``,
``.numpy()``, ``torch.tensor(list)``, indexing lengths, light ops, anything under
``no_grad`` that is not heavy, a ``collate_fn``, a module's ``__init__``) is never
reported, and nothing placed on the device is.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from torchport.cli._port_child import _watch  # noqa: E402  (after the torch check)

# The setup, run outside the watch: each value on the host and on the device ("meta").
_SETUP = """
import torch
from torch import nn
for p, dev in (("host", "cpu"), ("dev", "meta")):
    g = globals()
    g["A_" + p], g["B_" + p] = torch.randn(4, 4, device=dev), torch.randn(4, 4, device=dev)
    g["W_" + p] = torch.randn(4, 4, device=dev, requires_grad=True)
    g["X_" + p] = torch.randn(2, 4, device=dev)
    g["IMG_" + p] = torch.randn(1, 1, 5, 5, device=dev)
    g["IDX_" + p] = torch.tensor([0, 2], device=dev)
    g["LIN_" + p] = nn.Linear(4, 3, device=dev)
    g["CONV_" + p] = nn.Conv2d(1, 2, 3, device=dev)
    g["EMB_" + p] = nn.Embedding(5, 3, device=dev)
    g["OPT_" + p] = torch.optim.SGD([g["W_" + p]], lr=0.01)
    g["W_" + p].grad = torch.zeros(4, 4, device=dev)
NONLEAF_host = W_host * 1  # requires grad, not a leaf: as a `.cpu()` of a device output is
LENGTHS = torch.tensor([3, 2, 1])
Z_host, Y_host = torch.randn(4, 4), torch.randn(4, 4)
"""

# The prologue of the watched file: a collate_fn and a module whose __init__ compute on the host.
_PROLOGUE = [
    "def collate(items):",
    "    return torch.mm(torch.ones(2, 2), torch.ones(2, 2)) + len(items)",
    "class Probe(nn.Module):",
    "    def __init__(self):",
    "        super().__init__()",
    "        self.n = torch.mm(torch.ones(2, 2), torch.ones(2, 2)).numel()",
    "LOADER = torch.utils.data.DataLoader(list(range(4)), batch_size=2, collate_fn=collate)",
]

# kind: (statement, host-work calls it makes per run when placed on the host)
_COMPUTE = {
    "mm": ("r = torch.mm(A_{p}, B_{p})", 1),
    "matmul": ("r = A_{p} @ B_{p}", 1),
    "linear": ("r = LIN_{p}(X_{p})", 1),
    "conv": ("r = CONV_{p}(IMG_{p})", 1),
    "embedding": ("r = EMB_{p}(IDX_{p})", 1),
    "grad": ("r = (W_{p} * 2).sum()", 1),  # the product: a host leaf that requires grad
    "backward": ("(W_{p} * 3).sum().backward()", 2),  # the product and the backward
    "step": ("OPT_{p}.step()", 1),
    "no_grad_heavy": ("with torch.no_grad(): r = torch.mm(A_{p}, B_{p})", 1),
}
# Host bookkeeping: never reported.
_BOOKKEEPING = [
    "v = A_host.sum().item()",
    "v = A_host.numpy()",
    "v = torch.tensor([1.0, 2.0])",
    "v = LENGTHS[1]",
    "v = (A_host * 2 + 1).mean()",
    "v = NONLEAF_host.max()",
    "v = W_host.detach().numpy()",
    "v = W_host.clone().detach().numpy()",  # a snapshot for a history
    "v = W_host.shape[0] + W_host.numel()",
    "with torch.no_grad(): v = W_host * 2",
    "v = next(iter(LOADER))",
    "v = Probe().n",
]
# Put on the host by the program itself: reported, as possibly deliberate.
_CHOSEN = [
    "r = torch.mm(Z_host.cpu(), B_host)",
    "r = torch.mm(torch.ones(4, 4, device='cpu'), Y_host)",
]

_statement = st.one_of(
    st.tuples(
        st.just("compute"), st.sampled_from(sorted(_COMPUTE)), st.sampled_from(["host", "dev"])
    ),
    st.tuples(st.just("bookkeeping"), st.sampled_from(_BOOKKEEPING), st.just("host")),
    st.tuples(st.just("chosen"), st.sampled_from(_CHOSEN), st.just("host")),
)


def _program(
    statements: list[tuple[str, str, str]], runs: int
) -> tuple[str, dict[int, tuple[int, bool]]]:
    """The watched file's text and the oracle: {line: (calls, chosen)} for each host-work line."""
    lines = [*_PROLOGUE, f"for _ in range({runs}):"]
    expected: dict[int, tuple[int, bool]] = {}
    for group, what, p in statements:
        if group == "compute":
            text, calls = _COMPUTE[what]
            lines.append("    " + text.format(p=p))
            if p == "host":
                expected[len(lines)] = (calls * runs, False)
        else:
            lines.append("    " + what)
            if group == "chosen":
                expected[len(lines)] = (runs, True)
    return "\n".join(lines) + "\n", expected


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(statements=st.lists(_statement, min_size=1, max_size=10), runs=st.integers(1, 3))
def test_host_work_is_reported_at_its_line_and_nothing_else(
    tmp_path: Path, statements: list[tuple[str, str, str]], runs: int
) -> None:
    _watched_as_written(tmp_path, statements, runs, contextlib.nullcontext())


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(statements=st.lists(_statement, min_size=1, max_size=10), runs=st.integers(1, 2))
def test_host_work_is_reported_through_the_cuda_redirect(
    tmp_path: Path, statements: list[tuple[str, str, str]], runs: int
) -> None:
    """A run seen as CUDA (``port --verify``'s first) goes through the redirect's function
    mode, a torchport frame above every call: the watch reports the same places through it
    (8e497a0b reported none but optimizer steps, and then said of all the rest "only where
    CUDA is missing: the program's CUDA-or-CPU choice picked the CPU")."""
    from torchport.run._redirect import redirect

    _watched_as_written(tmp_path, statements, runs, redirect("meta"))


def _watched_as_written(
    tmp_path: Path,
    statements: list[tuple[str, str, str]],
    runs: int,
    around: contextlib.AbstractContextManager[object],
) -> None:
    text, expected = _program(statements, runs)
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    path = root / "train.py"
    path.write_text(text)
    scope: dict[str, object] = {}
    exec(_SETUP, scope)  # outside the watch and outside ROOTS
    float64: list[list[object]] = []
    places: list[list[object]] = []
    with _watch([str(root)], float64, places), around:
        exec(compile(text, str(path), "exec"), scope)
    found = {}
    for where, line, call, calls, kind, chosen in places:
        assert where == str(path.resolve()) and (line not in found), places
        found[line] = (calls, chosen)
        assert kind in ("grad", "backward", "step", "heavy") and call, places
    assert found == expected, text


def test_the_names_and_kinds_read_as_the_findings_say(tmp_path: Path) -> None:
    statements = [("compute", k, "host") for k in ("mm", "linear", "backward", "step")]
    text, _ = _program(statements, 1)
    (tmp_path / "t.py").write_text(text)
    scope: dict[str, object] = {}
    exec(_SETUP, scope)
    places: list[list[object]] = []
    with _watch([str(tmp_path)], [], places):
        exec(compile(text, str(tmp_path / "t.py"), "exec"), scope)
    named = {line: (call, kind) for _, line, call, _, kind, _ in places}
    first = len(_PROLOGUE) + 2
    assert named[first] == ("torch.mm", "heavy")
    assert named[first + 1] == ("torch.nn.functional.linear", "heavy")
    assert named[first + 2] == ("Tensor.backward", "backward")  # the weightier of its two calls
    assert named[first + 3] == ("SGD.step", "step")


@settings(max_examples=40, deadline=None)
@given(
    ops=st.lists(st.sampled_from(["mul", "add", "exp", "view"]), min_size=1, max_size=30),
    place=st.sampled_from(["host", "dev"]),
)
def test_a_backward_reaches_the_host_leaf_however_deep(ops: list[str], place: str) -> None:
    # On torch 2.11 each read of a C++ node makes a new Python object, freed after: the
    # walk held ids alone and took a grandchild, given a freed node's id, for seen (a
    # backward two ops from its leaf went unheard).
    from torchport.cli._host_watch import _host_leaf_in_graph

    leaf = torch.randn(4, device="cpu" if place == "host" else "meta", requires_grad=True)
    y = leaf
    for op in ops:
        y = {"mul": lambda t: t * 2, "add": lambda t: t + 1, "exp": torch.exp}.get(
            op, lambda t: t.view(4)
        )(y)
    assert _host_leaf_in_graph(y.sum()) is (place == "host")  # the oracle: where the leaf is
