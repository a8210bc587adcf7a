"""The checker's reading of device types: the words of a name, device strings, CUDA flags.

The types themselves (which are accelerators, which methods and ``is_*``
properties name one, which extension brings which) are the package's one
vocabulary, :mod:`torchport._device_types`, re-exported here for the rules.
"""

from __future__ import annotations

import ast
import re

from torchport._device_types import (
    ACCELERATOR_TYPES,
    BACKEND_LIBRARIES,
    DEVICE_TYPES,
    IS_DEVICE_ATTRIBUTES,
    MOVE_METHODS,
    OTHER_ACCELERATORS,
)

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
