"""TP902 cuda-type-compare: ``device.type == "cuda"`` branches (noisy, off by default)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import string_value
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.semantic._residence import known_device_object


class CudaTypeCompare(Rule):
    """## What it does
    Finds comparisons of a device, or its `.type`, with `"cuda"`:
    `device.type == "cuda"`, `str(device) != "cuda"`, `dev == "cuda"`.

    ## Why is this bad?
    When `dev` is a `torch.device`, `dev == "cuda"` is always False (a device
    never equals a string): TP114 reports that, on by default, where the left
    side is certainly a device; this rule reports it where it may be a string.

    Such branches usually guard accelerator-only work (autocast, pinned
    memory, synchronization, `non_blocking`) and skip it on MPS, XPU and other
    accelerators. Test `device.type != "cpu"` when the branch is about any
    accelerator. Many branches really are CUDA-specific (cuDNN flags, CUDA
    graphs), which is why this rule is off by default.
    """

    code = "TP902"
    name = "cuda-type-compare"
    intent = Intent.DEVICE
    message = (
        'test `device.type != "cpu"` if this branch is about any accelerator, not only CUDA; '
        'and compare `.type`: a `torch.device` never equals a string, so `device == "cuda"` '
        "is always False"
    )
    default = False
    node_types = (ast.Compare,)
    valid = ('if device.type != "cpu":\n    pass\n', 'ok = name == "cuda_kernels"\n')
    invalid = (
        Example('if device.type == "cuda":\n    torch.cuda.synchronize()\n'),
        Example('use_amp = str(dev) == "cuda" and args.amp\n'),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Compare)
        other = _compared_with_cuda(node)
        if other is None or known_device_object(other, ctx):
            return  # certainly a torch.device: TP114 (on by default) says it is always False
        if _reads_as_a_device(ctx.segment(other)):
            yield ctx.finding(self, node)


def _compared_with_cuda(node: ast.Compare) -> ast.expr | None:
    """The other side of ``x == "cuda"`` / ``"cuda" != x``; None for any other comparison."""
    if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
        return None
    left, right = node.left, node.comparators[0]
    if string_value(right) != "cuda":
        left, right = right, left
    return left if string_value(right) == "cuda" else None


def _reads_as_a_device(text: str) -> bool:
    """Source that names a device (``dev``, ``device``) or a ``.type``."""
    lowered = text.lower()
    return "dev" in lowered or lowered.endswith(".type")
