"""TP407 cuda-matmul-precision: ``torch.backends.cuda.matmul.allow_tf32 = True``."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._test_code import collected_by_a_test_runner
from torchport.check.semantic._guards import Guard, device_guard

_SETTING = "torch.backends.cuda.matmul.allow_tf32"
# What each constant setting means in the device-generic API (torch keeps them in step).
_PRECISION = {True: "high", False: "highest"}


class CudaMatmulPrecision(Rule):
    """## What it does
    Finds `torch.backends.cuda.matmul.allow_tf32 = ...`, the CUDA-only switch
    for TF32 matrix multiplication.

    ## Why is this bad?
    It speaks to CUDA alone, so the speed/precision trade it makes is lost on
    every other accelerator. `torch.set_float32_matmul_precision("high")` (or
    `"highest"`) is the same switch for every device: torch keeps the two in
    step (`allow_tf32 = True` sets the precision to `"high"`), and warns when
    code mixes them.

    ## Fix safety
    A constant `True` becomes `torch.set_float32_matmul_precision("high")` and
    `False` becomes `"highest"`. On CUDA nothing changes; on other devices
    (the CPU, MPS, XPU) float32 matrix products may now use their own faster,
    less precise mode, which changes numerics there. A computed value is
    reported without a fix. A file that calls
    `torch.set_float32_matmul_precision(...)` itself already uses the
    generic switch: nothing is reported there, and no fix overwrites its choice.
    Test code (`_test_code.collected_by_a_test_runner`, as for TP109 and TP113)
    is left alone too: a test's TF32 switch (`allow_tf32 = False` against
    Ampere's TF32, a `tearDown` restoring it) decides how the test runs on CUDA,
    not how a program does (samples L and N: low value).
    """

    code = "TP407"
    name = "cuda-matmul-precision"
    intent = Intent.DEVICE
    default = False
    message = (
        'call `torch.set_float32_matmul_precision("high")` (or `"highest"`) instead of setting '
        "`torch.backends.cuda.matmul.allow_tf32`, so every accelerator follows it"
    )
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Assign,)
    valid = (
        'import torch\n\ntorch.set_float32_matmul_precision("high")\n',
        "import torch\n\nprint(torch.backends.cuda.matmul.allow_tf32)\n",
        "import torch\n\ntorch.backends.cudnn.allow_tf32 = True\n",
        'import torch\n\ntorch.set_float32_matmul_precision("medium")\n'
        "torch.backends.cuda.matmul.allow_tf32 = True\n",
    )
    invalid = (
        Example(
            "import torch\n\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
            fixed='import torch\n\ntorch.set_float32_matmul_precision("high")\n',
        ),
        Example(
            "import torch as th\n\nth.backends.cuda.matmul.allow_tf32 = False  # exact\n",
            fixed='import torch as th\n\nth.set_float32_matmul_precision("highest")  # exact\n',
        ),
        Example("import torch\n\ntorch.backends.cuda.matmul.allow_tf32 = args.tf32\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Assign)
        target = node.targets[-1]
        if not (
            isinstance(target, ast.Attribute)
            and target.attr == "allow_tf32"
            and ctx.qualname(target) == _SETTING
        ):
            return
        if collected_by_a_test_runner(ctx):
            return  # a test's stop-gap against TF32: where the test runs, nothing else
        if device_guard(node, ctx) is Guard.DEVICE_TYPE:
            return  # `if device.type == "cuda":` the setting is for CUDA alone, on purpose
        if _sets_precision(ctx):
            return  # the file chooses the precision for every device already: its own choice
        value = node.value
        torch = ctx.torch_at(node)
        flag = value.value if isinstance(value, ast.Constant) else None
        if len(node.targets) != 1 or not isinstance(flag, bool) or torch is None:
            yield ctx.finding(self, node)  # a computed or chained setting: by hand
            return
        if not ctx.owns_lines(node):
            yield ctx.finding(self, node)  # shares its line: no statement of its own to replace
            return
        precision = _PRECISION[flag]
        text = f'{torch[0]}.set_float32_matmul_precision("{precision}")'
        fix = Fix((ctx.replace(node, text), *torch[1]), FixSafety.UNSAFE, _ELSEWHERE)
        yield ctx.finding(self, node, fix=fix)


_ELSEWHERE = (
    "the precision now applies on every device: float32 matrix products on the CPU, MPS "
    "or XPU may use their faster, less precise mode, which changes numerics there"
)


def _sets_precision(ctx: Context) -> bool:
    """Whether the file calls ``torch.set_float32_matmul_precision`` anywhere (once per file)."""
    found = _SETS.get(ctx)
    if found is None:
        found = ctx.mentions("set_float32_matmul_precision") and any(
            isinstance(n, ast.Call) and ctx.qualname(n.func) == _GENERIC for n in ast.walk(ctx.tree)
        )
        _SETS[ctx] = found
    return found


_GENERIC = "torch.set_float32_matmul_precision"
_SETS: weakref.WeakKeyDictionary[Context, bool] = weakref.WeakKeyDictionary()
