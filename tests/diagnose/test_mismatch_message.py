"""Which errors are PyTorch's device mismatches, in every backend's and release's wording.

The messages a culprit is read into are tested through ``strict()`` in test_strict.py.
"""

from __future__ import annotations

import pytest

from torchport.diagnose._mismatch_message import is_device_mismatch


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu! (when checking argument for argument mat1 in method "
            "wrapper_CUDA_addmm)",
            True,
        ),
        ("Tensor on device cpu is not on the expected device meta!", True),
        (
            "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the "
            "same",
            True,
        ),
        ("Input type (CUDAFloatType) and weight type (CPUFloatType) should be the same", True),
        ("Input type (MPSFloatType) and bias type (CPUFloatType) should be the same", True),
        ("Input type (double) and bias type (float) should be the same", False),
        ("indices should be either on cpu or on the same device as the indexed tensor (cpu)", True),
        ("Expected b and A to be on the same device, but found b on cpu and A on cuda:0", True),
        ("Expected a 'cuda' device type for generator but found 'cpu'", True),
        ("mat1 and mat2 shapes cannot be multiplied (2x4 and 5x3)", False),
        ("CUDA out of memory. Tried to allocate 2.00 GiB", False),
    ],
)
def test_which_messages_are_device_mismatches(message: str, expected: bool) -> None:
    assert is_device_mismatch(RuntimeError(message)) is expected


def test_index_error_from_index_ops_counts() -> None:
    assert is_device_mismatch(IndexError("indices should be either on cpu or on the same device"))
    assert not is_device_mismatch(KeyError("same device"))


@pytest.mark.parametrize(
    ("was", "got", "mismatch"),
    [
        ("torch.cuda.FloatTensor", "torch.FloatTensor", True),
        ("torch.FloatTensor", "torch.xpu.FloatTensor", True),
        ("torch.cuda.FloatTensor", "torch.cuda.HalfTensor", False),  # a dtype change
        ("torch.FloatTensor", "torch.DoubleTensor", False),
    ],
)
def test_the_hook_wording_is_a_device_mismatch_only_when_the_device_changed(
    was: str, got: str, mismatch: bool
) -> None:
    message = f"hook 'scale' has changed the type of value (was {was} got {got})"
    assert is_device_mismatch(RuntimeError(message)) is mismatch


@pytest.mark.parametrize(
    ("said", "words"),
    [
        ("found at least two devices, cuda:0 and cpu!", ["cuda:0", "cpu"]),
        ("found at least two devices, xpu:1 and cpu!", ["xpu:1", "cpu"]),
        ("Tensor on device cpu is not on the expected device meta!", ["cpu", "meta"]),
        ("found at least two devices, npu:0 and cpu!", ["npu:0", "cpu"]),  # torch_npu's name
        ("we've found two devices, hpu:0 and cpu", ["hpu:0", "cpu"]),  # "ve" is prose here
    ],
)
def test_the_devices_a_message_names_come_from_the_vocabulary(said: str, words: list[str]) -> None:
    """Every type of the vocabulary is a device word (the list was cuda/mps/xpu/hpu/meta, so
    a simulated or Ascend device's message named no device and lost its culprit)."""
    from torchport.diagnose._mismatch_message import _device_words

    assert _device_words(said) == words
