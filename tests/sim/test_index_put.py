"""Where ``index_put_`` may take its values from, on the simulated device as on CUDA.

The oracle is CUDA's ``_index_put_impl_`` (ATen's TensorAdvancedIndexing.cpp), restated
here from its source: without ``accumulate``, one-element host values with a lone mask
on the tensor's device are read on the host (``masked_fill_``); a 0-dim value from
another device is moved to the tensor's; with ``accumulate`` (or deterministic
algorithms and more than one value) a CUDA tensor takes the sorting kernel, which
refuses values on another device ("expected device ... for value tensor"); anything
else reaches a TensorIterator that refuses them ("Expected all tensors to be on the
same device ..."). Every placement of the tensor, its index and its values is run; what
CUDA writes must equal what the CPU writes.
"""

from __future__ import annotations

import itertools

import pytest

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

# (where the tensor is, the index's kind and place)
_INDICES = [
    ("device", "long_host"),
    ("device", "long_device"),
    ("device", "mask_host"),
    ("device", "mask_device"),
    ("device", "none_mask_device"),
    ("device", "two_long_host"),
    ("host", "long_host"),
    ("host", "mask_host"),
]
# (where the values are, their shape: "0d", "one" (shape (1,)), "many")
_VALUES = list(itertools.product(["host", "device"], ["0d", "one", "many"]))
_CASES = [
    (tensor, index, values, shape, accumulate, deterministic)
    for (tensor, index), (values, shape), accumulate, deterministic in itertools.product(
        _INDICES, _VALUES, [False, True], [False, True]
    )
]

_CHILD = """
device = simulate_accelerator()
torch.manual_seed(0)
base = torch.randn(3, 4)
mask_rows, mask_columns = torch.rand(3) > 0.5, torch.rand(4) > 0.5


def put(case, cpu_only):
    tensor, index, values, shape, accumulate, deterministic = case
    where = lambda place: "cpu" if cpu_only or place == "host" else device
    kind, _, place = index.rpartition("_")
    if kind == "long":
        indices = (torch.tensor([0, 2, 0]).to(where(place)),)
    elif kind == "two_long":
        indices = (torch.tensor([0, 2, 0]), torch.tensor([1, 1, 3]))
    elif kind == "mask":
        indices = (mask_rows.to(where(place)),)
    else:  # x[:, mask]
        indices = (None, mask_columns.to(where(place)))
    many = (3, 1) if kind == "none_mask" else (3,) if kind == "two_long" else (4,)
    value = {"0d": torch.tensor(2.5), "one": torch.tensor([2.5]), "many": torch.arange(
        float(torch.Size(many).numel())).reshape(many)}[shape].to(where(values))
    x = base.to(where(tensor), copy=True)
    torch.use_deterministic_algorithms(deterministic)
    try:
        torch.ops.aten.index_put_(x, list(indices), value, accumulate)
    except RuntimeError as error:
        return str(error)
    finally:
        torch.use_deterministic_algorithms(False)
    return x.cpu().tolist()


cases = json.loads(CASES)
print(json.dumps([[put(case, True), put(case, False)] for case in cases]))
"""


def _cuda_refusal(case: tuple[str, str, str, str, bool, bool]) -> str | None:
    """What CUDA's ``_index_put_impl_`` raises for ``case``, restated from ATen."""
    tensor, index, values, shape, accumulate, deterministic = case
    if values == tensor or shape == "0d":
        return None
    tensor_device, values_device = ("sim:0", "cpu") if tensor == "device" else ("cpu", "sim:0")
    numel = 1 if shape == "one" else 3 if index == "two_long_host" else 4
    lone_device_mask = index in ("mask_device", "none_mask_device")
    if not accumulate and values == "host" and numel == 1 and lone_device_mask:
        return None  # masked_fill_(mask, value.item())
    if tensor == "device" and (accumulate or (deterministic and numel > 1)):
        return f"expected device {tensor_device} but got device {values_device} for value tensor"
    return (
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{tensor_device} and {values_device}!"
    )


def test_every_placement_of_index_put_values_is_taken_or_refused_as_cuda_does() -> None:
    import json

    got = run_isolated(_CHILD.replace("CASES", repr(json.dumps(_CASES))))
    assert len(got) == len(_CASES)
    for case, (cpu, sim) in zip(_CASES, got, strict=True):
        assert not isinstance(cpu, str), (case, cpu)
        refusal = _cuda_refusal(case)
        if refusal is None:
            assert sim == cpu, case
        else:
            assert sim == refusal, case
