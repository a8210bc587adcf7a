"""The calls and attributes ``torchport port`` recognises: tensor factories, moves, host reads.

Syntax only, on the standard library's ``ast``: nothing here imports torch.
"""

from __future__ import annotations

import ast
import re

from torchport.check.port._models import QualName

__all__ = [
    "CREATORS",
    "HOST_READS",
    "META_ATTRS",
    "TYPED",
    "cpu_only_device",
    "device_target",
    "is_move",
]

# Calls that make a new tensor on the CPU unless told otherwise.
CREATORS = frozenset(
    f"torch.{n}"
    for n in ("tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange",
              "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm", "normal",
              "bernoulli", "tril_indices", "triu_indices")
)  # fmt: skip
# The legacy typed constructors (`torch.LongTensor([1, 2])`, `torch.Tensor(2, 3)`): always
# on the CPU, with no `device=` of their own; moved after creation (and after the in-place
# initializers chained to them, so `torch.Tensor(2, 3).uniform_()` draws on the CPU).
TYPED = frozenset(
    f"torch.{n}Tensor"
    for n in ("", "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte",
              "Bool")
)  # fmt: skip
# Methods whose result lives on the host or describes a tensor without its data.
HOST_READS = frozenset(
    {"item", "tolist", "numpy", "cpu", "size", "dim", "numel", "nelement", "stride",
     "data_ptr", "is_contiguous", "element_size", "__len__", "get_device"}
)  # fmt: skip
META_ATTRS = frozenset({"shape", "device", "dtype", "ndim", "is_cuda", "requires_grad", "T_"})
_DEVICE_TEXT = re.compile(r"dev|cuda|gpu|accelerator", re.IGNORECASE)


def device_target(expr: ast.expr) -> bool:
    """Whether a ``.to()`` argument names a device that may be an accelerator (not the CPU)."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str) and expr.value != "cpu"
    if isinstance(expr, ast.Call):
        return any(device_target(a) for a in expr.args) or any(
            device_target(k.value) for k in expr.keywords
        )
    text = ast.unparse(expr) if isinstance(expr, (ast.Attribute, ast.Name)) else ""
    return bool(_DEVICE_TEXT.search(text))


def is_move(call: ast.AST) -> bool:
    """Whether ``call`` is ``x.to(<device>)``/``x.cuda()``: a move to the accelerator."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return False
    if call.func.attr == "cuda":
        return True
    if call.func.attr != "to":
        return False
    target = (
        call.args[0]
        if call.args
        else next((k.value for k in call.keywords if k.arg == "device"), None)
    )
    return target is not None and device_target(target)


def cpu_only_device(node: ast.AST, qualname: QualName) -> bool:
    """Whether ``node`` is ``<name with device> = torch.device("cpu")`` (TP507 rebinds it)."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return False
    target, value = node.targets[0], node.value
    return (
        isinstance(target, ast.Name)
        and "device" in target.id.lower()
        and isinstance(value, ast.Call)
        and qualname(value.func) == "torch.device"
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], ast.Constant)
        and value.args[0].value == "cpu"
    )
