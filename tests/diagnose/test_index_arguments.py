"""Which argument of an index op is named, read from PyTorch's wording of each backend.

CPU-only: ``meta`` stands for the accelerator; the sentence PyTorch wrote is given as
CUDA writes it (the argument and the kernel: "when checking argument for argument index in
method wrapper_CUDA_gather"), as the simulated device and meta write it (the aten op) and
as ``checkDevice`` writes it (``take_along_dim``). The simulated device's own runs are in
test_strict_advice.py.
"""

from __future__ import annotations

import ast

import pytest
import torch

from torchport.diagnose._index_arguments import index_culprit
from torchport.diagnose._mismatch_message import is_device_mismatch

_CUDA = (
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
    "and cpu! (when checking argument for argument index in method wrapper_CUDA_{op})"
)
_ATEN = (
    "Expected all tensors to be on the same device, but found at least two devices, meta "
    "and cpu! (when checking argument for aten.{op}.default)"
)

_LINE = "out = torch.gather(a, 1, i) + torch.index_select(b, 0, j) + F.embedding(k, w)"


def _values() -> dict[str, torch.Tensor]:
    device = torch.device("meta")
    return {
        "a": torch.ones(2, 2, device=device),
        "i": torch.zeros(2, 2, dtype=torch.long, device=device),
        "b": torch.ones(2, 2, device=device),
        "j": torch.zeros(2, dtype=torch.long),  # the stray of index_select
        "k": torch.zeros(2, dtype=torch.long),  # the stray of embedding
        "w": torch.ones(4, 2, device=device),
    }


@pytest.mark.parametrize(
    ("said", "culprit", "op"),
    [
        (_CUDA.format(op="_index_select"), "`j`", "index_select"),  # CUDA's kernel name
        (_ATEN.format(op="index_select"), "`j`", "index_select"),
        (_ATEN.format(op="embedding"), "`k`", "embedding"),
        (_ATEN.format(op="gather"), None, "gather"),  # gather's arguments agree: no culprit
    ],
)
def test_the_op_pytorch_named_picks_the_call_on_a_line_of_several(
    said: str, culprit: str | None, op: str
) -> None:
    words = ["meta", "cpu"]
    found = index_culprit([ast.parse(_LINE)], _values(), said, words)
    if culprit is None:
        assert found is None
        return
    assert found is not None
    sentence, fix = found
    assert sentence.startswith(f"{op}'s ") and f"{culprit} is on cpu" in sentence
    assert fix.startswith("move the index to the tensor it indexes")


def test_an_expression_not_on_the_line_takes_the_other_device_of_the_message() -> None:
    values = {"a": torch.ones(2, 2, device="meta")}
    said = _ATEN.format(op="gather")
    found = index_culprit(
        [ast.parse("torch.gather(a, 1, make_index())")], values, said, ["meta", "cpu"]
    )
    assert found is not None
    assert "index `make_index()` is on cpu" in found[0]
    assert "make_index().to(a.device)" in found[1]


def test_check_devices_wording_is_a_mismatch() -> None:
    said = (
        "Expected tensor to have cuda:0 Device, but got tensor with cpu Device (while checking "
        "arguments for torch.take_along_dim():)"
    )
    assert is_device_mismatch(RuntimeError(said))
    values = {"x": torch.ones(2, 2, device="meta"), "idx": torch.zeros(2, 2, dtype=torch.long)}
    found = index_culprit(
        [ast.parse("torch.take_along_dim(x, idx, 1)")], values, said, ["cuda:0", "cpu"]
    )
    assert found is not None and "take_along_dim's indices `idx` is on cpu" in found[0]


def test_the_newer_cuda_wording_that_names_the_argument_picks_the_op() -> None:
    """As reported in gitmylo/ComfyUI-audio-nodes#2 (the index on the GPU, the weight not)."""
    said = (
        "Expected all tensors to be on the same device, but got index is on cuda:0, different "
        "from other tensors on cpu (when checking argument in method wrapper_CUDA__index_select)"
    )
    assert is_device_mismatch(RuntimeError(said))
    values = {"k": torch.zeros(2, dtype=torch.long, device="meta"), "w": torch.ones(4, 2)}
    found = index_culprit([ast.parse("F.embedding(k, w)")], values, said, ["cuda:0", "cpu"])
    assert found is not None
    assert "embedding's weight (the indexed tensor) `w` is on cpu" in found[0]
    assert found[1] == "move `w` to the device of the rest: w.to(k.device)"
