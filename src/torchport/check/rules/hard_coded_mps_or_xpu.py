"""TP112 hard-coded-mps-or-xpu: ``torch.device("mps")``, ``.to("xpu")``, ``.xpu()``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._guards import device_guard
from torchport.check._match import keyword, method_name, string_value
from torchport.check._rule import Example, Finding, Intent, Rule

_TYPES = ("mps", "xpu", "hpu", "npu", "mtia")
_DEVICE_ARGS = ("device", "map_location")


def _other_accelerator(expr: ast.expr | None) -> str | None:
    """``"mps"``, ``"xpu:1"`` ... when ``expr`` is such a literal (or an f-string ``"xpu:{i}"``)."""
    value = string_value(expr)
    if value is None and isinstance(expr, ast.JoinedStr) and expr.values:
        value = string_value(expr.values[0])
        value = value if value is not None and value.endswith(":") else None
    if value is not None and value.partition(":")[0] in _TYPES:
        return value.partition(":")[0]
    return None


class HardCodedMpsOrXpu(Rule):
    """## What it does
    Finds code that names one non-CUDA accelerator as the device:
    `torch.device("mps")`, `.to("xpu")`, `.xpu()`, `device="mps"`,
    `map_location="xpu"`, `device = "mps"`. Code under a device check
    (`if torch.backends.mps.is_available():`, `if device.type == "xpu":`) is
    left alone.

    ## Why is this bad?
    It is the same mistake as hard-coding CUDA, made on another machine: the
    program fails everywhere but on an Apple (MPS) or Intel (XPU) device. Define
    the device once from `torch.accelerator` and pass it everywhere.
    """

    code = "TP112"
    name = "hard-coded-mps-or-xpu"
    intent = Intent.DEVICE
    message = "use one `device` chosen from `torch.accelerator` instead of hard-coding MPS or XPU"
    node_types = (ast.Call, ast.Assign)
    valid = (
        "x = x.to(device)\n",
        'import torch\n\nif torch.backends.mps.is_available():\n    x = x.to("mps")\n',
        'if device.type == "xpu":\n    y = x.xpu()\n',
        'name = "mps"\n',
    )
    invalid = (
        Example('import torch\n\ndev = torch.device("mps")\n'),
        Example('x = x.to("xpu")\ny = y.xpu()\nz = torch.zeros(3, device="xpu:0")\n', count=3),
        Example('device = "mps"\n'),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        spot = _spot(node, ctx)
        if spot is not None and device_guard(node, ctx) is None:
            yield ctx.finding(self, spot)


def _spot(node: ast.AST, ctx: Context) -> ast.expr | None:
    if isinstance(node, ast.Assign):
        names = [ctx.segment(t).lower() for t in node.targets]
        if _other_accelerator(node.value) and any("device" in n for n in names):
            return node.value  # `device = "mps"`: a setting
        return None
    assert isinstance(node, ast.Call)
    method = method_name(node)
    if method in ("xpu", "mps", "hpu", "npu") and ctx.qualname(node.func) is None:
        return node
    if method == "to" and node.args and _other_accelerator(node.args[0]):
        return node.args[0]
    for arg in _DEVICE_ARGS:
        kw = keyword(node, arg)
        if kw is not None and _other_accelerator(kw.value):
            return kw.value
    if node.args and _other_accelerator(node.args[0]) and ctx.qualname(node.func) == "torch.device":
        return node
    return None
