"""Generated strided views of a host tensor: permuted, sliced with gaps, expanded."""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import strategies as st


@st.composite
def views(draw: st.DrawFn) -> dict[str, Any]:
    """A shape and the steps that view a contiguous tensor of it (see :func:`build`)."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    steps: list[tuple[Any, ...]] = []
    dims = len(shape)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["permute", "slice", "expand"]))
        if kind == "permute":
            steps.append(("permute", draw(st.permutations(range(dims)))))
        elif kind == "slice":
            steps.append(
                (
                    "slice",
                    draw(st.integers(0, dims - 1)),
                    draw(st.integers(0, 1)),
                    draw(st.integers(1, 2)),
                )
            )
        else:
            steps.append(("expand", draw(st.integers(2, 3))))
            dims += 1
    return {"shape": shape, "steps": steps}


def build(shape: list[int], steps: list[tuple[Any, ...]]) -> torch.Tensor:
    """The view ``steps`` make of ``arange`` shaped ``shape`` (a slice keeps one element at
    least; an expansion adds a leading dimension of stride 0)."""
    x = torch.arange(float(torch.Size(shape).numel())).reshape(shape)
    for step in steps:
        if step[0] == "permute":
            x = x.permute(*step[1])
        elif step[0] == "slice":
            _, dim, start, stride = step
            start = min(start, x.shape[dim] - 1)
            x = x.narrow(dim, start, x.shape[dim] - start)[
                (slice(None),) * dim + (slice(None, None, stride),)
            ]
        else:
            x = x.unsqueeze(0).expand(step[1], *x.shape)
    return x
