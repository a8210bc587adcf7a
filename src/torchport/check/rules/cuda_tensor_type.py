"""TP111 cuda-tensor-type: ``torch.cuda.FloatTensor`` used as a type, not called.

Also ``x.type(y.type())``: ``y.type()`` is the legacy type name of ``y``, backend and all
(``"torch.cuda.FloatTensor"`` on CUDA, ``"torch.mps.FloatTensor"`` on MPS, which ``.type()``
refuses: ``ValueError: invalid type``; DenseMotionNetwork of ComfyUI-AdvancedLivePortrait,
held-out recall round 5h, fixed with ``.type(heatmap.dtype)``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import dotted_parts
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._torch_code import binds_torch
from torchport.check.semantic._guards import Guard, device_guard
from torchport.check.semantic._receivers import may_rewrite

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
    `torch.cuda.FloatTensor(3)` are TP104's. Also a cast to another tensor's legacy
    type name, `x.type(y.type())`, in torch code, when neither `.type` is a method
    of the program's own (a class of the file, or a project class it imports,
    that defines `type`).

    ## Why is this bad?
    These types exist only for CUDA: an alias built from them makes every
    tensor of the program on CUDA or on the CPU, never on MPS or XPU, and a
    type test is False for every other device. Keep the dtype and the device
    apart: `torch.zeros(n, dtype=torch.float32, device=device)`,
    `x.to(device, torch.int64)`, `x.dtype == torch.float32 and x.device == device`.
    `y.type()` names `y`'s device type as well as its dtype (`"torch.cuda.FloatTensor"`),
    and `.type()` refuses MPS's name (`"torch.mps.FloatTensor"`: `invalid type`), so
    `x.type(y.type())` fails on a Mac; `x.to(y.device, y.dtype)` works everywhere.

    The fix is offered for `x.type(y.type()).to(y.device)` only (`y` a name or an
    attribute): it writes `x.type(y.dtype).to(y.device)`, the same dtype on the same
    device. Elsewhere `x.type(y.type())` is only reported: it keeps `x`'s CUDA
    index where `x` is on CUDA already, and uses the current CUDA device where it is
    not, which `x.to(y.device, y.dtype)` does not.
    """

    code = "TP111"
    name = "cuda-tensor-type"
    intent = Intent.DEVICE
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    message = (
        "use a dtype and your `device` (`x.to(device, torch.float32)`, "
        "`torch.zeros(n, dtype=..., device=device)`) instead of a CUDA tensor type"
    )
    fix_safety = FixSafety.SAFE
    node_types = (ast.Attribute, ast.Constant, ast.Call)
    call_attrs = frozenset({"type"})
    attr_names = _TYPES
    constants: ClassVar[frozenset[object] | None] = frozenset(_STRINGS)
    valid = (
        "import torch\n\nx = torch.cuda.FloatTensor(3)\n",
        "import torch\n\nTensor = torch.FloatTensor\n",
        "import torch\n\nx = x.type(torch.float32)\n",
        'name = "torch.cuda.FloatTensor is legacy"\n',
        "import torch\n\nx = x.type(y.dtype).to(y.device)\n",
        "import torch\n\n\nclass Node:\n    def type(self, kind=None):\n        return kind\n\n\n"
        "k = Node().type(other.type())\n",
        "x = a.type(b.type())\n",  # no torch in the module
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
        Example(
            "import torch\n\nz = torch.zeros(2, 1).type(h.type()).to(h.device)\n",
            fixed="import torch\n\nz = torch.zeros(2, 1).type(h.dtype).to(h.device)\n",
        ),
        Example("import torch\n\nw = torch.ones(3).type(h.type())\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        if isinstance(node, ast.Call):
            cast = _cast_to_a_type_name(node, ctx)
            if cast is not None:
                yield ctx.finding(self, cast[0], message=cast[1], fix=cast[2])
            return
        if isinstance(node, ast.Constant):
            named = _names_a_cuda_type(node)
        else:
            assert isinstance(node, ast.Attribute)
            named = _uses_a_cuda_type(node, ctx)
        # An alias chosen by `torch.cuda.is_available()` is still CUDA-only, so only a
        # branch on the device type (ported code) silences this rule.
        if named and device_guard(node, ctx) is not Guard.DEVICE_TYPE:
            yield ctx.finding(self, node)


def _cast_to_a_type_name(node: ast.Call, ctx: Context) -> tuple[ast.expr, str, Fix | None] | None:
    """``x.type(y.type())``: where to report, what to say, and the fix where ``.to(y.device)``
    follows (the class docstring); None for any other call of ``.type``."""
    arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
    if not (
        isinstance(arg, ast.Call)
        and isinstance(arg.func, ast.Attribute)
        and arg.func.attr == "type"
        and not (arg.args or arg.keywords)
        and binds_torch(ctx)
        and may_rewrite(node, ctx)
        and may_rewrite(arg, ctx)
        and device_guard(node, ctx) is not Guard.DEVICE_TYPE
    ):
        return None
    other = arg.func.value
    text = ctx.segment(other)
    said = (
        f"use `.to({text}.device, {text}.dtype)` instead of `.type({text}.type())`: the "
        "type name carries the device type too, and `.type()` refuses MPS's"
    )
    fix = None
    if _moved_to_its_device(node, other, ctx):
        fix = Fix((ctx.replace(arg, f"{text}.dtype"),), FixSafety.SAFE)
    return arg, said, fix


def _moved_to_its_device(node: ast.Call, other: ast.expr, ctx: Context) -> bool:
    """``node`` is ``x.type(y.type())`` in ``x.type(y.type()).to(y.device)``, ``y`` a name
    or an attribute chain (read twice without a call in between: the same tensor)."""
    parent = ctx.parent
    if not (isinstance(parent, ast.Attribute) and parent.attr == "to" and parent.value is node):
        return False
    ancestors = ctx.ancestors
    outer = ancestors[-2] if len(ancestors) > 1 else None
    if not (isinstance(outer, ast.Call) and outer.func is parent and not outer.keywords):
        return False
    target = outer.args[0] if len(outer.args) == 1 else None
    if not (isinstance(target, ast.Attribute) and target.attr == "device"):
        return False
    chain = dotted_parts(other)
    return chain is not None and chain == dotted_parts(target.value)


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
