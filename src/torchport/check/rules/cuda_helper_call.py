"""TP119 cuda-helper-call: a call of the project's own function that hard-codes CUDA."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule

_HELPER = (
    "import torch\n\n\n"
    "def to_cuda(data, gpu_id=0):\n"
    "    if isinstance(data, list):\n"
    "        return [d.cuda(gpu_id, non_blocking=True) for d in data]\n"
    "    return data.cuda(gpu_id, non_blocking=True)\n\n\n"
)


class CudaHelperCall(Rule):
    """## What it does
    Finds a call of one of the project's own functions whose body hard-codes CUDA
    (`def to_cuda(data): return data.cuda(0)`, or `.to("cuda")`) and asks nothing
    about the device first: a function of the file itself, one imported from the
    project's own modules (`from utilities.to_torch import to_cuda`), or
    `module.to_cuda(...)` after `import module`. The message names the helper and the
    line of its CUDA call. Left alone: a call under a device check (`if
    torch.cuda.is_available():`), in test code whose subject is CUDA, in benchmark
    code, and a helper that chooses (its body tests a device, a GPU or CUDA flag, or
    asks `is_available()`).

    ## Why is this bad?
    TP101 reports the `.cuda()` in the helper's body, but each caller is where data
    goes to CUDA, and each caller is what a port changes: on a machine without an
    NVIDIA GPU every `data = to_cuda(data)` fails, and an Apple (MPS) or Intel (XPU)
    accelerator is never used. Pass the device chosen once from `torch.accelerator`
    (make the helper take one: `to_device(data, device)`), or guard the call.
    Reported without a fix: the helper's signature is the author's to change.

    ## Why is it off by default?
    New (recall round 5d), and not yet judged on the precision samples: a project
    meant for CUDA machines only is reported at each call. `--extend-select TP119`
    runs it.
    """

    code = "TP119"
    name = "cuda-helper-call"
    intent = Intent.DEVICE
    default = False
    message = (
        "pass the device chosen from `torch.accelerator` to this project helper, which "
        "hard-codes CUDA (make it take one), or guard the call"
    )
    fix_safety = FixSafety.NONE
    node_types = (ast.Call,)
    valid = (
        _HELPER + "if torch.cuda.is_available():\n    batch = to_cuda(batch)\n",
        "import torch\n\n\ndef to_device(data, device):\n    return data.to(device)\n\n\n"
        "batch = to_device(batch, device)\n",
        "import torch\n\n\ndef to_gpu(data, use_cuda):\n"
        "    return data.cuda() if use_cuda else data\n\n\nbatch = to_gpu(batch, flag)\n",
        "import torch\n\n\ndef run(data):\n    def to_cuda(x):\n        return x.cuda()\n\n"
        "    return to_cuda(data)\n",
    )
    invalid = (
        Example(_HELPER + "batch = to_cuda(batch)\ntarget = to_cuda(target, gpu_id=1)\n", count=2),
        Example(
            "import torch\n\n\ndef on_gpu(x):\n"
            '    return x.to("cuda:0")\n\n\nclass Runner:\n'
            "    def step(self, x):\n        return on_gpu(x)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if not isinstance(node.func, (ast.Name, ast.Attribute)):
            return
        from torchport.check.port._cuda_helpers import helper_called  # on first use

        found = helper_called(node, ctx)
        if found is None:
            return
        from torchport.check.rules._cuda_choice import left_alone  # (read, not changed)

        if left_alone(node, ctx):
            return
        name, where, line, takes_device = found
        place = f"{where}:{line}" if where else f"line {line}"
        todo = (
            "pass the device to it and make it use its device parameter"
            if takes_device
            else "pass the device chosen from `torch.accelerator` to it (make it take one), "
            "or guard the call"
        )
        said = f"{todo}: `{name}` hard-codes CUDA at `{place}`"
        yield ctx.finding(self, node, message=said)
