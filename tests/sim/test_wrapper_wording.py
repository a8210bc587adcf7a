"""Mismatches CUDA's dispatcher wrapper finds are worded as it words them, naming the argument.

Torch's codegen wraps most CUDA kernels in a device check over the tensor arguments in
schema order (``c10::impl::common_device_check_failure``): "Expected all tensors to be on
the same device, but got offsets is on cpu, different from other tensors on cuda:0 (when
checking argument in method wrapper_CUDA___embedding_bag_forward_only)". Ops marked
``device_check: NoCheck`` (``add``) keep their kernel's wording. The oracle restates the
rule: the first tensor argument's device is the common one, the first argument on
another device is named. Under ``tp.strict()`` the argument named is the one the line
wrote (``offsets``).
"""

from __future__ import annotations

import itertools

import pytest

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

_ARGS = ("weight", "indices", "offsets", "per_sample_weights")
# Which of embedding_bag's tensors stay on the host; the rest are on the device.
_PLACEMENTS = [
    host for n in range(1, 4) for host in itertools.combinations(_ARGS, n) if "weight" not in host
] + [("weight",), ("weight", "offsets")]

_PROGRAM = """
import torch
import torch.nn.functional as F


def functional(device):
    bag = torch.nn.EmbeddingBag(10, 3, mode="sum").to(device)
    idx, offsets = torch.tensor([1, 2, 4, 5], device=device), torch.tensor([0, 2])
    return F.embedding_bag(idx, bag.weight, offsets)


def keyword(device):
    weight = torch.randn(10, 3, device=device)
    idx, offsets = torch.tensor([1, 2, 4, 5], device=device), torch.tensor([0, 2])
    return F.embedding_bag(input=idx, weight=weight, offsets=offsets, mode="mean")


def module(device):
    bag = torch.nn.EmbeddingBag(10, 3, mode="sum").to(device)
    idx, offsets = torch.tensor([1, 2, 4, 5], device=device), torch.tensor([0, 2])
    return bag(idx, offsets)
"""

_CHILD = """
import torch.nn.functional as F
import torchport as tp
device = simulate_accelerator()
out = {}
for host in PLACEMENTS:
    where = lambda name: "cpu" if name in host else device
    weight = torch.randn(10, 3).to(where("weight"))
    indices = torch.tensor([1, 2, 4, 5]).to(where("indices"))
    offsets = torch.tensor([0, 2]).to(where("offsets"))
    per_sample_weights = torch.rand(4).to(where("per_sample_weights"))
    for grad in (False, True):  # _embedding_bag_forward_only, or _embedding_bag
        weight.requires_grad_(grad)
        try:
            F.embedding_bag(indices, weight, offsets, mode="sum",
                            per_sample_weights=per_sample_weights)
            said = None
        except RuntimeError as error:
            said = str(error)
        out[f"{'+'.join(host)} {grad}"] = said
import os, tempfile
folder = tempfile.mkdtemp()
path = os.path.join(folder, "bags.py")  # strict reads the failing line from its file
with open(path, "w") as f:
    f.write(PROGRAM)
scope = {}
exec(compile(PROGRAM, path, "exec"), scope)
adviced = {}
for name in ("functional", "keyword", "module"):
    try:
        with tp.strict():
            scope[name](device)
        adviced[name] = None
    except tp.DeviceMismatchError as error:
        adviced[name] = str(error)
print(json.dumps({"said": out, "adviced": adviced}))
"""


def _cuda_says(host: tuple[str, ...], grad: bool) -> str:
    order = [name for name in _ARGS]  # _embedding_bag's schema order
    common = "cpu" if order[0] in host else "sim:0"
    stray = next(name for name in order if ("cpu" if name in host else "sim:0") != common)
    there = "cpu" if stray in host else "sim:0"
    method = "wrapper_CUDA___embedding_bag" + ("" if grad else "_forward_only")
    return (
        f"Expected all tensors to be on the same device, but got {stray} is on {there}, "
        f"different from other tensors on {common} (when checking argument in method {method})"
    )


def test_embedding_bag_names_the_stray_argument_as_cudas_wrapper_and_strict_name_offsets() -> None:
    child = _CHILD.replace("PLACEMENTS", repr(_PLACEMENTS)).replace("PROGRAM", repr(_PROGRAM))
    got = run_isolated(child)
    for host in _PLACEMENTS:
        for grad in (False, True):
            assert got["said"][f"{'+'.join(host)} {grad}"] == _cuda_says(host, grad), host
    for name, advice in got["adviced"].items():
        assert advice is not None, name
        assert "offsets" in advice.split("(PyTorch said")[0], (name, advice)
        assert "offsets.to(" in advice or "to_device" in advice, (name, advice)
