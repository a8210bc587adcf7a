"""The device types torchport knows: the vocabulary the checker, the runtime and diagnose read.

It imports nothing (``import torchport.check`` reads it and must not import
torch). Adding a backend is a change here, plus, where the backend needs torch
calls of its own, a branch in ``hardware/_backend.py``; no other module names a
device type in a device position (``tests/test_device_vocabulary.py`` holds
that with an allow-list that gives each exception its reason).

Where the lists come from: PyTorch's parser of device strings, ``parse_type`` in
``c10/core/Device.cpp``, whose table is every type ``torch.device("...")``
accepts. Its error message spells the table out; as of torch 2.13:
"Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve,
fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type".
To that, the names that out-of-tree backends give PrivateUse1
(``torch.utils.rename_privateuse1_backend``) and public code names: ``npu``
(Ascend's ``torch_npu``), ``mlu`` (Cambricon's ``torch_mlu``) and ``musa``
(Moore Threads' ``torch_musa``). ``tests/check/semantic/test_devices.py``
checks the list against the installed torch, so a new type shows up there, and
``tests/test_device_vocabulary.py`` checks :data:`TENSOR_MOVE_METHODS` and
:data:`IS_DEVICE_ATTRIBUTES` against ``torch.Tensor``.
"""

from __future__ import annotations

__all__ = [
    "ACCELERATOR_TYPES",
    "BACKEND_LIBRARIES",
    "CPU",
    "CUDA",
    "DEVICE_TYPES",
    "HOST_TYPES",
    "IS_DEVICE_ATTRIBUTES",
    "META",
    "MOVE_METHODS",
    "MPS",
    "OTHER_ACCELERATORS",
    "PRIVATEUSE1",
    "PRIVATEUSE1_BACKENDS",
    "TENSOR_MOVE_METHODS",
    "XPU",
]

# The types the runtime treats apart, by name.
CPU = "cpu"  # the host
META = "meta"  # tensors with a shape and no data: nothing to copy, nothing to wait for
CUDA = "cuda"  # NVIDIA's, and ROCm's (which answers to "cuda")
MPS = "mps"  # Apple's: one queue, no streams of its own in torch
XPU = "xpu"  # Intel's
PRIVATEUSE1 = "privateuseone"  # the slot out-of-tree backends rename (npu, mlu, musa, sim)

# Types on which no device work is ever queued: the host, and tensors without data.
HOST_TYPES = frozenset({CPU, META})

# Out-of-tree backends that rename PrivateUse1, and the package that brings each.
# Renaming generates `Tensor.<name>()` and `Tensor.is_<name>` and registers `torch.<name>`.
PRIVATEUSE1_BACKENDS = {"npu": "torch_npu", "mlu": "torch_mlu", "musa": "torch_musa"}

# Accelerators: devices that hold data apart from the host.
ACCELERATOR_TYPES = frozenset(
    {CUDA, "hip", XPU, MPS, "mtia", "maia", "xla", "hpu", "ipu", "ve", "vulkan", PRIVATEUSE1,
     *PRIVATEUSE1_BACKENDS}
)  # fmt: skip
# The rest of torch's table: the host, tensors without data (meta) or traced lazily,
# and backends that are layouts or placeholders (no program moves data "to mkldnn").
_NOT_ACCELERATORS = HOST_TYPES | {"lazy", "mkldnn", "opengl", "opencl", "ideep", "fpga"}
DEVICE_TYPES = ACCELERATOR_TYPES | _NOT_ACCELERATORS
# Accelerators that are not CUDA (ROCm's PyTorch answers to "cuda"; "hip" is its raw name).
OTHER_ACCELERATORS = ACCELERATOR_TYPES - {CUDA, "hip"}

# `torch.Tensor` methods that move a tensor to one device type (`x.cuda()`, `x.mtia()`):
# exactly those torch.Tensor has (tests/test_device_vocabulary.py compares them).
TENSOR_MOVE_METHODS = frozenset({CPU, CUDA, XPU, "ipu", "mtia"})
# With the methods a PrivateUse1 backend's extension generates (`x.npu()` with torch_npu).
MOVE_METHODS = TENSOR_MOVE_METHODS | frozenset(PRIVATEUSE1_BACKENDS)
# Tensor properties that test one device type (`x.is_cuda`, `x.is_xla`); Habana and
# the PrivateUse1 extensions add `is_hpu`, `is_npu`.
IS_DEVICE_ATTRIBUTES = frozenset(f"is_{t}" for t in DEVICE_TYPES - {PRIVATEUSE1})

# The extensions that bring one accelerator to torch (their top-level package names):
# a module that imports one unconditionally runs only where that accelerator is.
BACKEND_LIBRARIES = {
    "intel_extension_for_pytorch": XPU,
    "habana_frameworks": "hpu",
    "torch_xla": "xla",
    **{library: kind for kind, library in PRIVATEUSE1_BACKENDS.items()},
}
