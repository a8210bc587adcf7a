"""TP102 cuda-set-device: ``torch.cuda.set_device(...)``."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called, guard_statement
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._test_code import benchmark_code, cuda_is_the_subject
from torchport.check.semantic._guards import device_guard
from torchport.check.semantic._residence import known_device_object

_TAILS = frozenset({"set_device"})
_INDEX_NAME = re.compile(r"(id|idx|index|rank|num|no)$", re.IGNORECASE)


class CudaSetDevice(Rule):
    """## What it does
    Finds calls to `torch.cuda.set_device`, outside branches that already test
    the device (`if device.type == "cuda":`, `if torch.cuda.is_available():`)
    test code whose subject is CUDA (`rules/_test_code.py`: a test that
    asserts CUDA is there and sets the wrong index on purpose) and benchmark code.

    ## Why is this bad?
    It raises on every machine without CUDA, so a script that picks its GPU
    this way cannot run on the CPU, MPS or XPU. `torch.accelerator.set_device_index`
    does the same for whatever accelerator is present.

    ## Fix safety
    The fix calls `torch.accelerator.set_device_index` (torch >= 2.7) when an
    accelerator is available and does nothing otherwise, where the original
    raised; code that relied on that error behaves differently. It takes an
    index: `torch.device("cuda:1")` and `"cuda:1"` become `1`; a device value
    whose index is not written (`torch.device("cuda")`, `x.device`, a name
    bound to a device) gets no fix, since `set_device_index` raises on a
    device without an index on every accelerator.
    """

    code = "TP102"
    name = "cuda-set-device"
    intent = Intent.DEVICE
    default = False
    message = (
        "call `torch.accelerator.set_device_index(...)` when `torch.accelerator.is_available()` "
        "instead of `torch.cuda.set_device(...)`"
    )
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = _TAILS
    valid = (
        "import torch\n"
        "\n"
        "if torch.accelerator.is_available():\n"
        "    torch.accelerator.set_device_index(local_rank)\n",
        'import torch\n\nif device.type == "cuda":\n    torch.cuda.set_device(device)\n',
    )
    invalid = (
        Example(
            "import torch\n\ndef setup(local_rank):\n    torch.cuda.set_device(local_rank)\n",
            fixed="import torch\n"
            "\n"
            "def setup(local_rank):\n"
            "    if torch.accelerator.is_available():\n"
            "        torch.accelerator.set_device_index(local_rank)\n",
        ),
        Example("import torch\n\nok = torch.cuda.set_device(0) or True\n"),
        Example(
            'import torch\n\ntorch.cuda.set_device(torch.device("cuda:1"))\n',
            fixed="import torch\n"
            "\n"
            "if torch.accelerator.is_available():\n"
            "    torch.accelerator.set_device_index(1)\n",
        ),
        Example('import torch\n\ntorch.cuda.set_device(torch.device("cuda"))\n'),
        Example("import torch\n\ndef f(x):\n    torch.cuda.set_device(x.device)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _TAILS) != "torch.cuda.set_device":
            return
        if device_guard(node, ctx) is not None:
            return  # `if device.type == "cuda":` (ported) or a CUDA-or-CPU branch (TP109)
        if cuda_is_the_subject(node, ctx) or benchmark_code(ctx):
            return  # a test of CUDA's device index itself, a benchmark (`_test_code.py`)
        index = _index_argument(node, ctx)
        if index is None:
            yield ctx.finding(self, node)  # a device, not an index: which one is by hand
            return
        args = index
        torch = ctx.torch_at(node)
        t = torch[0] if torch is not None else ctx.torch_name()
        edit = guard_statement(node, f"{t}.accelerator.set_device_index({args})", ctx, t)
        fix = None
        if edit is not None and torch is not None:
            fix = Fix((edit, *torch[1]), FixSafety.UNSAFE)
        yield ctx.finding(self, node, fix=fix)


def _index_argument(call: ast.Call, ctx: Context) -> str | None:
    """The device index ``call`` sets, as source text, or None when it is a device without one.

    An integer (``0``, ``local_rank``, ``args.gpu``) stays as written; a
    device string or ``torch.device`` with a written index gives that index.
    """
    if len(call.args) + len(call.keywords) != 1 or (call.keywords and call.keywords[0].arg is None):
        return None
    arg = call.args[0] if call.args else call.keywords[0].value
    if isinstance(arg, ast.Constant):
        if isinstance(arg.value, int) and not isinstance(arg.value, bool):
            return str(arg.value)
        if isinstance(arg.value, str):
            kind, _, index = arg.value.partition(":")
            return index if kind == "cuda" and index.isdigit() else None
        return None
    if isinstance(arg, ast.Call) and ctx.qualname(arg.func) == "torch.device":
        if len(arg.args) == 2 and not arg.keywords:
            first, index_arg = arg.args
            if isinstance(first, ast.Constant) and first.value == "cuda":
                return ctx.segment(index_arg)
            return None
        text = arg.args[0] if len(arg.args) == 1 and not arg.keywords else None
        if isinstance(text, ast.Constant) and isinstance(text.value, str):
            kind, _, index = text.value.partition(":")
            return index if kind == "cuda" and index.isdigit() else None
        return None
    if known_device_object(arg, ctx) or isinstance(arg, (ast.JoinedStr, ast.IfExp)):
        return None
    if isinstance(arg, ast.Attribute) and arg.attr == "device":
        return None  # `x.device`, `self.device`: a device (or a string), not an index
    if isinstance(arg, ast.Name) and "dev" in arg.id.lower() and not _INDEX_NAME.search(arg.id):
        return None  # `device`: most often a device or a string, not an index
    return ctx.segment(arg)
