"""TP111 cuda-tensor-type: ``torch.cuda.FloatTensor`` used as a type, not called."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.semantic._guards import Guard, device_guard

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import ClassVar

_TYPES = frozenset(
    f"{kind}Tensor"
    for kind in (
        "Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool",
    )
)  # fmt: skip
_STRINGS = frozenset(f"torch.cuda.{t}" for t in _TYPES)


class CudaTensorType(Rule):
    """## What it does
    Finds the legacy CUDA tensor types used as values rather than called:
    aliases (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`),
    casts (`x.type(torch.cuda.LongTensor)`, `x.type("torch.cuda.FloatTensor")`)
    and type tests (`isinstance(x, torch.cuda.FloatTensor)`). Calls such as
    `torch.cuda.FloatTensor(3)` are TP104's.

    ## Why is this bad?
    These types exist only for CUDA: an alias built from them makes every
    tensor of the program on CUDA or on the CPU, never on MPS or XPU, and a
    type test is False for every other device. Keep the dtype and the device
    apart: `torch.zeros(n, dtype=torch.float32, device=device)`,
    `x.to(device, torch.int64)`, `x.dtype == torch.float32 and x.device == device`.
    """

    code = "TP111"
    name = "cuda-tensor-type"
    intent = Intent.DEVICE
    default = False  # under the 90% bar over samples A-T: check/_default_scope.py
    message = (
        "use a dtype and your `device` (`x.to(device, torch.float32)`, "
        "`torch.zeros(n, dtype=..., device=device)`) instead of a CUDA tensor type"
    )
    node_types = (ast.Attribute, ast.Constant)
    attr_names = _TYPES
    constants: ClassVar[frozenset[object] | None] = frozenset(_STRINGS)
    valid = (
        "import torch\n\nx = torch.cuda.FloatTensor(3)\n",
        "import torch\n\nTensor = torch.FloatTensor\n",
        "import torch\n\nx = x.type(torch.float32)\n",
        'name = "torch.cuda.FloatTensor is legacy"\n',
    )
    invalid = (
        Example(
            "import torch\n\n"
            "cuda = torch.cuda.is_available()\n"
            "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
        ),
        Example(
            "import torch\n\n"
            "y = x.type(torch.cuda.LongTensor)\n"
            'z = x.type("torch.cuda.FloatTensor")\n',
            count=2,
        ),
        Example("import torch\n\nok = isinstance(x, torch.cuda.ByteTensor)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        if isinstance(node, ast.Constant):
            named = _names_a_cuda_type(node)
        else:
            assert isinstance(node, ast.Attribute)
            named = _uses_a_cuda_type(node, ctx)
        # An alias chosen by `torch.cuda.is_available()` is still CUDA-only, so only a
        # branch on the device type (ported code) silences this rule.
        if named and device_guard(node, ctx) is not Guard.DEVICE_TYPE:
            yield ctx.finding(self, node)


def _names_a_cuda_type(node: ast.Constant) -> bool:
    """A string naming a CUDA tensor type (``"torch.cuda.FloatTensor"``)."""
    return isinstance(node.value, str) and node.value in _STRINGS


def _uses_a_cuda_type(node: ast.Attribute, ctx: Context) -> bool:
    """``torch.cuda.FloatTensor`` read as a value, not called and not assigned."""
    if not isinstance(node.ctx, ast.Load):
        return False  # `torch.cuda.FloatTensor = torch.xpu.FloatTensor`: a shim, no use
    if node.attr not in _TYPES or ctx.qualname(node) != f"torch.cuda.{node.attr}":
        return False
    parent = ctx.parent
    # `torch.cuda.FloatTensor(...)`: TP104 reports and fixes the call
    return not (isinstance(parent, ast.Call) and parent.func is node)
