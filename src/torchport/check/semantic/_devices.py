"""The device types the checker knows: one vocabulary every rule and every guard shares.

Where the list comes from: PyTorch's parser of device strings, ``parse_type`` in
``c10/core/Device.cpp``, whose table is every type ``torch.device("...")``
accepts. Its error message spells the table out; as of torch 2.13:
"Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve,
fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type".
To that, the names that out-of-tree backends give PrivateUse1
(``torch.utils.rename_privateuse1_backend``) and public code names: ``npu``
(Ascend's ``torch_npu``), ``mlu`` (Cambricon's ``torch_mlu``) and ``musa``
(Moore Threads' ``torch_musa``). ``tests/check/semantic/test_devices.py``
checks the list against the installed torch, so a new type shows up there.

The methods and ``is_*`` properties that name a device type come from
``torch.Tensor`` and ``torch.nn.Module`` (``x.cuda()``, ``x.xpu()``,
``x.mtia()``, ``x.is_xla``), checked by the same test.
"""

from __future__ import annotations

import ast
import re

__all__ = [
    "ACCELERATOR_TYPES",
    "BACKEND_LIBRARIES",
    "DEVICE_TYPES",
    "IS_DEVICE_ATTRIBUTES",
    "MOVE_METHODS",
    "OTHER_ACCELERATORS",
    "cuda_flag",
    "device_type",
    "names_other_accelerator",
]

# Accelerators: devices that hold data apart from the host.
ACCELERATOR_TYPES = frozenset(
    {"cuda", "hip", "xpu", "mps", "mtia", "maia", "xla", "hpu", "ipu", "ve", "vulkan",
     "privateuseone", "npu", "mlu", "musa"}
)  # fmt: skip
# The rest of torch's table: the host, tensors without data (meta) or traced lazily,
# and backends that are layouts or placeholders (no program moves data "to mkldnn").
_NOT_ACCELERATORS = frozenset(
    {"cpu", "meta", "lazy", "mkldnn", "opengl", "opencl", "ideep", "fpga"}
)
DEVICE_TYPES = ACCELERATOR_TYPES | _NOT_ACCELERATORS
# Accelerators that are not CUDA (ROCm's PyTorch answers to "cuda"; "hip" is its raw name).
OTHER_ACCELERATORS = ACCELERATOR_TYPES - {"cuda", "hip"}
# Tensor and module methods that move data to one device type (torch_npu adds `.npu()`).
MOVE_METHODS = frozenset({"cuda", "cpu", "xpu", "ipu", "mtia", "npu"})
# Tensor properties that test one device type (`x.is_cuda`, `x.is_xla`); Habana and
# torch_npu add `is_hpu` and `is_npu`.
IS_DEVICE_ATTRIBUTES = frozenset(f"is_{t}" for t in DEVICE_TYPES - {"privateuseone"})

# The extensions that bring one accelerator to torch (their top-level package names):
# a module that imports one unconditionally runs only where that accelerator is.
BACKEND_LIBRARIES = {
    "intel_extension_for_pytorch": "xpu",
    "torch_npu": "npu",
    "habana_frameworks": "hpu",
    "torch_mlu": "mlu",
    "torch_musa": "musa",
    "torch_xla": "xla",
}

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def device_type(text: str) -> str | None:
    """The device type a device string names (``"cuda:1"`` -> ``"cuda"``), else None.

    Only strings ``torch.device`` would take as they are: a known type, then
    nothing or ``:`` and an index.
    """
    kind, colon, index = text.partition(":")
    if kind not in DEVICE_TYPES or (colon and not index.isdigit()):
        return None
    return kind


def names_other_accelerator(identifier: str) -> bool:
    """Whether a name speaks of an accelerator other than CUDA, or of any accelerator.

    ``torch.backends.mps``, ``is_xpu``, ``hasMPS``, ``torch_npu``,
    ``torch.accelerator``: the words of the name (split at ``_``, ``.``,
    digits and case changes) include such a type or ``accelerator``. Words,
    not substrings: ``input`` holds "npu" and ``manipulate`` "ipu".
    """
    words = (w.lower() for w in _WORD.findall(identifier))
    return any(w in OTHER_ACCELERATORS or w == "accelerator" for w in words)


# A flag that says "use CUDA" (`use_cuda`, `args.cuda`, `cfg["gpu"]`, `self.on_gpu`).
_CUDA_FLAG = re.compile(r"^(use_|with_|enable_|on_|is_gpu|has_)?(cuda|gpu|gpus)$", re.IGNORECASE)


def cuda_flag(expr: ast.AST) -> bool:
    """Whether ``expr`` reads a flag named for CUDA or the GPU.

    ``use_cuda``, ``args.cuda``, ``self.use_gpu``, ``cfg["cuda"]``: a program's
    own switch between CUDA and the CPU, which knows no other accelerator.
    ``x.is_cuda`` is a tensor's device type, not a flag.
    """
    if isinstance(expr, ast.Name):
        name = expr.id
    elif isinstance(expr, ast.Attribute):
        name = expr.attr
    elif isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        name = str(expr.slice.value)
    else:
        return False
    return bool(_CUDA_FLAG.match(name))
