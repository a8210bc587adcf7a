"""TP115 runtime-cuda-device-string: ``f"cuda:{rank}"``, ``"cuda:{}".format(i)``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._test_code import benchmark_code, cuda_is_the_subject
from torchport.check.semantic._guards import device_guard


class RuntimeCudaDeviceString(Rule):
    """## What it does
    Finds CUDA device strings built at run time: `f"cuda:{rank}"`,
    `"cuda:{}".format(i)`, `"cuda:" + str(i)`, `"cuda:%d" % i`, wherever they
    are used (`.to(...)`, `map_location=...`, `device = ...`). Code under a
    device check (`if device.type == "cuda":`) is left alone, and so is benchmark
    code (`_test_code.benchmark_code`, as for TP101: a timing program measures
    one device on purpose, and its loop over `torch.cuda.device_count()` naming
    each GPU is its report, sample N).

    ## Why is this bad?
    The string names CUDA, so the program fails on a machine without an NVIDIA
    GPU and never uses MPS or XPU; that the index is computed does not change
    the device type. Keep the index and take the type from the accelerator
    that is there: `torch.device(torch.accelerator.current_accelerator().type,
    rank)`, or `torch.device(device.type, rank)` from your one `device`.
    """

    code = "TP115"
    name = "runtime-cuda-device-string"
    intent = Intent.DEVICE
    message = (
        "use `torch.device(device.type, index)` with one `device` chosen from `torch.accelerator` "
        "instead of building a CUDA device string"
    )
    default = False  # by decision: check/_default_scope.LEFT_OFF
    node_types = (ast.JoinedStr, ast.BinOp, ast.Call)
    call_attrs = frozenset({"format"})  # `"cuda:{}".format(i)`
    valid = (
        'name = f"cuda_{i}"\n',
        'log = f"device {rank}"\n',
        'if device.type == "cuda":\n    x = x.to(f"cuda:{rank}")\n',
        'msg = "cuda: out of memory at step {}".format(i)\n',
    )
    invalid = (
        Example(
            'import torch\n\nckpt = torch.load(path, map_location=f"cuda:{rank}")\n'
            'x = x.to("cuda:{}".format(rank))\n'
            'y = y.to("cuda:" + str(rank))\n'
            'device = "cuda:%d" % local_rank\n',
            count=4,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Attribute) and node.func.attr == "format"
        ):
            return
        if not _built_cuda_string(node) or device_guard(node, ctx) is not None:
            return
        # Asked only of a device string: benchmark code (a file's memo), a CUDA-gated test's.
        if not benchmark_code(ctx) and not cuda_is_the_subject(node, ctx):
            yield ctx.finding(self, node)


def _built_cuda_string(node: ast.AST) -> bool:
    """``f"cuda:{i}"``, ``"cuda:{}".format(i)``, ``"cuda:" + str(i)``, ``"cuda:%d" % i``.

    The literal part must be a device prefix and nothing more (``"cuda:"``,
    ``"cuda:{}"``, ``"cuda:%d"``), so messages that start with "cuda:" are not
    taken for devices.
    """
    head: ast.expr | None = None
    if isinstance(node, ast.JoinedStr) and len(node.values) == 2:
        head = node.values[0]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        head = node.left
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        head = node.func.value
    value = head.value if isinstance(head, ast.Constant) else None
    return isinstance(value, str) and value in ("cuda:", "cuda:{}", "cuda:%d", "cuda:%s")
