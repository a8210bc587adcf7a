"""A sparse tensor's move is one copy per non-empty component, as on an accelerator.

ATen's ``_to_copy`` of a sparse tensor moves its index and value tensors apart: a COO
tensor's indices and values (two copies), a CSR/CSC tensor's compressed indices, plain
indices and values (three); a component with no element copies nothing. The prediction
counted one copy of the dense size (pygcn's ``adj.cuda()``: 1 predicted where the
simulated device counted 2 before refusing the tensor). The oracle restates the rule
from the dense matrix with NumPy: its nonzero count and shape.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp

_LAYOUTS = ["coo", "csr", "csc"]


def _expected(dense: np.ndarray, layout: str) -> tuple[int, int]:
    """(copies, bytes) a move of ``dense`` in ``layout`` makes on an accelerator."""
    nnz = int(np.count_nonzero(dense))
    rows, cols = dense.shape
    values = nnz * 4  # float32
    if layout == "coo":
        parts = [2 * nnz * 8, values]
    else:
        compressed = (rows if layout == "csr" else cols) + 1
        parts = [compressed * 8, nnz * 8, values]
    nonempty = [p for p in parts if p]
    return len(nonempty), sum(nonempty)


@given(
    layout=st.sampled_from(_LAYOUTS),
    shape=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    seed=st.integers(0, 2**16),
    density=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_a_sparse_tensors_move_counts_each_component(
    layout: str, shape: tuple[int, int], seed: int, density: float
) -> None:
    rng = np.random.default_rng(seed)
    dense = (rng.random(shape) < density) * rng.integers(1, 9, shape).astype(np.float32)
    x = torch.from_numpy(dense.astype(np.float32))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Sparse CS", UserWarning)  # torch: "in beta state"
        sparse = {"coo": x.to_sparse, "csr": x.to_sparse_csr, "csc": x.to_sparse_csc}[layout]()
    device = torch.device("cpu")  # the program's device in a CPU run
    with tp.audit() as report:
        sparse.to(device)
    copies = [e for e in report.transfers if e.device == "host→device"]
    count = sum(e.count for e in copies)
    assert (count, sum(e.bytes for e in copies)) == _expected(dense, layout)


def test_a_strided_move_is_still_one_copy() -> None:
    device = torch.device("cpu")  # the program's device in a CPU run
    with tp.audit() as report:
        torch.ones(3, 2).to(device)
    assert [(e.count, e.bytes) for e in report.transfers] == [(1, 24)]
